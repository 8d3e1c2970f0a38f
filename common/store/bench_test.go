package store_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// BenchmarkTaskWrites is the store's share of one task on SQLite, written
// the way the master does (in a fenced term, batches of 1 to 64: a
// fan-out on a few worker slots writes small batches): insert, mark
// dispatched, ack, then running and result in one batch, and the event
// publisher's batch every 32 tasks or more (about its 20 ms poll under
// load).
func BenchmarkTaskWrites(b *testing.B) {
	for _, batch := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			benchTaskWrites(b, batch, testDialectNamed(b, "sqlite"))
		})
	}
}

// BenchmarkTaskWritesMySQL is BenchmarkTaskWrites on MariaDB; server-cpu-ns
// is the CPU of the private mariadbd the tests start (0 with
// BELUGA_TEST_MYSQL_DSN: a server of someone else's).
func BenchmarkTaskWritesMySQL(b *testing.B) {
	for _, batch := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchTaskWrites(b, batch, testDialectNamed(b, "mysql")) })
	}
}

// BenchmarkTaskWritesPostgres is BenchmarkTaskWrites on PostgreSQL;
// server-cpu-ns is the CPU of the private postgres the tests start (none,
// so not reported, when one already runs at 127.0.0.1:5432).
func BenchmarkTaskWritesPostgres(b *testing.B) {
	for _, batch := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchTaskWrites(b, batch, testDialectNamed(b, "postgres")) })
	}
}

func benchTaskWrites(b *testing.B, batch int, d testDialect) {
	ctx := context.Background()
	s := benchStore(b, d)
	s.WorkflowPut(ctx, "demo", mustSpec(b, diamond))
	inst, _ := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
	if err := s.TermBegin(ctx, 1, "m"); err != nil {
		b.Fatal(err)
	}
	t := s.Term(1)
	cur, err := t.EventCursorNew(ctx)
	if err != nil {
		b.Fatal(err)
	}
	unpublished := 0
	pid := 0
	if d.serverPid != nil {
		pid = d.serverPid()
	}
	cpu0, srv0 := cpuTime(), serverCPU(pid)
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		tasks := make([]*model.TaskInstance, batch)
		for i := range tasks {
			tasks[i] = &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		}
		if err := t.TaskInsert(ctx, tasks); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		ds := make([]model.Dispatch, batch)
		acks := make([]model.Report, batch)
		ends := make([]model.Report, 0, 2*batch)
		for i, tk := range tasks {
			ds[i] = model.Dispatch{ID: tk.ID, Host: "w", Time: now}
			acks[i] = model.Report{ID: tk.ID, Kind: model.ReportAck, Host: "w", LogPath: "/l"}
			ends = append(ends, model.Report{ID: tk.ID, Kind: model.ReportRunning, Host: "w", PID: 1, StartTime: now},
				model.Report{ID: tk.ID, Kind: model.ReportResult, Host: "w", State: model.TaskSucceeded, StartTime: now, EndTime: now})
		}
		if _, err := t.TaskMarkDispatched(ctx, ds); err != nil {
			b.Fatal(err)
		}
		if _, err := t.TaskApplyReports(ctx, acks); err != nil {
			b.Fatal(err)
		}
		if _, err := t.TaskApplyReports(ctx, ends); err != nil {
			b.Fatal(err)
		}
		if unpublished += batch; unpublished >= 32 {
			if _, err := t.EventPublishFrom(ctx, &cur, 1000); err != nil {
				b.Fatal(err)
			}
			unpublished = 0
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	if pid != 0 {
		b.ReportMetric(float64(serverCPU(pid)-srv0)/float64(b.N), "server-cpu-ns/op")
	}
}

// serverCPU is the CPU time of the process pid (a private server of the
// tests).
func serverCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// cpuTime is the process's user+system CPU: the figure that load on the
// machine does not inflate as much as wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchStore is a migrated store on d with project demo, closed with b.
func benchStore(b *testing.B, d testDialect) *store.Store {
	ctx := context.Background()
	s, err := store.Open(ctx, d.url(b), zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	s.ProjectCreate(ctx, "demo", "")
	return s
}
