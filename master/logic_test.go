package master_test

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"strings"
	"testing"
	"time"

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
	t.Parallel()
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
	t.Parallel()
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

// TestMasterTypeTakenUpAfterRestart: a new master finds a master-run
// attempt begun by the one before and hands the same attempt to its hook
// (no new attempt, nothing begun twice by one master); released, it ends
// and the instance succeeds.
func TestMasterTypeTakenUpAfterRestart(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var started func() []int64
	c := newCellWith(t, master.Config{}, func(m *master.Master) { started = master.UseHeldTasks(m, release) })
	c.addWorker(1)
	c.apply(laterSpec)
	id := c.run("later", model.PriorityMedium).ID
	wait.Until(t, 30*time.Second, "the attempt started", func() bool { return len(started()) == 1 })
	first := started()[0]
	c.m.Stop()

	m2 := master.New(master.Config{Listen: "127.0.0.1:0"}, c.st, c.reg, c.reg, c.log)
	again := master.UseHeldTasks(m2, release)
	if err := m2.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m2.Stop)
	wait.Until(t, 30*time.Second, "the new master took it up", func() bool { return len(again()) == 1 })
	if got := again()[0]; got != first {
		t.Fatalf("the new master started task instance %d, want the same attempt %d", got, first)
	}
	close(release)
	wait.Until(t, 30*time.Second, "instance finished", func() bool { return c.instance(id).State.Finished() })
	if inst := c.instance(id); inst.State != model.WorkflowSucceeded {
		t.Fatalf("instance %s (%s)", inst.State, inst.Reason)
	}
	if n := len(c.tasks(id)); n != 2 {
		t.Fatalf("%d task rows, want 2 (one attempt each)", n)
	}
}
