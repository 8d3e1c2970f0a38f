package main

import (
	"context"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestShowSaysWhyTasksWait: instance show lists the waiting tasks (an
// attempt queued, a task waiting for its upstream) and task show the
// attempt's wait.
func TestShowSaysWhyTasksWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inst := e.etlRun()
	tasks := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskSubmitted, Attempt: 1}}
	if err := e.store.TaskInsert(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}
	e.want(0, []string{"instance", "show", itoa(inst.ID)}, "WAITING TASK", "CAUSE",
		"extract", "queue", "queued behind 0 task(s)", "load", "upstream", "waiting for upstream extract")
	e.want(0, []string{"task", "show", itoa(tasks[0].ID)}, "waiting", "queue: queued behind 0 task(s)")
}
