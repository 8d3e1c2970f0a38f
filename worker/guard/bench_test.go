package guard

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkAddRemove is the guard's cost per task: one Add and one Remove
// on the worker's side (stores into the shared table), reported as ns/op,
// and the guard process's CPU time meanwhile (none: it sleeps until the
// worker goes), as guard-ns/op.
func BenchmarkAddRemove(b *testing.B) {
	g := New(64, nil)
	if err := g.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer g.Stop()
	g.mu.Lock()
	pid := g.proc.Pid
	g.mu.Unlock()
	before := cpuTicks(b, pid)
	const pgid = math.MaxInt32 // above any pid: nothing to hit even if left registered
	for b.Loop() {
		g.Add(pgid)
		g.Remove(pgid)
	}
	after := cpuTicks(b, pid)
	// Clock ticks are 10 ms: meaningful over many iterations only.
	b.ReportMetric(float64(after-before)*1e7/float64(b.N), "guard-ns/op")
}

// cpuTicks is utime+stime of pid in clock ticks (1/100 s).
func cpuTicks(b *testing.B, pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}
