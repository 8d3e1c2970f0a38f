package cluster

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestBranchAcrossLeaderKill kills -9 the leader while the task before a
// conditions task runs (and then fails). The new leader takes the failure,
// decides the branch once: the failure branch runs once, the success
// branch is one skipped row that never reached a worker, and the instance
// succeeds with the failed task still failed.
func TestBranchAcrossLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	check := spec.Task{Name: "check", Type: "conditions", DependsOn: []string{"ingest"}, Fields: map[string]json.RawMessage{
		"on_success": json.RawMessage(`["publish"]`), "on_failure": json.RawMessage(`["page"]`)}}
	c.Apply(t, spec.Workflow{Name: "branchy", Tasks: []spec.Task{
		task(marks, "ingest", sleep(time.Second)+"; exit 3"),
		check,
		task(marks, "publish", "", "check"),
		task(marks, "page", sleep(200*time.Millisecond), "check"),
		task(marks, "after", "", "page", "publish"),
	}})
	id := c.Run(t, "branchy")
	clustertest.WaitExecution(t, marks, id, "ingest", finishWithin)
	old := c.Masters[0]
	old.Kill9()
	c.WaitLeader(t, failoverWithin, old)

	inst := c.WaitFinished(t, id, finishWithin)
	if inst.State != model.WorkflowSucceeded {
		t.Fatalf("instance %s (%s)", inst.State, inst.Reason)
	}
	rows := c.Tasks(t, id)
	runs := map[string]int{}
	for _, e := range clustertest.Executions(t, marks, id) {
		runs[e.Task]++
	}
	last := func(name string) model.TaskInstance { r := rows[name]; return r[len(r)-1] }
	for name, want := range map[string]model.TaskState{"ingest": model.TaskFailed, "check": model.TaskSucceeded,
		"page": model.TaskSucceeded, "after": model.TaskSucceeded, "publish": model.TaskSkipped} {
		if len(rows[name]) == 0 || last(name).State != want {
			t.Fatalf("task %s: %v, want its last attempt %s", name, rows[name], want)
		}
	}
	if len(rows["check"]) != 1 || len(rows["publish"]) != 1 || last("publish").Host != "" {
		t.Fatalf("the branch was decided more than once: check %v, publish %v", rows["check"], rows["publish"])
	}
	if runs["ingest"] != 1 || runs["page"] != 1 || runs["after"] != 1 || runs["publish"] != 0 {
		t.Fatalf("executions %v", runs)
	}
	c.AssertNoStuckRows(t)
}
