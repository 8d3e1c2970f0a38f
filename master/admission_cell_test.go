package master_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// setting writes an admission setting before the master's first look.
func (c *cell) setting(name string, v int) {
	c.t.Helper()
	if _, err := c.st.SettingPut(c.ctx, name, fmt.Sprint(v)); err != nil {
		c.t.Fatal(err)
	}
}

// limitedCell is a cell whose master starts with setting name at v, and a
// worker of 8 slots.
func limitedCell(t *testing.T, cfg master.Config, name string, v int) *cell {
	c := openCell(t, cfg)
	c.setting(name, v)
	c.start(cfg, nil)
	c.addWorker(8)
	return c
}

// admissionReason is the leader's recorded admission state.
func (c *cell) admissionReason() string {
	c.t.Helper()
	a, err := c.st.AdmissionCurrent(c.ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	return a.Reason
}

// countStates counts the instances among ids by state.
func (c *cell) countStates(ids []int64) map[model.WorkflowState]int {
	n := map[model.WorkflowState]int{}
	for _, id := range ids {
		n[c.instance(id).State]++
	}
	return n
}

// TestAdmissionMaxRunningInstances: with admission.max_running_instances 2,
// six runs asked for at once: two run, four wait submitted with the reason
// naming the setting (and the admission row says so), and as the two end
// the rest are claimed in turn, with no restart: every run ends succeeded,
// each task run once, and the waiting reason is gone from each.
func TestAdmissionMaxRunningInstances(t *testing.T) {
	t.Parallel()
	c := limitedCell(t, master.Config{}, model.SettingMaxRunningInstances, 2)
	gate := filepath.Join(c.dir, "open")
	c.apply(fmt.Sprintf("name: slow\ntasks:\n  - {name: a, command: \"while [ ! -f %s ]; do sleep 0.01; done\"}\n", gate))
	var ids []int64
	for range 6 {
		ids = append(ids, c.run("slow", model.PriorityMedium).ID)
	}
	const reason = "waiting: master at 2 running instances (admission.max_running_instances)"
	wait.Until(t, 30*time.Second, "two running, four waiting with the reason", func() bool {
		n, waiting := c.countStates(ids), 0
		for _, id := range ids {
			if in := c.instance(id); in.State == model.WorkflowSubmitted && in.Reason == reason {
				waiting++
			}
		}
		return n[model.WorkflowRunning] == 2 && waiting == 4
	})
	if got := c.admissionReason(); got != reason {
		t.Fatalf("admission state %q, want %q", got, reason)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		got := c.finished(id)
		if got.State != model.WorkflowSucceeded || got.Reason != "" {
			t.Fatalf("run %d after the others ended: %+v", id, got)
		}
		if ts := c.tasks(id); len(ts) != 1 {
			t.Fatalf("run %d has %d task instances, want 1", id, len(ts))
		}
	}
	wait.Until(t, 30*time.Second, "admitting again", func() bool { return c.admissionReason() == "" })
}

// TestAdmissionAdmitsChildRuns: at admission.max_running_instances 1 a
// running parent's sub_workflow child is still claimed (holding it would
// wedge the master: the parent waits for it and fills the only place),
// while another run asked for waits until the parent ended.
func TestAdmissionAdmitsChildRuns(t *testing.T) {
	t.Parallel()
	c := limitedCell(t, master.Config{}, model.SettingMaxRunningInstances, 1)
	c.apply("name: child\ntasks:\n  - {name: c, command: \"true\"}\n")
	c.apply("name: parent\ntasks:\n  - {name: p, type: sub_workflow, workflow: child}\n")
	parent := c.run("parent", model.PriorityMedium)
	wait.Until(t, 30*time.Second, "the parent running", func() bool { return c.instance(parent.ID).State == model.WorkflowRunning })
	other := c.run("child", model.PriorityMedium)
	if got := c.finished(parent.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("parent at the limit: %+v", got)
	}
	if got := c.finished(other.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("the run asked for beside it: %+v", got)
	}
}

// TestAdmissionMaxPendingEvents: a publisher that stopped publishing
// (polls an hour apart) leaves the outbox growing; past
// admission.max_pending_events the master claims no new run, which waits with
// the reason naming the setting; raising the setting admits it (read within
// a second, no restart).
func TestAdmissionMaxPendingEvents(t *testing.T) {
	t.Parallel()
	cfg := master.Config{Events: master.EventsConfig{Poll: time.Hour, IdlePoll: time.Hour, PruneEvery: time.Hour}}
	c := limitedCell(t, cfg, model.SettingMaxPendingEvents, 5)
	c.apply("name: one\ntasks:\n  - {name: a, command: \"true\"}\n  - {name: b, command: \"true\", depends_on: [a]}\n")
	first := c.run("one", model.PriorityMedium)
	c.finished(first.ID) // its events pile up in the outbox: the publisher looks again in an hour
	held := c.run("one", model.PriorityMedium)
	const reason = "waiting: master has 5 events not yet published (admission.max_pending_events)"
	wait.Until(t, 30*time.Second, "the run waiting with the reason", func() bool {
		in := c.instance(held.ID)
		return in.State == model.WorkflowSubmitted && in.Reason == reason
	})
	if got := c.admissionReason(); !strings.Contains(got, model.SettingMaxPendingEvents) {
		t.Fatalf("admission state %q", got)
	}
	c.setting(model.SettingMaxPendingEvents, 1000000)
	if got := c.finished(held.ID); got.State != model.WorkflowSucceeded || got.Reason != "" {
		t.Fatalf("after the limit was raised: %+v", got)
	}
}
