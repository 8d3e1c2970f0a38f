package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestStoppedWorkerDoesNotStallDispatch: worker-2 is SIGSTOPped (its session
// outlives the test's window, so it stays registered and keeps being
// picked). A wide run gives it 75 tasks; before, the master had 64 sends
// in flight in total and its dispatcher waited for a free one, so the sends
// hanging on the stopped worker (5 s timeout each) stalled every dispatch.
// Now at most 32 sends per worker are in flight and the dispatcher never
// waits for one. A 3-task chain bound to worker-1 (worker group "a") must still
// finish promptly: dispatch to one worker never waits on another. Once
// worker-2 resumes, every task of the wide run has run exactly once.
func TestStoppedWorkerDoesNotStallDispatch(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 2, WorkerSlots: 100,
		SessionTimeout: 20 * time.Second,
		Env:            map[string][]string{"worker-1": {"BELUGA_WORKER_GROUPS=default,a"}}})
	marks := t.TempDir()
	wide := spec.Workflow{Name: "wide"}
	for i := range 150 {
		wide.Tasks = append(wide.Tasks, task(marks, fmt.Sprintf("w%d", i), "true"))
	}
	c.Apply(t, wide)
	ch := spec.Workflow{Name: "chain", WorkerGroup: "a"}
	for i := range 3 {
		var deps []string
		if i > 0 {
			deps = []string{fmt.Sprintf("c%d", i-1)}
		}
		ch.Tasks = append(ch.Tasks, task(marks, fmt.Sprintf("c%d", i), "true", deps...))
	}
	c.Apply(t, ch)

	stopped := c.Workers[1]
	stopped.Pause()
	t.Cleanup(stopped.Resume)
	wideID := c.Run(t, "wide")
	// The wide run's tasks are queued first (lower instance id): the chain's
	// first task is popped behind them.
	c.Eventually(t, 10*time.Second, "dispatches to the stopped worker", func() bool {
		n := 0
		for _, rs := range c.Tasks(t, wideID) {
			if r := rs[len(rs)-1]; r.Host == stopped.Addr && r.State == model.TaskDispatched {
				n++
			}
		}
		return n >= 32 // the sends one worker may have in flight
	})
	start := time.Now()
	chainID := c.Run(t, "chain")
	inst := c.WaitFinished(t, chainID, finishWithin)
	took := time.Since(start)
	t.Logf("the chain finished %v after its run was created, with %s stopped", took.Round(time.Millisecond), stopped.Name)
	if inst.State != model.WorkflowSucceeded {
		t.Fatalf("chain %s", inst.State)
	}
	if bound := 4 * time.Second; took > bound {
		t.Errorf("the chain took %v with one worker stopped, want within %v (a send to the stopped worker times out after 5 s)", took, bound)
	}

	stopped.Resume()
	c.WaitFinished(t, wideID, finishWithin)
	c.AssertRanOnce(t, wideID, marks)
	c.AssertRanOnce(t, chainID, marks)
}
