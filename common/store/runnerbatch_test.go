package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Several runs' attempts and ends written in one WriteRunnerBatch land as
// each TaskInsertAttempts and InstanceFinish would: ids set, the
// superseded attempt marked, the ends recorded with their events; and
// InstanceClaimCommands claims a burst of runs in one go.
func TestWriteRunnerBatch(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		runs := diamondRuns(t, s, 3)
		term := s.Term(1)
		if err := s.TermBegin(ctx, 1, "m1"); err != nil {
			t.Fatal(err)
		}
		cctx, counts := store.CountReads(ctx)
		claimed, err := term.InstanceClaimCommands(cctx, "m1", 1, 10)
		if err != nil || len(claimed) != 3 {
			t.Fatalf("claim: %d runs, %v", len(claimed), err)
		}
		if n := counts.Transactions.Load(); n != 1 {
			t.Fatalf("claiming 3 commands took %d transactions, want 1", n)
		}
		// Nothing queued: the release opens no write transaction.
		if rel, err := term.InstanceReleaseQueued(cctx, "m1", 1000); err != nil || len(rel) != 0 || counts.Transactions.Load() != 1 {
			t.Fatalf("release with nothing queued: %v %v, %d transactions in all", rel, err, counts.Transactions.Load())
		}
		for i, c := range claimed {
			if c.ID != runs[i] || c.State != model.WorkflowRunning || c.Host != "m1" {
				t.Fatalf("claimed %d: %+v, want run %d running on m1", i, c, runs[i])
			}
		}
		now := time.Now().UTC()
		first := &model.TaskInstance{WorkflowInstanceID: runs[0], Name: "a", Type: "shell", State: model.TaskFailed, Attempt: 1, SubmitTime: &now}
		if err := term.TaskInsertAttempts(ctx, nil, []*model.TaskInstance{first}); err != nil {
			t.Fatal(err)
		}
		retry := &model.TaskInstance{WorkflowInstanceID: runs[0], Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 2, SubmitTime: &now}
		other := &model.TaskInstance{WorkflowInstanceID: runs[1], Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now}
		err = term.TaskWriteRunnerBatch(ctx, []store.AttemptWrite{{Prev: []int64{first.ID}, Next: []*model.TaskInstance{retry}},
			{Next: []*model.TaskInstance{other}}}, []store.InstanceEnd{{ID: runs[2], State: model.WorkflowFailed, End: now, Reason: "a failed"}})
		if err != nil || retry.ID == 0 || other.ID == 0 || retry.ID == other.ID {
			t.Fatalf("batch: ids %d %d, %v", retry.ID, other.ID, err)
		}
		old, err := s.TaskGet(ctx, first.ID)
		if err != nil || !old.Superseded {
			t.Fatalf("superseded attempt: %+v %v", old, err)
		}
		for _, id := range []int64{retry.ID, other.ID} {
			if got, err := s.TaskGet(ctx, id); err != nil || got.State != model.TaskSubmitted || got.Superseded {
				t.Fatalf("new attempt %d: %+v %v", id, got, err)
			}
		}
		ended, err := s.InstanceGet(ctx, runs[2])
		if err != nil || ended.State != model.WorkflowFailed || ended.Reason != "a failed" || ended.EndTime == nil {
			t.Fatalf("ended run: %+v %v", ended, err)
		}
		// A fenced term's batch writes nothing.
		if err := s.TermBegin(ctx, 2, "m2"); err != nil {
			t.Fatal(err)
		}
		late := &model.TaskInstance{WorkflowInstanceID: runs[1], Name: "b", Type: "shell", State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now}
		if err := term.TaskWriteRunnerBatch(ctx, []store.AttemptWrite{{Next: []*model.TaskInstance{late}}},
			[]store.InstanceEnd{{ID: runs[0], State: model.WorkflowSucceeded, End: now}}); err == nil {
			t.Fatal("a fenced batch succeeded")
		}
		if in, _ := s.InstanceGet(ctx, runs[0]); in.State != model.WorkflowRunning {
			t.Fatalf("fenced end landed: %+v", in)
		}
	})
}

