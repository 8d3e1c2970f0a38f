package store_test

import (
	"context"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestViewsReadBesideAWrite: on SQLite, a view's reads do not queue behind
// a write. Another process holds the file's write lock, so a write of the
// store waits on it holding the store's one writing connection; meanwhile
// the instance and its task page still answer, and once the write commits a
// new read sees it.
func TestViewsReadBesideAWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := store.Open(ctx, "sqlite://"+path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	inst := newInstance(t, s, model.WorkflowRunning)

	other, err := store.Open(ctx, "sqlite://"+path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	release, err := store.HoldWriteLock(other)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- s.InstanceSetReason(ctx, inst.ID, "written late") }()
	if err := wait.Poll(5*time.Second, "the store's write to take its connection", func() bool { return store.WritersInUse(s) == 1 }); err != nil {
		release()
		t.Fatal(err)
	}

	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	got, gerr := s.InstanceGet(rctx, inst.ID)
	page, perr := s.InstanceTasks(rctx, inst.ID, 10, 0)
	list, _, lerr := s.InstanceList(rctx, store.InstanceFilter{Project: "demo"})
	cancel()
	release()
	if gerr != nil || perr != nil || lerr != nil {
		t.Fatalf("views while a write waits: instance %v, tasks %v, list %v", gerr, perr, lerr)
	}
	if got.ID != inst.ID || got.Reason == "written late" || page.Counts == nil && page.Total != 0 || len(list) != 1 {
		t.Fatalf("views while a write waits: %+v, %d tasks, %d instances", got, page.Total, len(list))
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if got, err := s.InstanceGet(ctx, inst.ID); err != nil || got.Reason != "written late" {
		t.Fatalf("a read after the commit: %+v %v", got, err)
	}
}
