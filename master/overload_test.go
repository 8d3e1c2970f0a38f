package master_test

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/master"
)

// TestOverloadedWorkerHoldsTasks: the only worker's heartbeat says it is
// overloaded; a task waits with a reason saying so, and runs once a
// heartbeat says the overload is over. A host at 100 % CPU without the flag
// is not overloaded: the worker decides with its own thresholds.
func TestOverloadedWorkerHoldsTasks(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	w := c.addWorker(2)
	beat := func(over bool) {
		c.reg.Register(c.ctx, registry.Node{Role: registry.RoleWorker, Addr: w.Host(), Groups: []string{"default"},
			Heartbeat: registry.Heartbeat{StartTime: w.StartTime(), Capacity: 2, CPU: 100, Memory: 99,
				Overloaded: over, OverloadReason: "CPU 100% >= max 90%"}})
	}
	c.apply("name: one\ntasks:\n  - {name: a, command: \"true\"}\n")
	beat(false)
	if got := c.finished(c.run("one", model.PriorityMedium).ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("on a busy host under no threshold: %+v", got)
	}

	beat(true)
	inst := c.run("one", model.PriorityMedium)
	wait.Until(t, 30*time.Second, "the overload in the reason", func() bool {
		return strings.Contains(c.instance(inst.ID).Reason, "1 overloaded")
	})
	if s := c.instance(inst.ID).State; s != model.WorkflowRunning {
		t.Fatalf("state while the worker is overloaded: %s", s)
	}
	for _, tk := range c.tasks(inst.ID) {
		if tk.State != model.TaskSubmitted {
			t.Fatalf("task %s is %s on an overloaded worker", tk.Name, tk.State)
		}
	}
	beat(false)
	got := c.finished(inst.ID)
	if got.State != model.WorkflowSucceeded || got.Reason != "" {
		t.Fatalf("after the overload: %+v", got)
	}
}
