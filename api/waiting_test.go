package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestWaitsFromTheRows serves the waits the API derives from the DB alone
// (no master runs here: the rows are written as a master would): queued
// behind the tasks of an older instance, waiting for upstream, retry at
// the failed attempt's end plus the interval, a reason the dispatcher wrote
// on the instance about one task's group (the other task is only queued),
// and a wait a task's holder recorded (a dependent task's).
func TestWaitsFromTheRows(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	b.mustWorkflow("p")
	older, newer, third := b.mustRun("p", ""), b.mustRun("p", ""), b.mustRun("p", "")
	if _, err := b.store.InstanceClaimCommands(ctx, "m1:1", 1, 10); err != nil {
		t.Fatal(err)
	}
	end := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rows := []*model.TaskInstance{
		{WorkflowInstanceID: older.ID, Name: "extract", Type: "shell", State: model.TaskSubmitted, Attempt: 1},
		{WorkflowInstanceID: newer.ID, Name: "extract", Type: "shell", State: model.TaskSubmitted, Attempt: 1},
	}
	if err := b.store.TaskInsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	task := func(d InstanceDetail, id int64) TaskInstance {
		for _, tk := range d.Tasks {
			if tk.ID == id {
				return tk
			}
		}
		t.Fatalf("task %d not in %+v", id, d.Tasks)
		return TaskInstance{}
	}
	d := b.detail(newer.ID)
	if w := task(d, rows[1].ID).Wait; w == nil || w.Cause != "queue" || w.Ahead == nil || *w.Ahead != 1 {
		t.Fatalf("newer extract wait %+v, want queued behind 1 (the older's)", w)
	}
	if len(d.Pending) != 1 || d.Pending[0].Name != "load" || d.Pending[0].Wait.Cause != "upstream" ||
		len(d.Pending[0].Wait.Upstream) != 1 || d.Pending[0].Wait.Upstream[0] != "extract" ||
		d.Pending[0].Wait.Reason != "waiting for upstream extract" {
		t.Fatalf("pending %+v, want load waiting for upstream extract", d.Pending)
	}
	// pending_limit bounds the list, pending_total still counts it all.
	var few InstanceDetail
	b.get("/api/v1/instances/"+itoa(newer.ID)+"?pending_limit=0").want(t, http.StatusOK).json(t, &few)
	if len(few.Pending) != 0 || few.PendingTotal != 1 || d.PendingTotal != 1 {
		t.Fatalf("pending_limit=0: %d pending, pending_total %d (unlimited: %d); want none, 1 (1)", len(few.Pending), few.PendingTotal, d.PendingTotal)
	}
	b.get("/api/v1/instances/"+itoa(newer.ID)+"?pending_limit=-1").want(t, http.StatusBadRequest)
	var bare InstanceDetail
	b.get("/api/v1/instances/"+itoa(newer.ID)+"?waits=false").want(t, http.StatusOK).json(t, &bare)
	if len(bare.Pending) != 0 || task(bare, rows[1].ID).Wait != nil || task(bare, rows[1].ID).State != "submitted" {
		t.Fatalf("waits=false: pending %+v, wait %+v; want the tasks without waits", bare.Pending, task(bare, rows[1].ID).Wait)
	}
	b.get("/api/v1/instances/"+itoa(newer.ID)+"?waits=maybe").want(t, http.StatusBadRequest)
	if w := task(b.detail(older.ID), rows[0].ID).Wait; w == nil || w.Cause != "queue" || *w.Ahead != 0 {
		t.Fatalf("older extract wait %+v, want queued behind 0", w)
	}
	var one TaskInstance
	b.get("/api/v1/task-instances/"+itoa(rows[1].ID)).want(t, http.StatusOK).json(t, &one)
	if one.Wait == nil || one.Wait.Cause != "queue" || *one.Wait.Ahead != 1 {
		t.Fatalf("task show wait %+v", one.Wait)
	}

	// The holder's own wait wins (a dependent task's).
	if err := b.store.TaskSetWait(ctx, rows[1].ID, string(model.WaitDependent), "waiting on p/upstream_wf"); err != nil {
		t.Fatal(err)
	}
	if w := task(b.detail(newer.ID), rows[1].ID).Wait; w == nil || w.Cause != "dependent" || w.Reason != "waiting on p/upstream_wf" {
		t.Fatalf("dependent wait %+v", w)
	}

	// A failed attempt and its delayed retry: retry at end + 30 s (etlYAML).
	retry := []*model.TaskInstance{
		{WorkflowInstanceID: third.ID, Name: "extract", Type: "shell", State: model.TaskFailed, Attempt: 1, EndTime: &end},
		{WorkflowInstanceID: third.ID, Name: "extract", Type: "shell", State: model.TaskDelayed, Attempt: 2},
	}
	if err := b.store.TaskInsert(ctx, retry); err != nil {
		t.Fatal(err)
	}
	w := task(b.detail(third.ID), retry[1].ID).Wait
	if w == nil || w.Cause != "retry" || w.RetryAt == nil || !w.RetryAt.Equal(end.Add(30*time.Second)) ||
		w.Reason != "retry at 2026-03-01T10:00:30Z" {
		t.Fatalf("retry wait %+v, want retry at %v", w, end.Add(30*time.Second))
	}

	// The dispatcher's reason on the instance names one task's task group:
	// that task waits for it, the other (in no group) is only queued.
	grouped := []*model.TaskInstance{
		{WorkflowInstanceID: newer.ID, Name: "load", Type: "shell", State: model.TaskSubmitted, Attempt: 1, TaskGroup: "tg"},
	}
	if err := b.store.TaskSetWait(ctx, rows[1].ID, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := b.store.TaskInsert(ctx, grouped); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		reason, cause, other string
		task                 *model.TaskInstance
	}{
		{model.WaitTaskGroupReason("tg", 1, 1), "task_group", "queue", grouped[0]},
		{model.WaitPlatformReason(4), "platform", "platform", grouped[0]},
		{model.WaitNoWorkerReason("default"), "queue", "queue", grouped[0]}, // rows have worker group ""
	} {
		if err := b.store.InstanceSetReason(ctx, newer.ID, c.reason); err != nil {
			t.Fatal(err)
		}
		d := b.detail(newer.ID)
		if w := task(d, c.task.ID).Wait; w == nil || w.Cause != c.cause {
			t.Errorf("reason %q: load wait %+v, want %s", c.reason, w, c.cause)
		}
		if w := task(d, rows[1].ID).Wait; w == nil || w.Cause != c.other {
			t.Errorf("reason %q: extract wait %+v, want %s", c.reason, w, c.other)
		}
	}
}

func TestWorkerSkipped(t *testing.T) {
	for _, c := range []struct {
		overloaded      bool
		why             string
		slots, inFlight int
		skipped         bool
		reason          string
	}{
		{false, "", 4, 7, false, ""},
		{false, "", 4, 8, true, "full: 8 tasks in flight for 4 slots (at most 2 x slots)"},
		{true, "cpu 95% >= 90%", 4, 0, true, "overloaded: cpu 95% >= 90%"},
		{true, "", 4, 0, true, "overloaded"},
		{false, "", 0, 3, false, ""}, // no slots reported: not judged full
	} {
		s, r := skipped(c.overloaded, c.why, c.slots, c.inFlight)
		if s != c.skipped || r != c.reason {
			t.Errorf("skipped(%v, %q, %d, %d) = %v %q, want %v %q", c.overloaded, c.why, c.slots, c.inFlight, s, r, c.skipped, c.reason)
		}
	}
}
