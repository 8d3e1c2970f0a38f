package store_test

import (
	"context"
	"errors"
	"strings"
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
			Continue: func(c model.WorkflowState) model.ActionKind {
				if c == model.WorkflowFailed {
					return model.ActionRecoverFailed
				}
				return ""
			}}
		cs, err := s.InstanceStartChild(ctx, req)
		if err != nil || !cs.Created || cs.Child.Parent == nil || cs.Child.Parent.TaskInstanceID != first.ID {
			t.Fatalf("first start: %+v %v", cs, err)
		}
		again, err := s.InstanceStartChild(ctx, req)
		if err != nil || !again.Attached || again.Child.ID != cs.Child.ID {
			t.Fatalf("second start of the same attempt: %+v %v", again, err)
		}
		row, _ := s.TaskGet(ctx, first.ID)
		if row.State != model.TaskRunning || row.ChildInstanceID != cs.Child.ID || row.StartTime == nil {
			t.Fatalf("parent attempt: %+v", row)
		}
		child, _ := s.InstanceGet(ctx, cs.Child.ID)
		if child.Params["day"] != "1" || child.Parent == nil || child.Parent.InstanceID != parent.ID {
			t.Fatalf("child: %+v", child)
		}

		// The child fails; a second attempt continues it, never a new one.
		if _, err := s.InstanceClaimCommands(ctx, "m1", 1, 1000); err != nil {
			t.Fatal(err)
		}
		if err := s.InstanceFinish(ctx, child.ID, model.WorkflowFailed, time.Now(), "task a failed"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TaskEndOnMaster(ctx, first.ID, model.TaskFailed, nil, "child failed", time.Now()); err != nil {
			t.Fatal(err)
		}
		second := &model.TaskInstance{WorkflowInstanceID: parent.ID, Name: "child", Type: "sub_workflow", State: model.TaskSubmitted, Attempt: 2, RetryBase: 2}
		if err := s.TaskInsertAttempts(ctx, []int64{first.ID}, []*model.TaskInstance{second}); err != nil {
			t.Fatal(err)
		}
		req.ParentTaskID = second.ID
		adopted, err := s.InstanceStartChild(ctx, req)
		if err != nil || !adopted.Adopted || adopted.Child.ID != child.ID || adopted.Action != model.ActionRecoverFailed {
			t.Fatalf("second attempt: %+v %v", adopted, err)
		}
		if c, _ := s.InstanceGet(ctx, child.ID); c.Parent == nil || c.Parent.TaskInstanceID != second.ID {
			t.Fatalf("child not relinked to the second attempt: %+v", c.Parent)
		}
		acts := drainActions(t, s)
		if len(acts) != 1 || acts[0].InstanceID != child.ID || acts[0].Action != model.ActionRecoverFailed {
			t.Fatalf("queued actions: %+v", acts)
		}
		if _, n, _ := s.InstanceList(ctx, store.InstanceFilter{Workflow: "diamond"}); n != 2 {
			t.Fatalf("%d instances of diamond, want the parent and one child", n)
		}
		// Ending twice: only the first moves the attempt.
		if ok, err := s.TaskEndOnMaster(ctx, second.ID, model.TaskSucceeded, map[string]string{"x": "1"}, "", time.Now()); !ok || err != nil {
			t.Fatalf("end: %v %v", ok, err)
		}
		if ok, _ := s.TaskEndOnMaster(ctx, second.ID, model.TaskFailed, nil, "", time.Now()); ok {
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
		sched, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond", ScheduleTime: &yesterday})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.InstanceClaimCommands(ctx, "m1", 1, 1000); err != nil { // started now
			t.Fatal(err)
		}
		now := time.Now().UTC()
		runs, err := s.InstanceRunsIn(ctx, "demo", "diamond", "a", now.Add(-time.Hour), now.Add(time.Hour))
		if err != nil || len(runs) != 1 || runs[0].ID != manual.ID || runs[0].Task != model.TaskSucceeded {
			t.Fatalf("this hour: %+v %v (manual %d, scheduled %d)", runs, err, manual.ID, sched.ID)
		}
		runs, err = s.InstanceRunsIn(ctx, "demo", "diamond", "", yesterday.Add(-time.Minute), yesterday.Add(time.Minute))
		if err != nil || len(runs) != 1 || runs[0].ID != sched.ID || runs[0].State != model.WorkflowRunning {
			t.Fatalf("yesterday: %+v %v", runs, err)
		}
		if _, err := s.InstanceRunsIn(ctx, "nope", "diamond", "", now, now); err == nil {
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
		if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond+"  - {name: e, command: \"true\", depends_on: [d]}\n")); err != nil {
			t.Fatal(err)
		}
		pinned := addTask(t, s, parent.ID, "pinned", model.TaskSubmitted, "")
		cs, err := s.InstanceStartChild(ctx, store.ChildRequest{ParentInstanceID: parent.ID, ParentTaskID: pinned.ID, Project: "demo", Workflow: "diamond", Version: 1})
		if err != nil || cs.Child.Version != 1 {
			t.Fatalf("pinned: %+v %v", cs.Child, err)
		}
		latest := addTask(t, s, parent.ID, "latest", model.TaskSubmitted, "")
		cs, err = s.InstanceStartChild(ctx, store.ChildRequest{ParentInstanceID: parent.ID, ParentTaskID: latest.ID, Project: "demo", Workflow: "diamond", AsOf: time.Now().Add(time.Hour)})
		if err != nil || cs.Child.Version != 2 {
			t.Fatalf("latest: %+v %v", cs.Child, err)
		}
		early := addTask(t, s, parent.ID, "early", model.TaskSubmitted, "")
		_, err = s.InstanceStartChild(ctx, store.ChildRequest{ParentInstanceID: parent.ID, ParentTaskID: early.ID, Project: "demo", Workflow: "diamond", AsOf: time.Now().Add(-time.Hour)})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("no version by the parent's start: %v", err)
		}
		if row, _ := s.TaskGet(ctx, early.ID); row.State != model.TaskSubmitted || row.ChildInstanceID != 0 {
			t.Fatalf("a refused start changed the attempt: %+v", row)
		}
	})
}

