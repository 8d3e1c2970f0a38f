package executor

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/testkit/cgrouptest"
	"github.com/beluga-scheduler/beluga/worker/cgroup"
)

// resultSender DB-acks everything and signals each result.
type resultSender struct {
	e       *Executor
	results chan int64
}

func (s *resultSender) Send(_ context.Context, _ string, m message.Message) error {
	var a message.DBAck
	switch m := m.(type) {
	case message.Ack:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindAck}
	case message.Running:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindRunning}
	case message.Result:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindResult}
		defer func() { s.results <- m.TaskInstanceID }()
	}
	go s.e.DBAck(a)
	return nil
}

// BenchmarkTask runs `true` tasks one after another through the executor
// alone (no transport), with and without the spare pool, on the test's temp
// dir and on tmpfs.
func BenchmarkTask(b *testing.B) {
	dirs := map[string]string{"disk": ""}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dirs["tmpfs"] = "/dev/shm"
	}
	for name, parent := range dirs {
		for _, pool := range []bool{true, false} {
			b.Run(name+map[bool]string{true: "/spares", false: "/nospares"}[pool], func(b *testing.B) {
				dir := b.TempDir()
				if parent != "" {
					d, err := os.MkdirTemp(parent, "beluga-bench-")
					if err != nil {
						b.Fatal(err)
					}
					defer os.RemoveAll(d)
					dir = d
				}
				s := &resultSender{results: make(chan int64, 1)}
				e, err := New(Config{Host: "w", DataDir: dir, ResendInterval: time.Second}, s, nil)
				if err != nil {
					b.Fatal(err)
				}
				if !pool {
					e.spares = newSpares(filepath.Join(dir, ".spare"), 0, 0, e.log)
				}
				runTrueTasks(b, e, s)
			})
		}
	}
}

// BenchmarkTaskCgroup is BenchmarkTask's tmpfs/spares case with and without
// a cgroup per task (cgroup2 mounted for the run: root only).
func BenchmarkTaskCgroup(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{true: "cgroup", false: "subreaper"}[on], func(b *testing.B) {
			dir := b.TempDir()
			if d, err := os.MkdirTemp("/dev/shm", "beluga-bench-"); err == nil {
				defer os.RemoveAll(d)
				dir = d
			}
			cfg := Config{Host: "w", DataDir: dir, ResendInterval: time.Second}
			if on {
				d, err := cgroup.Open(cgrouptest.Dir(b))
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				cfg.Cgroups = d
			}
			s := &resultSender{results: make(chan int64, 1)}
			e, err := New(cfg, s, nil)
			if err != nil {
				b.Fatal(err)
			}
			runTrueTasks(b, e, s)
		})
	}
}

// runTrueTasks starts e and runs `true` tasks one after another, each
// waiting for its result, for the benchmark's loop.
func runTrueTasks(b *testing.B, e *Executor, s *resultSender) {
	b.Helper()
	s.e = e
	if !e.started.Load() {
		if err := e.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	defer e.Stop()
	var id int64
	cpu0 := selfCPU()
	for b.Loop() {
		id++
		if r := e.Dispatch(message.Dispatch{TaskInstanceID: id, WorkflowInstanceID: 1, Command: "true", MasterAddr: "m"}); !r.Accepted {
			b.Fatal(r.Reason)
		}
		<-s.results
	}
	// This process's CPU (user+sys, the tasks' own not included): steadier
	// than the wall time on a loaded machine.
	b.ReportMetric(float64(selfCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTaskIsolation is BenchmarkTask's tmpfs/spares case with task
// isolation off (the worker's user), with the task user alone, and with the
// task user and the sandbox (root only).
func BenchmarkTaskIsolation(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("isolation needs root")
	}
	for _, mode := range []string{"off", "user", "sandbox"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			if d, err := os.MkdirTemp("/dev/shm", "beluga-bench-"); err == nil {
				defer os.RemoveAll(d)
				dir = d
			}
			cfg := Config{Host: "w", DataDir: dir, ResendInterval: time.Second, TaskIsolation: "on"}
			if mode == "off" {
				cfg.TaskIsolation = "off"
			}
			s := &resultSender{results: make(chan int64, 1), e: nil}
			e, err := New(cfg, s, nil)
			if err != nil {
				b.Fatal(err)
			}
			s.e = e
			if err := e.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			if mode == "user" {
				e.sandbox = nil // before the first dispatch, which the owner goroutine receives
			}
			runTrueTasks(b, e, s)
		})
	}
}
