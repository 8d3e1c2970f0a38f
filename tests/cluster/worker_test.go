package cluster

import (
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestKillWorkerMidTask kills -9 the worker running b. Once the worker's
// session expires, b's attempt becomes need_fault_tolerance and a new
// attempt starts on the other worker within session timeout + 2 s of the
// kill; the instance succeeds. b executed twice (once per attempt), every
// other task once.
func TestKillWorkerMidTask(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, spec.Workflow{Name: "work", Tasks: []spec.Task{
		task(marks, "a", sleep(200*time.Millisecond)),
		task(marks, "b", sleep(3*time.Second), "a"),
		task(marks, "c", sleep(200*time.Millisecond), "b"),
	}})
	id := c.Run(t, "work")
	e := clustertest.WaitExecution(t, marks, id, "b", finishWithin)
	first := taskRow(t, c, id, "b", e.Attempt)
	var victim, other *clustertest.Process
	for _, w := range c.Workers {
		if w.Addr == first.Host {
			victim = w
		} else {
			other = w
		}
	}
	if victim == nil {
		t.Fatalf("b runs on %q, not one of the workers", first.Host)
	}
	killed := time.Now()
	victim.Kill9()

	var again model.TaskInstance
	c.Eventually(t, failoverWithin, "a new attempt of b to start", func() bool {
		rows := c.Tasks(t, id)["b"]
		again = rows[len(rows)-1]
		return again.Attempt > first.Attempt && again.StartTime != nil
	})
	took := again.StartTime.Sub(killed)
	t.Logf("b runs again on %s %v after the kill of %s", again.Host, took.Round(time.Millisecond), victim.Name)
	if bound := sessionTimeout + 2*time.Second; took > bound {
		t.Errorf("b started again %v after the kill, want within %v", took, bound)
	}
	if again.Host != other.Addr {
		t.Fatalf("b's new attempt runs on %s, want %s", again.Host, other.Addr)
	}
	c.WaitFinished(t, id, finishWithin)
	c.AssertRuns(t, id, marks, map[string]int{"b": 2})
	rows := c.Tasks(t, id)["b"]
	if len(rows) != 2 || rows[0].State != model.TaskNeedFaultTolerance || rows[0].Host != victim.Addr {
		t.Fatalf("b's attempts: want need_fault_tolerance on %s, then succeeded on %s: %+v", victim.Addr, other.Addr, rows)
	}
	c.AssertNoStuckRows(t)
}

// taskRow returns one attempt of a task from the DB.
func taskRow(t *testing.T, c *clustertest.Cluster, id int64, name string, attempt int) model.TaskInstance {
	t.Helper()
	for _, r := range c.Tasks(t, id)[name] {
		if r.Attempt == attempt {
			return r
		}
	}
	t.Fatalf("instance %d has no attempt %d of %s", id, attempt, name)
	return model.TaskInstance{}
}
