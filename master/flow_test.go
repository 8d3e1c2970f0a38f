package master_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/master"
)

// TestGroupWithoutWorkersWaits: a task for a group with no worker waits,
// visible in the instance's reason, and runs when a worker of the group
// joins.
func TestGroupWithoutWorkersWaits(t *testing.T) {
	c := newCell(t, master.Config{})
	c.addWorker(2)
	c.apply(`name: gpu
tasks:
  - {name: train, command: "true", worker_group: gpu}
`)
	inst := c.run("gpu", model.PriorityMedium)
	waitFor(t, "reason recorded", func() bool { return strings.Contains(c.instance(inst.ID).Reason, `"gpu"`) })
	if s := c.instance(inst.ID).State; s != model.WorkflowRunning {
		t.Fatalf("state while waiting: %s", s)
	}
	c.addWorker(1, "gpu")
	got := c.finished(inst.ID)
	if got.State != model.WorkflowSucceeded || got.Reason != "" {
		t.Fatalf("after a gpu worker joined: %+v", got)
	}
}

// TestPriorityUnderContention: with the only worker full, a high-priority
// instance's task is dispatched before a lower one queued earlier.
func TestPriorityUnderContention(t *testing.T) {
	c := newCell(t, master.Config{})
	c.addWorkerCap(2, 1) // capacity 1: the master keeps at most 2 in flight on it; both run
	gate := filepath.Join(c.dir, "gate")
	c.apply(fmt.Sprintf(`name: blocker
tasks:
  - {name: b1, command: "while [ ! -f %[1]s.1 ]; do sleep 0.01; done"}
  - {name: b2, command: "while [ ! -f %[1]s.2 ]; do sleep 0.01; done"}
`, gate))
	c.apply("name: low\ntasks:\n  - {name: l, command: \"true\"}\n")
	c.apply("name: high\ntasks:\n  - {name: h, command: \"true\"}\n")
	blk := c.run("blocker", model.PriorityMedium)
	waitFor(t, "worker full", func() bool {
		n := 0
		for _, tk := range c.tasks(blk.ID) {
			if tk.State == model.TaskDispatched || tk.State == model.TaskRunning {
				n++
			}
		}
		return n == 2
	})
	low := c.run("low", model.PriorityLow)
	waitFor(t, "low task queued", func() bool { return len(c.tasks(low.ID)) == 1 })
	high := c.run("high", model.PriorityHigh)
	waitFor(t, "high task queued", func() bool { return len(c.tasks(high.ID)) == 1 })
	if st := c.tasks(low.ID)[0].State; st != model.TaskSubmitted {
		t.Fatalf("low task should wait while the worker is full, is %s", st)
	}
	os.WriteFile(gate+".1", nil, 0o644) // one place frees up: it goes to high
	c.finished(high.ID)
	c.finished(low.ID)
	l, h := c.tasks(low.ID)[0], c.tasks(high.ID)[0]
	if !h.DispatchTime.Before(*l.DispatchTime) {
		t.Fatalf("high dispatched at %v, not before low (queued earlier) at %v", h.DispatchTime, l.DispatchTime)
	}
	os.WriteFile(gate+".2", nil, 0o644)
	c.finished(blk.ID)
}
