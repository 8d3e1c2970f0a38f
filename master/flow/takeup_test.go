package flow

import (
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestTakeUp: what a rebuild does with each restored latest attempt.
func TestTakeUp(t *testing.T) {
	cases := []struct {
		st       model.TaskState
		why      Reopening
		inMaster bool
		decides  bool
		want     Take
	}{
		{model.TaskSubmitted, Recover, false, false, Requeue},
		{model.TaskSubmitted, Recover, true, false, Continue},
		{model.TaskDispatched, Recover, false, false, Ask},
		{model.TaskRunning, Resume, false, false, Ask},
		{model.TaskRunning, Recover, true, false, Continue},
		{model.TaskPaused, Recover, false, false, Leave},
		{model.TaskPaused, Rerun, false, false, Leave},
		{model.TaskPaused, Resume, false, false, Unpause},
		{model.TaskPaused, Resume, false, true, RunAnew},
		{model.TaskPaused, Resume, true, false, Unpause},
		{model.TaskKilled, Resume, false, false, RunAnew},
		{model.TaskKilled, Recover, false, false, Leave},
		{model.TaskKilled, RecoverFailed, false, false, Leave},
		{model.TaskNeedFaultTolerance, Recover, false, false, RunAnew},
		{model.TaskNeedFaultTolerance, Resume, true, false, RunAnew},
		{model.TaskDelayed, Recover, false, false, Delay},
		{model.TaskSucceeded, Resume, false, false, Leave},
		{model.TaskFailed, Recover, false, false, Leave},
		{model.TaskSkipped, Recover, false, false, Leave},
		{model.TaskForcedSuccess, Resume, false, false, Leave},
	}
	for _, c := range cases {
		if got := TakeUp(c.st, c.why, c.inMaster, c.decides); got != c.want {
			t.Errorf("TakeUp(%s, reopening %d, inMaster %v, decides %v) = %d, want %d", c.st, c.why, c.inMaster, c.decides, got, c.want)
		}
	}
}

// TestRedone: recover_failed runs again what failed the instance, not a
// failure a conditions task handled.
func TestRedone(t *testing.T) {
	f := New(graph(t, "a>c", "b>d"), map[string]Task{"c": {HandlesFailure: true}}, false)
	for _, c := range []struct {
		name string
		st   model.TaskState
		want bool
	}{
		{"a", model.TaskFailed, false}, // handled by c
		{"b", model.TaskFailed, true},
		{"b", model.TaskKilled, true},
		{"d", model.TaskSucceeded, false},
		{"d", model.TaskSkipped, false},
	} {
		if got := f.Redone(c.name, c.st); got != c.want {
			t.Errorf("Redone(%s, %s) = %v, want %v", c.name, c.st, got, c.want)
		}
	}
}

// TestKillOf: how a kill of each state is carried out.
func TestKillOf(t *testing.T) {
	for _, c := range []struct {
		st       model.TaskState
		inMaster bool
		want     Kill
	}{
		{model.TaskSubmitted, false, KillTakeBack},
		{model.TaskSubmitted, true, KillCancel},
		{model.TaskDelayed, false, KillTakeBack},
		{model.TaskDelayed, true, KillTakeBack},
		{model.TaskDispatched, false, KillCancel},
		{model.TaskRunning, false, KillCancel},
		{model.TaskRunning, true, KillCancel},
		{model.TaskSucceeded, false, KillIgnored},
		{model.TaskFailed, false, KillIgnored},
		{model.TaskKilled, false, KillIgnored},
		{model.TaskPaused, false, KillIgnored},
		{model.TaskSkipped, false, KillIgnored},
	} {
		if got := KillOf(c.st, c.inMaster); got != c.want {
			t.Errorf("KillOf(%s, inMaster %v) = %d, want %d", c.st, c.inMaster, got, c.want)
		}
	}
}
