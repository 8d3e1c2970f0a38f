package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
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
			benchTaskWrites(b, batch, "sqlite://"+filepath.Join(b.TempDir(), "b.db"))
		})
	}
}

// BenchmarkTaskWritesMySQL is BenchmarkTaskWrites on MariaDB; server-cpu-ns
// is the CPU of the private mariadbd the tests start (0 with
// BELUGA_TEST_MYSQL_DSN: a server of someone else's).
func BenchmarkTaskWritesMySQL(b *testing.B) {
	for _, batch := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchTaskWrites(b, batch, mariadbtest.URL(b)) })
	}
}

func benchTaskWrites(b *testing.B, batch int, url string) {
	ctx := context.Background()
	s, err := store.Open(ctx, url, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	s.CreateProject(ctx, "demo", "")
	s.PutWorkflow(ctx, "demo", mustSpec(b, diamond))
	inst, _ := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
	if err := s.BeginTerm(ctx, 1, "m"); err != nil {
		b.Fatal(err)
	}
	t := s.Term(1)
	cur, err := t.NewEventCursor(ctx)
	if err != nil {
		b.Fatal(err)
	}
	unpublished := 0
	cpu0, srv0 := cpuTime(), serverCPU()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		tasks := make([]*model.TaskInstance, batch)
		for i := range tasks {
			tasks[i] = &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		}
		if err := t.InsertTaskInstances(ctx, tasks); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		ds := make([]store.Dispatch, batch)
		acks := make([]store.Report, batch)
		ends := make([]store.Report, 0, 2*batch)
		for i, tk := range tasks {
			ds[i] = store.Dispatch{ID: tk.ID, Host: "w", Time: now}
			acks[i] = store.Report{ID: tk.ID, Kind: store.ReportAck, Host: "w", LogPath: "/l"}
			ends = append(ends, store.Report{ID: tk.ID, Kind: store.ReportRunning, Host: "w", PID: 1, StartTime: now},
				store.Report{ID: tk.ID, Kind: store.ReportResult, Host: "w", State: model.TaskSucceeded, StartTime: now, EndTime: now})
		}
		if _, err := t.MarkDispatched(ctx, ds); err != nil {
			b.Fatal(err)
		}
		if _, err := t.ApplyReports(ctx, acks); err != nil {
			b.Fatal(err)
		}
		if _, err := t.ApplyReports(ctx, ends); err != nil {
			b.Fatal(err)
		}
		if unpublished += batch; unpublished >= 32 {
			if _, err := t.PublishEventsFrom(ctx, &cur, 1000); err != nil {
				b.Fatal(err)
			}
			unpublished = 0
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	if s.Dialect() == "mysql" {
		b.ReportMetric(float64(serverCPU()-srv0)/float64(b.N), "server-cpu-ns/op")
	}
}

// serverCPU is the CPU time of the tests' private mariadbd, if it runs.
func serverCPU() time.Duration {
	pid := mariadbtest.SharedPid()
	if pid == 0 {
		return 0
	}
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