// QueueRanks counts a page's queued tasks' places in task priority, then
// id order, and QueuedAhead the other instances' queued tasks before them.
func TestQueueRanks(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		runs := diamondRuns(t, s, 2)
		if _, err := s.InstanceClaimCommands(ctx, "m1", 0, 10); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		mk := func(run int64, name string, st model.TaskState, p model.Priority) *model.TaskInstance {
			return &model.TaskInstance{WorkflowInstanceID: run, Name: name, Type: "shell", State: st, Attempt: 1, Priority: p, SubmitTime: &now}
		}
		// Run 0: two queued ahead of run 1's. Run 1: ids in order t0..t5,
		// t1 and t4 urgent (highest), t2 running.
		older := []*model.TaskInstance{mk(runs[0], "a", model.TaskSubmitted, 2), mk(runs[0], "b", model.TaskSubmitted, 2)}
		ts := []*model.TaskInstance{mk(runs[1], "t0", model.TaskSubmitted, 2), mk(runs[1], "t1", model.TaskSubmitted, 0),
			mk(runs[1], "t2", model.TaskRunning, 2), mk(runs[1], "t3", model.TaskSubmitted, 2),
			mk(runs[1], "t4", model.TaskSubmitted, 0), mk(runs[1], "t5", model.TaskSubmitted, 2)}
		if err := s.TaskInsert(ctx, append(older, ts...)); err != nil {
			t.Fatal(err)
		}
		all, err := s.TaskList(ctx, runs[1])
		if err != nil {
			t.Fatal(err)
		}
		// Queue order: t1, t4 (highest), then t0, t3, t5.
		want := map[string]int{"t1": 0, "t4": 1, "t0": 2, "t3": 3, "t5": 4}
		for _, page := range [][]model.TaskInstance{all, all[3:5], all[5:]} {
			got, err := s.InstanceQueueRanks(ctx, runs[1], page)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, tk := range page {
				w, queued := want[tk.Name]
				if !queued {
					continue
				}
				n++
				if got[tk.ID] != w {
					t.Fatalf("page from %s: %s ranks %d, want %d (%v)", page[0].Name, tk.Name, got[tk.ID], w, got)
				}
			}
			if len(got) != n {
				t.Fatalf("page from %s: ranks %v, want %d", page[0].Name, got, n)
			}
		}
		if ahead, err := s.TaskQueuedAhead(ctx, runs[1], 2); err != nil || ahead != 2 {
			t.Fatalf("ahead of run 1: %d %v, want run 0's 2", ahead, err)
		}
		if ahead, err := s.TaskQueuedAhead(ctx, runs[0], 2); err != nil || ahead != 0 {
			t.Fatalf("ahead of run 0: %d %v, want 0", ahead, err)
		}
		if n, err := s.InstanceLatestRows(ctx, runs[1]); err != nil || n != 6 {
			t.Fatalf("latest rows: %d %v", n, err)
		}
		u, err := s.InstanceUnsettled(ctx, runs[1])
		if err != nil || len(u.Tasks) != 6 || u.Succeeded != 0 || u.Tasks[0].Name == "" {
			t.Fatalf("unsettled names: %+v %v", u, err)
		}
	})
}

// A page of tasks, scanned by hand, holds what gorm's scan of the same
// rows holds, every column set or NULL.
func TestInstanceTasksScanAsGorm(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.ProjectCreate(ctx, "demo", ""); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
		in, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Microsecond)
		code, child := 3, in.ID
		full := &model.TaskInstance{WorkflowInstanceID: in.ID, Name: "a", Type: "shell", State: model.TaskFailed, Attempt: 2, RetryBase: 1,
			Superseded: true, DryRun: true, Host: "w1:1", PID: 42, LogPath: "/l", ExitCode: &code, Priority: model.PriorityHigh,
			WorkerGroup: "g", TaskGroup: "tg", SubmitTime: &now, DispatchTime: &now, StartTime: &now, EndTime: &now,
			Params: map[string]string{"k": "v", "q": `a"b<c`}, Outputs: map[string]string{"rows": "7"},
			WaitCause: "dependent", WaitReason: "why", ChildInstanceID: child, Message: "m"}
		bare := &model.TaskInstance{WorkflowInstanceID: in.ID, Name: "b", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		if err := s.TaskInsert(ctx, []*model.TaskInstance{full, bare}); err != nil {
			t.Fatal(err)
		}
		want, err := s.TaskList(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		page, err := s.InstanceTasks(ctx, in.ID, 10, 0)
		if err != nil || len(page.Tasks) != 2 {
			t.Fatalf("page: %+v %v", page, err)
		}
		for i := range want {
			if !reflect.DeepEqual(page.Tasks[i], want[i]) {
				t.Fatalf("task %d:\n page %+v\n gorm %+v", i, page.Tasks[i], want[i])
			}
		}
		if page.Tasks[0].ExitCode == nil || *page.Tasks[0].ExitCode != 3 || page.Tasks[0].Params["q"] != `a"b<c` || page.Tasks[1].EndTime != nil {
			t.Fatalf("page rows: %+v", page.Tasks)
		}
	})
}

// diamondRuns creates project demo, its workflow diamond and n runs of it.
func diamondRuns(t *testing.T, s *store.Store, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := s.ProjectCreate(ctx, "demo", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond)); err != nil {
		t.Fatal(err)
	}
	var runs []int64
	for range n {
		in, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, in.ID)
	}
	return runs
}
