package api

import (
	"slices"
	"testing"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// settled infers the succeeded tasks from the rows that did not succeed,
// and says when the count of succeeded rows does not bear it out.
func TestSettled(t *testing.T) {
	g, err := dag.New([]string{"a", "b", "c", "join", "cond", "after"},
		[][2]string{{"a", "join"}, {"b", "join"}, {"c", "join"}, {"b", "cond"}, {"cond", "after"}})
	if err != nil {
		t.Fatal(err)
	}
	row := func(name string, st model.TaskState, attempt int, superseded bool) store.AttemptState {
		return store.AttemptState{Name: name, State: st, Attempt: attempt, Superseded: superseded}
	}
	for _, c := range []struct {
		name      string
		rows      []store.AttemptState
		succeeded int
		handles   map[string]bool
		done      []string
		ok        bool
	}{
		{"fan-out with one running", []store.AttemptState{row("b", model.TaskRunning, 1, false), row("cond", model.TaskSubmitted, 1, false)},
			2, nil, []string{"a", "c"}, true},
		{"a retry that succeeded", []store.AttemptState{row("a", model.TaskFailed, 1, true), row("b", model.TaskRunning, 1, false),
			row("cond", model.TaskSubmitted, 1, false)}, 2, nil, []string{"a", "c"}, true},
		{"a failure handled by conditions", []store.AttemptState{row("b", model.TaskFailed, 1, false)},
			4, map[string]bool{"cond": true}, []string{"a", "c", "cond", "after"}, true},
		{"a ready task not written yet", []store.AttemptState{row("b", model.TaskRunning, 1, false), row("cond", model.TaskSubmitted, 1, false)},
			1, nil, nil, false},
		{"nothing written", nil, 0, nil, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			done, ok := settled(g, c.handles, store.Unsettled{Tasks: c.rows, Succeeded: c.succeeded})
			slices.Sort(done)
			want := slices.Clone(c.done)
			slices.Sort(want)
			if ok != c.ok || (ok && !slices.Equal(done, want)) {
				t.Fatalf("settled = %v, %v; want %v, %v", done, ok, want, c.ok)
			}
		})
	}
}
