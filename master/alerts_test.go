package master

import (
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
)

func TestAlertTrigger(t *testing.T) {
	for _, c := range []struct {
		e    model.Event
		want string
	}{
		{model.Event{Kind: model.EventInstance, State: "failed"}, spec.AlertFailure},
		{model.Event{Kind: model.EventInstance, State: "succeeded"}, spec.AlertSuccess},
		{model.Event{Kind: model.EventInstance, State: "running"}, ""},
		{model.Event{Kind: model.EventInstance, State: "stopped"}, ""},
		{model.Event{Kind: model.EventTimeout, State: "timeout_warning"}, spec.AlertTimeout},
		{model.Event{Kind: model.EventTask, State: "submitted", Attempt: 1}, ""},
		{model.Event{Kind: model.EventTask, State: "delayed", Attempt: 2}, spec.AlertRetry},
		{model.Event{Kind: model.EventTask, State: "submitted", Attempt: 3}, spec.AlertRetry},
		{model.Event{Kind: model.EventTask, State: "failed", Attempt: 3}, ""},
	} {
		got, ok := alertTrigger(c.e)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%+v: %q %v, want %q", c.e, got, ok, c.want)
		}
	}
	e := model.Event{InstanceID: 7, Attempt: 2}
	if alertKey(spec.AlertFailure, e, "a") == alertKey(spec.AlertFailure, model.Event{InstanceID: 7, Attempt: 1}, "a") {
		t.Fatal("a rerun's failure has the same key as the first run's")
	}
}

func TestBackoffAndDeadlineOf(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 20: time.Minute} {
		if got := backoff(time.Second, time.Minute, n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
	created := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	sched := time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)
	inst := model.WorkflowInstance{CreatedAt: created}
	if at, ok := deadlineOf("2h", inst); !ok || !at.Equal(created.Add(2*time.Hour)) {
		t.Errorf("2h after creation: %v %v", at, ok)
	}
	inst.ScheduleTime, inst.Timezone = &sched, "Asia/Tokyo" // 2026-01-02 08:00 there
	if at, ok := deadlineOf("06:00", inst); !ok || !at.Equal(time.Date(2026, 1, 2, 21, 0, 0, 0, time.UTC)) {
		t.Errorf("06:00 Tokyo after the schedule time: %v %v", at, ok)
	}
	if _, ok := deadlineOf("", inst); ok {
		t.Error("no deadline set, yet one")
	}
}
