package flow

import (
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestNumbering: each new attempt's number, budget and supersession, as
// the owner writes them, event by event.
func TestNumbering(t *testing.T) {
	type write struct {
		name string
		kind Kind
		want Attempt
	}
	cases := []struct {
		name    string
		restore func(f *Flow) // the rows read back (rebuild), if any
		writes  []write
	}{
		{name: "a new task is attempt 1 of its own budget",
			writes: []write{{"a", Fresh, Attempt{Number: 1, Base: 1}}, {"b", Skipped, Attempt{Number: 1, Base: 1}}}},
		{name: "retries and lost attempts number on in the budget, superseding",
			writes: []write{
				{"a", Fresh, Attempt{Number: 1, Base: 1}},
				{"a", Retried, Attempt{Number: 2, Base: 1, Supersedes: true}},
				{"a", Again, Attempt{Number: 3, Base: 1, Supersedes: true}},
			}},
		{name: "restored rows continue their numbering and budget",
			restore: func(f *Flow) { f.Restore("a", model.TaskNeedFaultTolerance, 4, 3, nil) },
			writes:  []write{{"a", Again, Attempt{Number: 5, Base: 3, Supersedes: true}}}},
		{name: "a row from before retry_base keeps base 0",
			restore: func(f *Flow) { f.Restore("a", model.TaskRunning, 2, 0, nil) },
			writes:  []write{{"a", Retried, Attempt{Number: 3, Base: 0, Supersedes: true}}}},
		{name: "a rerun numbers on from the forgotten attempt, in a new budget, once",
			restore: func(f *Flow) { f.Redo("a", 2) },
			writes: []write{
				{"a", Fresh, Attempt{Number: 3, Base: 3, Supersedes: true}},
				{"a", Retried, Attempt{Number: 4, Base: 3, Supersedes: true}},
			}},
		{name: "a redone task the new run skips is superseded by the skip",
			restore: func(f *Flow) { f.Redo("b", 1) },
			writes:  []write{{"b", Skipped, Attempt{Number: 2, Base: 2, Supersedes: true}}}},
		{name: "a restored task that is not redone is not renumbered by Restore alone",
			restore: func(f *Flow) { f.Redo("a", 5); f.Restore("a", model.TaskRunning, 6, 6, nil) },
			writes:  []write{{"a", Again, Attempt{Number: 7, Base: 6, Supersedes: true}}}},
		{name: "unknown task", writes: []write{{"zz", Fresh, Attempt{}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(graph(t, "a>b"), nil, false)
			if c.restore != nil {
				c.restore(f)
			}
			for i, w := range c.writes {
				if got := f.Number(w.name, w.kind); got != w.want {
					t.Fatalf("write %d (%s, kind %d): %+v, want %+v", i, w.name, w.kind, got, w.want)
				}
			}
		})
	}
}

// TestWriteOf: how a new attempt is written, by halt, dry run and type.
func TestWriteOf(t *testing.T) {
	specs := map[string]Task{"c": {Decides: true}}
	cases := []struct {
		name   string
		setup  func(f *Flow)
		task   string
		want   Write
		heldAs model.TaskState
	}{
		{name: "queued", task: "a", want: Queue, heldAs: model.TaskPaused},
		{name: "a branching type decides as written", task: "c", want: Decide, heldAs: model.TaskPaused},
		{name: "a dry run ends any task as written", setup: func(f *Flow) { f.DryRun() }, task: "a", want: Dry, heldAs: model.TaskPaused},
		{name: "a dry run takes every branch", setup: func(f *Flow) { f.DryRun() }, task: "c", want: Dry, heldAs: model.TaskPaused},
		{name: "a pause holds it paused", setup: func(f *Flow) { f.Halt(Pause) }, task: "a", want: Held, heldAs: model.TaskPaused},
		{name: "a pause holds a branching type", setup: func(f *Flow) { f.Halt(Pause) }, task: "c", want: Held, heldAs: model.TaskPaused},
		{name: "a stop holds it killed", setup: func(f *Flow) { f.Halt(Stop) }, task: "a", want: Held, heldAs: model.TaskKilled},
		{name: "a halt wins over a dry run", setup: func(f *Flow) { f.DryRun(); f.Halt(Stop) }, task: "a", want: Held, heldAs: model.TaskKilled},
		{name: "a stop is not undone by a pause", setup: func(f *Flow) { f.Halt(Stop); f.Halt(Pause) }, task: "a", want: Held, heldAs: model.TaskKilled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(graph(t, "a>c"), specs, false)
			if c.setup != nil {
				c.setup(f)
			}
			if got := f.WriteOf(c.task); got != c.want {
				t.Fatalf("WriteOf(%s) = %d, want %d", c.task, got, c.want)
			}
			if got := f.HeldAs(); got != c.heldAs {
				t.Fatalf("HeldAs = %s, want %s", got, c.heldAs)
			}
		})
	}
}

// TestHaltRequests: which pause and stop requests begin a halt; the
// rest change nothing (the owner notes them as "already ...").
func TestHaltRequests(t *testing.T) {
	cases := []struct {
		name     string
		requests []Halt
		began    []bool
		halting  Halt
	}{
		{name: "pause", requests: []Halt{Pause}, began: []bool{true}, halting: Pause},
		{name: "stop", requests: []Halt{Stop}, began: []bool{true}, halting: Stop},
		{name: "pause twice", requests: []Halt{Pause, Pause}, began: []bool{true, false}, halting: Pause},
		{name: "a stop overrides a pause", requests: []Halt{Pause, Stop}, began: []bool{true, true}, halting: Stop},
		{name: "a pause does not undo a stop", requests: []Halt{Stop, Pause}, began: []bool{true, false}, halting: Stop},
		{name: "stop twice", requests: []Halt{Stop, Stop}, began: []bool{true, false}, halting: Stop},
		{name: "running is not a halt", requests: []Halt{Running}, began: []bool{false}, halting: Running},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(graph(t, "a"), nil, false)
			for i, h := range c.requests {
				if got := f.Halt(h); got != c.began[i] {
					t.Fatalf("request %d (%q): began %v, want %v", i, h, got, c.began[i])
				}
			}
			if f.Halting() != c.halting {
				t.Fatalf("halting %q, want %q", f.Halting(), c.halting)
			}
		})
	}
}
