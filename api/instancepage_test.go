package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// seedTasks claims a run of p and writes n tasks to it: the first half
// succeeded (task 0 with an output), the rest submitted.
func seedTasks(t *testing.T, b *bundle, n int) Instance {
	t.Helper()
	ctx := context.Background()
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	if _, err := b.store.InstanceClaimCommands(ctx, "master-1:5678", 1, 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	tasks := make([]*model.TaskInstance, n)
	for i := range tasks {
		tasks[i] = &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: fmt.Sprintf("t%d", i), Type: "shell",
			State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now}
		if i < n/2 {
			tasks[i].State, tasks[i].StartTime, tasks[i].EndTime = model.TaskSucceeded, &now, &now
		}
	}
	tasks[0].Outputs = map[string]string{"rows": "7"}
	if err := b.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	return inst
}

// The instance answer pages its tasks and counts them per state: a large
// instance is watched without reading every task; the default page still
// holds all 1,500 (before the page, every GET listed all and had no
// counts).
func TestInstanceTaskPage(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	inst := seedTasks(t, b, 1500)
	path := "/api/v1/instances/" + itoa(inst.ID)

	var d InstanceDetail
	b.get(path).want(t, http.StatusOK).json(t, &d)
	if len(d.Tasks) != 1500 || d.TasksTotal != 1500 || d.Tasks[0].Name != "t0" ||
		d.TaskCounts["succeeded"] != 750 || d.TaskCounts["submitted"] != 750 {
		t.Fatalf("default page: %d tasks, total %d, counts %v", len(d.Tasks), d.TasksTotal, d.TaskCounts)
	}
	if len(d.Outputs) != 1 || d.Outputs[0].Task != "t0" {
		t.Fatalf("outputs %+v, want t0's", d.Outputs)
	}

	d = InstanceDetail{}
	b.get(path+"?tasks_limit=1000").want(t, http.StatusOK).json(t, &d)
	if len(d.Tasks) != 1000 || d.Tasks[999].Name != "t999" || d.TasksTotal != 1500 {
		t.Fatalf("first page of 1000: %d tasks, total %d", len(d.Tasks), d.TasksTotal)
	}
	d = InstanceDetail{}
	b.get(path+"?tasks_limit=10&tasks_offset=1495").want(t, http.StatusOK).json(t, &d)
	if len(d.Tasks) != 5 || d.Tasks[0].Name != "t1495" || d.TasksTotal != 1500 {
		t.Fatalf("last page: %d tasks from %+v, total %d", len(d.Tasks), d.Tasks, d.TasksTotal)
	}
	// No tasks, only the counts and the outputs: what a watcher needs.
	d = InstanceDetail{}
	b.get(path+"?tasks_limit=0").want(t, http.StatusOK).json(t, &d)
	if len(d.Tasks) != 0 || d.Tasks == nil || d.TasksTotal != 1500 || len(d.Outputs) != 1 {
		t.Fatalf("no-task page: %+v", d)
	}

	for _, q := range []string{"tasks_limit=-1", "tasks_limit=10001", "tasks_limit=x", "tasks_offset=-2", "wait=forever", "wait=-1s", "wait=2m"} {
		e := b.get(path+"?"+q).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if name, _, _ := strings.Cut(q, "="); !strings.Contains(e.Message, name) {
			t.Fatalf("%s: message %q does not name %s", q, e.Message, name)
		}
	}
}

// ?wait= answers when the instance ends, woken by the end's write, not at
// the end of the wait (before, wait was ignored: the GET answered at once
// with the instance running).
func TestInstanceWaitEnd(t *testing.T) {
	t.Parallel()
	// No re-reads while waiting: only the end's signal can answer before
	// the 50 s wait is over.
	b := setup(t, options{endRecheck: time.Hour})
	inst := seedTasks(t, b, 2)
	path := "/api/v1/instances/" + itoa(inst.ID) + "?tasks_limit=0&wait=50s"

	type answer struct {
		d    InstanceDetail
		took time.Duration
	}
	got := make(chan answer, 1)
	t0 := time.Now()
	go func() {
		var d InstanceDetail
		r := b.get(path)
		if r.status == http.StatusOK {
			r.json(t, &d)
		}
		got <- answer{d, time.Since(t0)}
	}()
	// The GET is waiting: it has not answered while the instance runs.
	select {
	case a := <-got:
		t.Fatalf("answered before the end: %+v after %v", a.d.Instance, a.took)
	case <-time.After(300 * time.Millisecond): // proving an absence: it keeps waiting
	}
	ended := time.Now()
	if err := b.store.InstanceFinish(context.Background(), inst.ID, model.WorkflowSucceeded, ended, ""); err != nil {
		t.Fatal(err)
	}
	// Woken by the write, not by the 50 s wait (re-reads are off).
	var a answer
	select {
	case a = <-got:
	case <-time.After(30 * time.Second):
		t.Fatalf("not answered %v after the end: the write did not wake the wait", time.Since(ended))
	}
	if a.d.State != "succeeded" {
		t.Fatalf("answer %+v, want the succeeded instance", a.d.Instance)
	}

	// A finished instance is answered at once; a short wait on a running
	// one answers it running when the wait is over.
	other := b.mustRun("p", "")
	t1 := time.Now()
	var d InstanceDetail
	b.get("/api/v1/instances/"+itoa(other.ID)+"?wait=100ms").want(t, http.StatusOK).json(t, &d)
	if took := time.Since(t1); d.State == "succeeded" || took < 100*time.Millisecond {
		t.Fatalf("short wait: state %s after %v", d.State, took)
	}
}
