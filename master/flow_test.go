package master_test

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/master"
)

// TestGroupWithoutWorkersWaits: a task for a group with no worker waits,
// visible in the instance's reason, and runs when a worker of the group
// joins.
func TestGroupWithoutWorkersWaits(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorker(2)
	c.apply(`name: gpu
tasks:
  - {name: train, command: "true", worker_group: gpu}
`)
	inst := c.run("gpu", model.PriorityMedium)
	wait.Until(t, 30*time.Second, "reason recorded", func() bool { return strings.Contains(c.instance(inst.ID).Reason, `"gpu"`) })
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
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorkerCap(2, 1) // capacity 1: the master keeps at most 2 in flight on it; both run
	c.apply("name: low\ntasks:\n  - {name: l, command: \"true\"}\n")
	c.apply("name: high\ntasks:\n  - {name: h, command: \"true\"}\n")
	gate, blk := c.fillWorker()
	low := c.run("low", model.PriorityLow)
	wait.Until(t, 30*time.Second, "low task queued", func() bool { return len(c.tasks(low.ID)) == 1 })
	high := c.run("high", model.PriorityHigh)
	wait.Until(t, 30*time.Second, "high task queued", func() bool { return len(c.tasks(high.ID)) == 1 })
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

// TestTaskGroupLimitsConcurrency: three tasks of two workflows share a task
// group of capacity 1: one runs at a time, the others wait and say why.
func TestTaskGroupLimitsConcurrency(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorker(4)
	if _, err := c.st.TaskGroupCreate(c.ctx, "db", 1, ""); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(c.dir, "gate")
	log := filepath.Join(c.dir, "log")
	// Each task records start and end, holding the group until its gate opens.
	task := func(n string) string {
		return fmt.Sprintf(`  - {name: %[1]s, task_group: db, command: "echo start >> %[2]s; while [ ! -f %[3]s.%[1]s ]; do sleep 0.01; done; echo end >> %[2]s"}`, n, log, gate)
	}
	c.apply("name: one\ntasks:\n" + task("a") + "\n" + task("b") + "\n")
	c.apply("name: two\ntasks:\n" + task("c") + "\n")
	one, two := c.run("one", model.PriorityMedium), c.run("two", model.PriorityMedium)
	running := func() int {
		n := 0
		for _, id := range []int64{one.ID, two.ID} {
			for _, tk := range c.tasks(id) {
				if tk.State == model.TaskDispatched || tk.State == model.TaskRunning {
					n++
				}
			}
		}
		return n
	}
	wait.Until(t, 30*time.Second, "one task of the group running", func() bool { return running() == 1 })
	wait.Until(t, 30*time.Second, "waiting instance says why", func() bool {
		return strings.Contains(c.instance(two.ID).Reason, `task group "db"`) || strings.Contains(c.instance(one.ID).Reason, `task group "db"`)
	})
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(gate+"."+n, nil, 0o644)
	}
	if got := c.finished(one.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("one: %+v", got)
	}
	if got := c.finished(two.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("two: %+v", got)
	}
	b, _ := os.ReadFile(log)
	if got := strings.Join(strings.Fields(string(b)), ","); got != "start,end,start,end,start,end" {
		t.Fatalf("tasks of a capacity-1 group overlapped: %s", got)
	}
}

// TestForceStartPassesAFullTaskGroup: force_start lets one waiting task
// through a full group; the group's count includes it until it ends.
func TestForceStartPassesAFullTaskGroup(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorker(4)
	c.st.TaskGroupCreate(c.ctx, "db", 1, "")
	gate := filepath.Join(c.dir, "gate")
	c.apply(fmt.Sprintf(`name: pair
tasks:
  - {name: a, task_group: db, command: "while [ ! -f %[1]s ]; do sleep 0.01; done"}
  - {name: b, task_group: db, command: "while [ ! -f %[1]s ]; do sleep 0.01; done"}
`, gate))
	inst := c.run("pair", model.PriorityMedium)
	var waiting int64
	wait.Until(t, 30*time.Second, "one running, one waiting", func() bool {
		run, sub := 0, int64(0)
		for _, tk := range c.tasks(inst.ID) {
			switch tk.State {
			case model.TaskRunning:
				run++
			case model.TaskSubmitted:
				sub = tk.ID
			}
		}
		waiting = sub
		return run == 1 && sub != 0
	})
	if _, err := c.st.ActionRequest(c.ctx, model.ActionRequest{TaskInstanceID: waiting, Action: model.ActionForceStart, By: "op"}); err != nil {
		t.Fatal(err)
	}
	c.m.Notify()
	wait.Until(t, 30*time.Second, "both running", func() bool {
		n := 0
		for _, tk := range c.tasks(inst.ID) {
			if tk.State == model.TaskRunning {
				n++
			}
		}
		return n == 2
	})
	g, _ := c.st.TaskGroupGet(c.ctx, "db")
	if g.InUse != 2 {
		t.Fatalf("group in use %d while both run", g.InUse)
	}
	os.WriteFile(gate, nil, 0o644)
	if got := c.finished(inst.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("instance: %+v", got)
	}
}

// TestPlatformCap: with MaxRunning 1 the master has one task out at a
// time, across instances.
func TestPlatformCap(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{MaxRunning: 1})
	c.addWorker(4)
	log := filepath.Join(c.dir, "log")
	cmd := fmt.Sprintf(`echo start >> %[1]s; sleep 0.1; echo end >> %[1]s`, log)
	c.apply(fmt.Sprintf("name: capped\ntasks:\n  - {name: a, command: %q}\n  - {name: b, command: %q}\n", cmd, cmd))
	one, two := c.run("capped", model.PriorityMedium), c.run("capped", model.PriorityMedium)
	c.finished(one.ID)
	c.finished(two.ID)
	b, _ := os.ReadFile(log)
	if got := strings.Join(strings.Fields(string(b)), ","); got != "start,end,start,end,start,end,start,end" {
		t.Fatalf("tasks overlapped under a platform cap of 1: %s", got)
	}
}

// TestFailedSendTriesAnotherWorker: a registered worker that cannot be
// reached makes its sends fail; each such task is taken back and runs on
// the other worker, once, as its first attempt.
func TestFailedSendTriesAnotherWorker(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	w := c.addWorker(4)
	c.reg.Register(c.ctx, registry.Node{Role: registry.RoleWorker, Addr: "127.0.0.1:1", Groups: []string{"default"},
		Heartbeat: registry.Heartbeat{StartTime: time.Now(), Capacity: 4}})
	var tasks strings.Builder
	tasks.WriteString("name: spread\ntasks:\n")
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&tasks, "  - {name: t%d, command: \"true\"}\n", i)
	}
	c.apply(tasks.String())
	inst := c.run("spread", model.PriorityMedium)
	if got := c.finished(inst.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("instance %+v", got)
	}
	for _, tk := range c.tasks(inst.ID) {
		if tk.Host != w.Host() || tk.Attempt != 1 {
			t.Fatalf("task %s ran on %s attempt %d, want %s attempt 1", tk.Name, tk.Host, tk.Attempt, w.Host())
		}
	}
}
