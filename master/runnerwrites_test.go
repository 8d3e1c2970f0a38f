package master

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Writes queued together go in one transaction; when it fails, each is
// written alone, so only the bad one's runner hears of it.
func TestRunnerWritesShareAndIsolate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := oneTaskStore(t, zap.NewNop())
	var runs []int64
	for range 3 {
		in, err := st.InstanceCreateRun(ctx, store.RunRequest{Project: "p", Workflow: "w"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, in.ID)
	}
	now := time.Now().UTC()
	task := func(run int64) *model.TaskInstance {
		return &model.TaskInstance{WorkflowInstanceID: run, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now}
	}
	taken := task(runs[0])
	if err := st.TaskInsertAttempts(ctx, nil, []*model.TaskInstance{taken}); err != nil {
		t.Fatal(err)
	}
	bad := task(runs[1])
	bad.ID = taken.ID // a row that exists: the insert fails
	good := task(runs[2])
	w := newRunnerWrites(st, zap.NewNop())
	reqs := []*runnerWrite{{attempt: &store.AttemptWrite{Next: []*model.TaskInstance{good}}},
		{attempt: &store.AttemptWrite{Next: []*model.TaskInstance{bad}}},
		{end: &store.InstanceEnd{ID: runs[0], State: model.WorkflowSucceeded, End: now}}}
	for _, q := range reqs {
		q.done = make(chan error, 1)
		w.reqs.Put(q) // queued before the writer looks: one batch
	}
	go w.run(ctx)
	errs := make([]error, len(reqs))
	for i, q := range reqs {
		errs[i] = <-q.done
	}
	if errs[0] != nil || errs[1] == nil || errs[2] != nil {
		t.Fatalf("results %v, want only the second to fail", errs)
	}
	if good.ID == 0 {
		t.Fatal("the good attempt has no id")
	}
	if got, err := st.TaskGet(ctx, good.ID); err != nil || got.WorkflowInstanceID != runs[2] {
		t.Fatalf("good attempt: %+v %v", got, err)
	}
	if in, err := st.InstanceGet(ctx, runs[0]); err != nil || in.State != model.WorkflowSucceeded {
		t.Fatalf("ended run: %+v %v", in, err)
	}
	cancel()
	<-w.exited
	if err := w.finish(context.Background(), store.InstanceEnd{ID: runs[1], State: model.WorkflowFailed, End: now}); err == nil {
		t.Fatal("a write after the writers stopped succeeded")
	}
}
