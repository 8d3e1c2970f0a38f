package main

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestShowChildAndMessage: `instance show` names a run's parent and lists
// each sub_workflow attempt's child and a waiting task's message; `task
// show` has both.
func TestShowChildAndMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	inst := e.etlRun()
	tasks := []*model.TaskInstance{
		{WorkflowInstanceID: inst.ID, Name: "extract", Type: "sub_workflow", State: model.TaskSubmitted, Attempt: 1},
		{WorkflowInstanceID: inst.ID, Name: "load", Type: "dependent", State: model.TaskRunning, Attempt: 1},
	}
	if err := e.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	cs, err := e.store.InstanceStartChild(ctx, store.ChildRequest{ParentInstanceID: inst.ID, ParentTaskID: tasks[0].ID, Project: "p", Workflow: "nightly_etl"})
	if err != nil || !cs.Created {
		t.Fatalf("start child: %+v %v", cs, err)
	}
	if err := e.store.TaskSetMessage(ctx, tasks[1].ID, "waiting for p/ingest (today)"); err != nil {
		t.Fatal(err)
	}
	child := itoa(cs.Child.ID)
	out := e.want(0, []string{"instance", "show", itoa(inst.ID)})
	for _, re := range []string{`(?m)^TASK ID\s+TASK\s+CHILD INSTANCE\s+MESSAGE$`,
		`(?m)^` + itoa(tasks[0].ID) + `\s+extract\s+` + child + `\s+-$`,
		`(?m)^` + itoa(tasks[1].ID) + `\s+load\s+-\s+waiting for p/ingest \(today\)$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("instance show lacks %s:\n%s", re, out)
		}
	}
	e.want(0, []string{"instance", "show", child}, fmt.Sprintf("instance %d, task instance %d (sub_workflow)", inst.ID, tasks[0].ID))
	out = e.want(0, []string{"task", "show", itoa(tasks[0].ID)}, "running")
	if !regexp.MustCompile(`(?m)^child instance\s+` + child + `$`).MatchString(out) {
		t.Fatalf("task show lacks the child:\n%s", out)
	}
	e.want(0, []string{"task", "show", itoa(tasks[1].ID)}, "waiting for p/ingest (today)")

	// A second start of the same attempt (a failover) re-attaches: no second child.
	again, err := e.store.InstanceStartChild(ctx, store.ChildRequest{ParentInstanceID: inst.ID, ParentTaskID: tasks[0].ID, Project: "p", Workflow: "nightly_etl"})
	if err != nil || !again.Attached || again.Child.ID != cs.Child.ID {
		t.Fatalf("second start: %+v %v", again, err)
	}
}
