package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// BenchmarkTaskWrites is the store's share of one task on SQLite, written
// the way the master does under load (batches of 16 in a fenced term):
// insert, mark dispatched, ack, then running and result in one batch.
func BenchmarkTaskWrites(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "b.db"), zap.NewNop())
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
	const batch = 16
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
	}
}