// TestStartChildLimits: a new child run past the depth or the runs of its
// root run's tree is refused with ErrLimit naming the setting, and nothing
// is written; a child the attempt already has is attached whatever the
// limits (one run made 421 runs through nested fan-outs before).
func TestStartChildLimits(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		root := newInstance(t, s, model.WorkflowRunning)
		start := func(parent int64, name string, lim store.ChildLimits) (store.ChildStart, error) {
			task := addTask(t, s, parent, name, model.TaskSubmitted, "")
			return s.InstanceStartChild(ctx, store.ChildRequest{ParentInstanceID: parent, ParentTaskID: task.ID, Project: "demo",
				Workflow: "diamond", AsOf: time.Now().Add(time.Minute), Limits: lim})
		}
		lim := store.ChildLimits{Depth: 2, Instances: 4}
		// root -> c1 -> c2 (depth 2), then c2 -> c3 would be depth 3.
		c1, err := start(root.ID, "c1", lim)
		if err != nil || !c1.Created {
			t.Fatalf("depth 1: %+v %v", c1, err)
		}
		c2, err := start(c1.Child.ID, "c2", lim)
		if err != nil || !c2.Created {
			t.Fatalf("depth 2: %+v %v", c2, err)
		}
		_, err = start(c2.Child.ID, "c3", lim)
		if !errors.Is(err, store.ErrLimit) || !strings.Contains(err.Error(), model.SettingSubWorkflowDepth) {
			t.Fatalf("depth 3 under a limit of 2: %v, want ErrLimit naming %s", err, model.SettingSubWorkflowDepth)
		}
		// root, c1, c2 and one more make 4; a fifth is refused, from any level.
		if c4, err := start(root.ID, "c4", lim); err != nil || !c4.Created {
			t.Fatalf("fourth run: %+v %v", c4, err)
		}
		_, err = start(c1.Child.ID, "c5", lim)
		if !errors.Is(err, store.ErrLimit) || !strings.Contains(err.Error(), model.SettingInstancesPerRun) {
			t.Fatalf("fifth run under a limit of 4: %v, want ErrLimit naming %s", err, model.SettingInstancesPerRun)
		}
		if _, n, _ := s.InstanceList(ctx, store.InstanceFilter{Workflow: "diamond"}); n != 4 {
			t.Fatalf("%d runs of diamond, want 4 (the refused ones wrote nothing)", n)
		}
		// Another root run has a tree of its own.
		other := newInstance(t, s, model.WorkflowRunning)
		if cs, err := start(other.ID, "c1", lim); err != nil || !cs.Created {
			t.Fatalf("another root's child: %+v %v", cs, err)
		}
		// Attaching the child an attempt has is never refused.
		task, _ := s.TaskGet(ctx, c1.Child.Parent.TaskInstanceID)
		again, err := s.InstanceStartChild(ctx, store.ChildRequest{ParentInstanceID: root.ID, ParentTaskID: task.ID, Project: "demo",
			Workflow: "diamond", Limits: store.ChildLimits{Depth: 1, Instances: 1}})
		if err != nil || !again.Attached {
			t.Fatalf("re-attach past the limits: %+v %v", again, err)
		}
	})
}
