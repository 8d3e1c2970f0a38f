package master_test

import (
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/master"
)

const laterSpec = `name: later
tasks:
  - {name: wait, type: test_later}
  - {name: after, command: "true", depends_on: [wait]}
`

// TestMasterTypeWithoutHookFails: a master-placed type nothing runs fails
// its task, naming the type, and is never dispatched.
func TestMasterTypeWithoutHookFails(t *testing.T) {
	c := newCell(t, master.Config{})
	c.addWorker(1)
	c.apply(laterSpec)
	inst := c.finished(c.run("later", model.PriorityMedium).ID)
	if inst.State != model.WorkflowFailed || !strings.Contains(inst.Reason, "task type test_later not supported") {
		t.Fatalf("instance %s (%s)", inst.State, inst.Reason)
	}
	ts := c.tasks(inst.ID)
	if len(ts) != 1 || ts[0].State != model.TaskFailed || ts[0].Host != "" {
		t.Fatalf("tasks %+v", ts)
	}
}

// TestMasterTypeThroughHook: launch hands a master-placed type to the
// masterTasks hook once; its result, reported into the runner's mailbox,
// lets the downstream run.
func TestMasterTypeThroughHook(t *testing.T) {
	var started func() int
	c := newCellWith(t, master.Config{}, func(m *master.Master) { started = master.UseLaterTasks(m) })
	c.addWorker(1)
	c.apply(laterSpec)
	inst := c.finished(c.run("later", model.PriorityMedium).ID)
	if inst.State != model.WorkflowSucceeded || started() != 1 {
		t.Fatalf("instance %s (%s), %d started", inst.State, inst.Reason, started())
	}
	for _, tk := range c.tasks(inst.ID) {
		if tk.State != model.TaskSucceeded || (tk.Name == "wait") != (tk.Host == "") {
			t.Fatalf("task %+v", tk)
		}
	}
}
