package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestStartChildOncePerAttempt: an attempt gets one child however often it
// is started (a failover re-attaches); a later attempt takes over the same
// child with the action that continues it, queued in the same transaction.
func TestStartChildOncePerAttempt(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		parent := newInstance(t, s, model.WorkflowRunning)
		first := addTask(t, s, parent.ID, "child", model.TaskSubmitted, "")
		req := store.ChildRequest{ParentInstanceID: parent.ID, ParentTaskID: first.ID, Project: "demo", Workflow: "diamond",
			Params: map[string]string{"day": "1"}, AsOf: time.Now().Add(time.Minute),
			Continue: func(c model.WorkflowState) store.ActionKind {
				if c == model.WorkflowFailed {
					return store.ActionRecoverFailed
				}
				return ""
			}}
		cs, err := s.StartChild(ctx, req)
		if err != nil || !cs.Created || cs.Child.Parent == nil || cs.Child.Parent.TaskInstanceID != first.ID {
			t.Fatalf("first start: %+v %v", cs, err)
		}
		again, err := s.StartChild(ctx, req)
		if err != nil || !again.Attached || again.Child.ID != cs.Child.ID {
			t.Fatalf("second start of the same attempt: %+v %v", again, err)
		}
		row, _ := s.GetTaskInstance(ctx, first.ID)
		if row.State != model.TaskRunning || row.ChildInstanceID != cs.Child.ID || row.StartTime == nil {
			t.Fatalf("parent attempt: %+v", row)
		}
		child, _ := s.GetWorkflowInstance(ctx, cs.Child.ID)
		if child.Params["day"] != "1" || child.Parent == nil || child.Parent.InstanceID != parent.ID {
			t.Fatalf("child: %+v", child)
		}

		// The child fails; a second attempt continues it, never a new one.
		if _, err := s.ClaimCommands(ctx, "m1", 1, 1000); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishWorkflowInstance(ctx, child.ID, model.WorkflowFailed, time.Now(), "task a failed"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EndMasterTask(ctx, first.ID, model.TaskFailed, nil, "child failed", time.Now()); err != nil {
			t.Fatal(err)
		}
		second := &model.TaskInstance{WorkflowInstanceID: parent.ID, Name: "child", Type: "sub_workflow", State: model.TaskSubmitted, Attempt: 2, RetryBase: 2}
		if err := s.InsertAttempts(ctx, []int64{first.ID}, []*model.TaskInstance{second}); err != nil {
			t.Fatal(err)
		}
		req.ParentTaskID = second.ID
		adopted, err := s.StartChild(ctx, req)
		if err != nil || !adopted.Adopted || adopted.Child.ID != child.ID || adopted.Action != store.ActionRecoverFailed {
			t.Fatalf("second attempt: %+v %v", adopted, err)
		}
		if c, _ := s.GetWorkflowInstance(ctx, child.ID); c.Parent == nil || c.Parent.TaskInstanceID != second.ID {
			t.Fatalf("child not relinked to the second attempt: %+v", c.Parent)
		}
		acts := drainActions(t, s)
		if len(acts) != 1 || acts[0].InstanceID != child.ID || acts[0].Action != store.ActionRecoverFailed {
			t.Fatalf("queued actions: %+v", acts)
		}
		if _, n, _ := s.ListWorkflowInstances(ctx, store.InstanceFilter{Workflow: "diamond"}); n != 2 {
			t.Fatalf("%d instances of diamond, want the parent and one child", n)
		}
		// Ending twice: only the first moves the attempt.
		if ok, err := s.EndMasterTask(ctx, second.ID, model.TaskSucceeded, map[string]string{"x": "1"}, "", time.Now()); !ok || err != nil {
			t.Fatalf("end: %v %v", ok, err)
		}
		if ok, _ := s.EndMasterTask(ctx, second.ID, model.TaskFailed, nil, "", time.Now()); ok {
			t.Fatal("a second end moved a finished attempt")
		}
	})
}

// TestRunsInCountsByScheduleTime: a scheduled run counts by its schedule
// time, a manual one by its start; with a task, its latest attempt's state.
func TestRunsInCountsByScheduleTime(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		manual := newInstance(t, s, model.WorkflowRunning)
		addTask(t, s, manual.ID, "a", model.TaskSucceeded, "")
		yesterday := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
		sched, err := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond", ScheduleTime: &yesterday})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimCommands(ctx, "m1", 1, 1000); err != nil { // started now
			t.Fatal(err)
		}
		now := time.Now().UTC()
		runs, err := s.RunsIn(ctx, "demo", "diamond", "a", now.Add(-time.Hour), now.Add(time.Hour))
		if err != nil || len(runs) != 1 || runs[0].ID != manual.ID || runs[0].Task != model.TaskSucceeded {
			t.Fatalf("this hour: %+v %v (manual %d, scheduled %d)", runs, err, manual.ID, sched.ID)
		}
		runs, err = s.RunsIn(ctx, "demo", "diamond", "", yesterday.Add(-time.Minute), yesterday.Add(time.Minute))
		if err != nil || len(runs) != 1 || runs[0].ID != sched.ID || runs[0].State != model.WorkflowRunning {
			t.Fatalf("yesterday: %+v %v", runs, err)
		}
		if _, err := s.RunsIn(ctx, "nope", "diamond", "", now, now); err == nil {
			t.Fatal("an unknown project gave no error")
		}
	})
}

// TestStartChildVersion: a pinned version is run as pinned; without one,
// the latest created by the parent's start (none: the attempt cannot start).
func TestStartChildVersion(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		parent := newInstance(t, s, model.WorkflowRunning)
		if _, _, err := s.PutWorkflow(ctx, "demo", mustSpec(t, diamond+"  - {name: e, command: \"true\", depends_on: [d]}\n")); err != nil {
			t.Fatal(err)
		}
		pinned := addTask(t, s, parent.ID, "pinned", model.TaskSubmitted, "")
		cs, err := s.StartChild(ctx, store.ChildRequest{ParentInstanceID: parent.ID, ParentTaskID: pinned.ID, Project: "demo", Workflow: "diamond", Version: 1})
		if err != nil || cs.Child.Version != 1 {
			t.Fatalf("pinned: %+v %v", cs.Child, err)
		}
		latest := addTask(t, s, parent.ID, "latest", model.TaskSubmitted, "")
		cs, err = s.StartChild(ctx, store.ChildRequest{ParentInstanceID: parent.ID, ParentTaskID: latest.ID, Project: "demo", Workflow: "diamond", AsOf: time.Now().Add(time.Hour)})
		if err != nil || cs.Child.Version != 2 {
			t.Fatalf("latest: %+v %v", cs.Child, err)
		}
		early := addTask(t, s, parent.ID, "early", model.TaskSubmitted, "")
		_, err = s.StartChild(ctx, store.ChildRequest{ParentInstanceID: parent.ID, ParentTaskID: early.ID, Project: "demo", Workflow: "diamond", AsOf: time.Now().Add(-time.Hour)})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("no version by the parent's start: %v", err)
		}
		if row, _ := s.GetTaskInstance(ctx, early.ID); row.State != model.TaskSubmitted || row.ChildInstanceID != 0 {
			t.Fatalf("a refused start changed the attempt: %+v", row)
		}
	})
}
