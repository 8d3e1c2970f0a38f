package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// logicTask is a master-run task of type typ with its type fields.
func logicTask(t *testing.T, name, typ string, fields map[string]any, deps ...string) spec.Task {
	t.Helper()
	tk := spec.Task{Name: name, Type: typ, DependsOn: deps, Fields: map[string]json.RawMessage{}}
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		tk.Fields[k] = b
	}
	return tk
}

// instancesOf lists the runs of a workflow.
func instancesOf(t *testing.T, c *clustertest.Cluster, workflow string) []model.WorkflowInstance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Workflow: workflow})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// assertMasterTaskOnce checks that a master-run task of a succeeded
// instance has one attempt, succeeded, and that the worker tasks listed
// executed once each.
func assertMasterTaskOnce(t *testing.T, c *clustertest.Cluster, id int64, marks, master string, workerTasks ...string) model.TaskInstance {
	t.Helper()
	if inst := c.Instance(t, id); inst.State != model.WorkflowSucceeded {
		t.Fatalf("instance %d is %s (%s)", id, inst.State, inst.Reason)
	}
	rows := c.Tasks(t, id)
	if len(rows[master]) != 1 || !rows[master][0].State.Success() {
		t.Fatalf("task %s of instance %d: want one succeeded attempt, got %+v", master, id, rows[master])
	}
	ran := map[string]int{}
	for _, e := range clustertest.Executions(t, marks, id) {
		ran[e.Task]++
	}
	for _, w := range workerTasks {
		if ran[w] != 1 {
			t.Fatalf("task %s of instance %d executed %d times", w, id, ran[w])
		}
	}
	if ran[master] != 0 {
		t.Fatalf("master-run task %s reached a worker", master)
	}
	return rows[master][0]
}

// TestSubWorkflowSurvivesLeaderKill kills -9 the leader while a child run's
// task runs on a worker. The new leader re-attaches the parent's attempt
// to the same child: one child run, the parent ends with it, every worker
// task ran once, nothing is stuck.
func TestSubWorkflowSurvivesLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, spec.Workflow{Name: "leaf", Tasks: []spec.Task{
		task(marks, "a", sleep(2*time.Second)),
		task(marks, "b", "", "a"),
	}})
	c.Apply(t, spec.Workflow{Name: "root", Tasks: []spec.Task{
		logicTask(t, "child", "sub_workflow", map[string]any{"workflow": "leaf"}),
		task(marks, "after", "", "child"),
	}})
	id := c.Run(t, "root")
	clustertest.WaitExecution(t, marks, 0, "a", finishWithin)
	old := c.Leader()
	old.Kill9()
	c.WaitLeader(t, failoverWithin, old)
	c.WaitFinished(t, id, finishWithin)
	pt := assertMasterTaskOnce(t, c, id, marks, "child", "after")
	kids := instancesOf(t, c, "leaf")
	if len(kids) != 1 || pt.ChildInstanceID != kids[0].ID || kids[0].Parent == nil || kids[0].Parent.TaskInstanceID != pt.ID {
		t.Fatalf("want exactly one child linked to task instance %d (child %d): %+v", pt.ID, pt.ChildInstanceID, kids)
	}
	c.AssertRanOnce(t, kids[0].ID, marks)
	c.AssertNoStuckRows(t)
}

// TestDependentSurvivesLeaderKill kills -9 the leader while a dependent
// waits for a run that is still going. With an hour's fallback poll, only
// the new leader's re-evaluation and the upstream's finish can end it: the
// dependent's one attempt succeeds and its downstream runs once.
func TestDependentSurvivesLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	gate := filepath.Join(marks, "gate")
	c.Apply(t, spec.Workflow{Name: "up", Tasks: []spec.Task{
		task(marks, "load", "while [ ! -f "+gate+" ]; do sleep 0.02; done"),
	}})
	c.Apply(t, spec.Workflow{Name: "down", Tasks: []spec.Task{
		logicTask(t, "wait", "dependent", map[string]any{"wait_for": []map[string]string{{"workflow": "up", "date": "today"}}, "check_interval": "1h"}),
		task(marks, "publish", "", "wait"),
	}})
	id := c.Run(t, "down")
	c.Eventually(t, finishWithin, "the dependent waits", func() bool {
		rows := c.Tasks(t, id)["wait"]
		return len(rows) == 1 && strings.HasPrefix(rows[0].Message, "waiting for")
	})
	up := c.Run(t, "up")
	clustertest.WaitExecution(t, marks, up, "load", finishWithin)
	old := c.Leader()
	old.Kill9()
	c.WaitLeader(t, failoverWithin, old)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.WaitFinished(t, up, finishWithin)
	c.WaitFinished(t, id, finishWithin)
	c.AssertRanOnce(t, up, marks)
	w := assertMasterTaskOnce(t, c, id, marks, "wait", "publish")
	if !strings.HasPrefix(w.Message, "satisfied") {
		t.Fatalf("dependent's message: %q", w.Message)
	}
	c.AssertNoStuckRows(t)
}

// TestSubWorkflowCrashPoints kills the leader at each step of a child's
// life (master-1 kills itself at the point; master-2 takes over): before
// the child is written, after it is written and before it is claimed, and
// after it ended before its parent's attempt did. Every time there is
// exactly one child, the parent's attempt is the only one and succeeds,
// every worker task ran once and nothing is stuck.
func TestSubWorkflowCrashPoints(t *testing.T) {
	for _, point := range []string{failpoint.BeforeStartChild, failpoint.AfterStartChild, failpoint.BeforeEndParentTask} {
		t.Run(point, func(t *testing.T) {
			c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout,
				Env: map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + point}}})
			marks := t.TempDir()
			c.Apply(t, spec.Workflow{Name: "leaf", Tasks: []spec.Task{task(marks, "a", "")}})
			c.Apply(t, spec.Workflow{Name: "root", Tasks: []spec.Task{
				logicTask(t, "child", "sub_workflow", map[string]any{"workflow": "leaf"}),
				task(marks, "after", "", "child"),
			}})
			id := c.Run(t, "root")
			crashed := c.Masters[0]
			if err := crashed.Wait(failoverWithin); err == nil {
				t.Fatalf("%s exited cleanly; want it killed by the failpoint", crashed.Name)
			}
			if log := crashed.Log(); !strings.Contains(log, "failpoint "+point+": killing the process") {
				t.Fatalf("%s died, but not at %s:\n%s", crashed.Name, point, crashed.LogTail(30))
			}
			c.WaitLeader(t, failoverWithin, crashed)
			c.WaitFinished(t, id, finishWithin)
			pt := assertMasterTaskOnce(t, c, id, marks, "child", "after")
			kids := instancesOf(t, c, "leaf")
			if len(kids) != 1 || pt.ChildInstanceID != kids[0].ID {
				t.Fatalf("want exactly one child, that of task instance %d: %+v", pt.ID, kids)
			}
			c.AssertRanOnce(t, kids[0].ID, marks)
			c.AssertNoStuckRows(t)
		})
	}
}
