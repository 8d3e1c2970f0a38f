package main

import (
	"context"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestShowsSkippedTasks: instance show lists a skipped task's row in its
// state, and its log says it never reached a worker.
func TestShowsSkippedTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inst := e.etlRun()
	now := time.Now().UTC()
	tasks := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskSkipped,
		Attempt: 1, RetryBase: 1, SubmitTime: &now, StartTime: &now, EndTime: &now}}
	if err := e.store.TaskInsert(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}
	e.want(0, []string{"instance", "show", itoa(inst.ID)}, "extract", "skipped")
	e.want(1, []string{"task", "log", itoa(tasks[0].ID)}, "it is skipped and has not reached a worker")
}
