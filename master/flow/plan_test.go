package flow

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestPlan: the rows a flush writes for gathered decisions, each numbered,
// superseding or not, written as the machine says.
func TestPlan(t *testing.T) {
	type want struct {
		name  string
		kind  Kind
		at    Attempt
		write Write
		state model.TaskState
		due   time.Time
	}
	row := func(w want) Row {
		return Row{Name: w.name, Kind: w.kind, Attempt: w.at, Write: w.write, State: w.state, Due: w.due}
	}
	one := Attempt{Number: 1, Base: 1}
	cases := []struct {
		name     string
		specs    map[string]Task
		setup    func(f *Flow) // before Plan: restores, halts, a dry run
		d        Decisions
		limit    int
		failedAt map[string]time.Time
		want     []want
		rest     Decisions
	}{
		{name: "ready tasks are first attempts, queued",
			d:    Decisions{Submit: []string{"a", "c"}},
			want: []want{{"a", Fresh, one, Queue, model.TaskSubmitted, time.Time{}}, {"c", Fresh, one, Queue, model.TaskSubmitted, time.Time{}}}},
		{name: "order: ready, again, retries, skips",
			setup: func(f *Flow) {
				f.Restore("a", model.TaskNeedFaultTolerance, 1, 1, nil)
				f.Restore("b", model.TaskFailed, 2, 1, nil)
			},
			d:     Decisions{Skip: []string{"d"}, Retry: []string{"b"}, Again: []string{"a"}, Submit: []string{"c"}},
			specs: map[string]Task{"b": {Retries: 3}},
			want: []want{
				{"c", Fresh, one, Queue, model.TaskSubmitted, time.Time{}},
				{"a", Again, Attempt{Number: 2, Base: 1, Supersedes: true}, Queue, model.TaskSubmitted, time.Time{}},
				{"b", Retried, Attempt{Number: 3, Base: 1, Supersedes: true}, Queue, model.TaskSubmitted, time.Time{}},
				{"d", Skipped, one, Skip, model.TaskSkipped, time.Time{}},
			}},
		{name: "a retry waits out its interval from the failed attempt's end",
			specs:    map[string]Task{"a": {Retries: 1, RetryInterval: time.Minute}},
			setup:    func(f *Flow) { f.Restore("a", model.TaskFailed, 1, 1, nil) },
			failedAt: map[string]time.Time{"a": t0.Add(-20 * time.Second)},
			d:        Decisions{Retry: []string{"a"}},
			want:     []want{{"a", Retried, Attempt{Number: 2, Base: 1, Supersedes: true}, Queue, model.TaskDelayed, t0.Add(40 * time.Second)}}},
		{name: "a retry whose interval passed (the failure is old) is submitted",
			specs:    map[string]Task{"a": {Retries: 1, RetryInterval: time.Minute}},
			setup:    func(f *Flow) { f.Restore("a", model.TaskFailed, 1, 1, nil) },
			failedAt: map[string]time.Time{"a": t0.Add(-2 * time.Minute)},
			d:        Decisions{Retry: []string{"a"}},
			want:     []want{{"a", Retried, Attempt{Number: 2, Base: 1, Supersedes: true}, Queue, model.TaskSubmitted, time.Time{}}}},
		{name: "a retry whose failure's end is unknown counts from now",
			specs: map[string]Task{"a": {Retries: 1, RetryInterval: time.Minute}},
			setup: func(f *Flow) { f.Restore("a", model.TaskFailed, 1, 1, nil) },
			d:     Decisions{Retry: []string{"a"}},
			want:  []want{{"a", Retried, Attempt{Number: 2, Base: 1, Supersedes: true}, Queue, model.TaskDelayed, t0.Add(time.Minute)}}},
		{name: "a retry without interval is submitted at once",
			specs:    map[string]Task{"a": {Retries: 1}},
			setup:    func(f *Flow) { f.Restore("a", model.TaskFailed, 1, 1, nil) },
			failedAt: map[string]time.Time{"a": t0},
			d:        Decisions{Retry: []string{"a"}},
			want:     []want{{"a", Retried, Attempt{Number: 2, Base: 1, Supersedes: true}, Queue, model.TaskSubmitted, time.Time{}}}},
		{name: "a pause holds new rows paused, a delayed retry too",
			specs: map[string]Task{"a": {Retries: 1, RetryInterval: time.Minute}},
			setup: func(f *Flow) { f.Restore("a", model.TaskFailed, 1, 1, nil); f.Halt(Pause) },
			d:     Decisions{Submit: []string{"c"}, Retry: []string{"a"}, Skip: []string{"d"}},
			want: []want{
				{"c", Fresh, one, Held, model.TaskPaused, time.Time{}},
				{"a", Retried, Attempt{Number: 2, Base: 1, Supersedes: true}, Held, model.TaskPaused, time.Time{}},
				{"d", Skipped, one, Skip, model.TaskSkipped, time.Time{}},
			}},
		{name: "a stop holds new rows killed",
			setup: func(f *Flow) { f.Restore("a", model.TaskNeedFaultTolerance, 3, 2, nil); f.Halt(Stop) },
			d:     Decisions{Again: []string{"a"}},
			want:  []want{{"a", Again, Attempt{Number: 4, Base: 2, Supersedes: true}, Held, model.TaskKilled, time.Time{}}}},
		{name: "a dry run ends every task as written, branching ones too",
			specs: map[string]Task{"b": {Decides: true}},
			setup: func(f *Flow) { f.DryRun() },
			d:     Decisions{Submit: []string{"a", "b"}},
			want:  []want{{"a", Fresh, one, Dry, model.TaskSubmitted, time.Time{}}, {"b", Fresh, one, Dry, model.TaskSubmitted, time.Time{}}}},
		{name: "a branching type is decided as written",
			specs: map[string]Task{"b": {Decides: true}},
			d:     Decisions{Submit: []string{"b"}},
			want:  []want{{"b", Fresh, one, Decide, model.TaskSubmitted, time.Time{}}}},
		{name: "a rerun's first row numbers on and supersedes the forgotten one",
			setup: func(f *Flow) { f.Redo("a", 4) },
			d:     Decisions{Submit: []string{"a"}},
			want:  []want{{"a", Fresh, Attempt{Number: 5, Base: 5, Supersedes: true}, Queue, model.TaskSubmitted, time.Time{}}}},
		{name: "the limit bounds ready rows only; the rest waits",
			setup: func(f *Flow) { f.Restore("a", model.TaskNeedFaultTolerance, 1, 1, nil) },
			d:     Decisions{Submit: []string{"b", "c", "d"}, Again: []string{"a"}},
			limit: 2,
			want: []want{
				{"b", Fresh, one, Queue, model.TaskSubmitted, time.Time{}},
				{"c", Fresh, one, Queue, model.TaskSubmitted, time.Time{}},
				{"a", Again, Attempt{Number: 2, Base: 1, Supersedes: true}, Queue, model.TaskSubmitted, time.Time{}},
			},
			rest: Decisions{Submit: []string{"d"}}},
		{name: "a name not in the graph writes nothing",
			d: Decisions{Submit: []string{"zz"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(graph(t, "a>b", "c", "d"), c.specs, false)
			if c.setup != nil {
				c.setup(f)
			}
			rows, rest := f.Plan(c.d, PlanIn{Now: t0, Limit: c.limit, FailedAt: func(n string) time.Time { return c.failedAt[n] }})
			var want []Row
			for _, w := range c.want {
				want = append(want, row(w))
			}
			if len(rows) != len(want) {
				t.Fatalf("rows %+v, want %+v", rows, want)
			}
			for i := range rows {
				if rows[i] != want[i] {
					t.Errorf("row %d: %+v, want %+v", i, rows[i], want[i])
				}
			}
			if !slices.Equal(rest.Submit, c.rest.Submit) || !rest.Empty() != !c.rest.Empty() {
				t.Errorf("rest %+v, want %+v", rest, c.rest)
			}
		})
	}
}

// TestThenOf: what follows a row's write, by the state it was written in.
func TestThenOf(t *testing.T) {
	for st, want := range map[model.TaskState]Then{
		model.TaskSubmitted: Launch, model.TaskDelayed: Wait,
		model.TaskPaused: Hold, model.TaskKilled: Hold, model.TaskSkipped: Done,
		model.TaskFailed: Report, model.TaskSucceeded: Report,
	} {
		if got := ThenOf(st); got != want {
			t.Errorf("ThenOf(%s) = %d, want %d", st, got, want)
		}
	}
}

// owner is a pure stand-in for the runner: it writes each plan's rows,
// "runs" what Then launches with the results a case scripts, and feeds the
// ends back, as the runner's flat loop does. It records each row as
// written: name#attempt:state.
type owner struct {
	f       *Flow
	todo    Decisions
	results map[string][]model.TaskState // by task: the result of each run, in order (default succeeded)
	branch  map[string][]string          // a branching task's choice
	haltOn  map[string]Halt              // a halt that begins when the task is launched
	written []string
	running []string
}

func (o *owner) result(name string) model.TaskState {
	if rs := o.results[name]; len(rs) > 0 {
		o.results[name] = rs[1:]
		return rs[0]
	}
	return model.TaskSucceeded
}

func (o *owner) event(name string, st model.TaskState) Event {
	ev := Event{Name: name, State: st}
	if o.f.specs[name].Decides && st.Success() && !o.f.dry {
		ev.Branch, ev.Branched = o.branch[name], true
	}
	return ev
}

func (o *owner) flush() {
	for !o.todo.Empty() {
		rows, rest := o.f.Plan(o.todo, PlanIn{Now: t0, Limit: 2})
		o.todo = rest
		for _, r := range rows {
			st := r.State
			if r.Write == Dry || r.Write == Decide {
				st = o.result(r.Name) // the type's code, run as it is written
			}
			o.written = append(o.written, fmt.Sprintf("%s#%d:%s", r.Name, r.Attempt.Number, r.State))
			switch ThenOf(st) {
			case Launch, Wait: // a delayed one is launched when due: at once here
				o.running = append(o.running, r.Name)
				if h, ok := o.haltOn[r.Name]; ok {
					o.halt(h)
				}
			case Hold:
				o.todo.Add(o.f.Finished(Event{Name: r.Name, State: st}))
			case Report:
				o.todo.Add(o.f.Finished(o.event(r.Name, st)))
			}
		}
	}
}

// halt begins h: what runs is stopped as the runner's haltQueued and kills
// do (a stop kills what runs; a pause lets it finish).
func (o *owner) halt(h Halt) {
	if !o.f.Halt(h) || h != Stop {
		return
	}
	for _, n := range o.running {
		o.todo.Add(o.f.Finished(Event{Name: n, State: model.TaskKilled}))
	}
	o.running = nil
}

func (o *owner) run() {
	o.todo.Add(o.f.Start())
	o.flush()
	for len(o.running) > 0 {
		n := o.running[0]
		o.running = o.running[1:]
		o.todo.Add(o.f.Finished(o.event(n, o.result(n))))
		o.flush()
	}
}

// TestOwnerLoop drives whole runs through Plan and ThenOf the way the
// runner does, checking the rows written and how each run ends.
func TestOwnerLoop(t *testing.T) {
	cases := []struct {
		name    string
		edges   []string
		specs   map[string]Task
		cont    bool
		dry     bool
		results map[string][]model.TaskState
		branch  map[string][]string
		haltOn  map[string]Halt
		written []string
		end     model.WorkflowState
		reason  string
	}{
		{name: "a chain succeeds", edges: []string{"a>b", "b>c"},
			written: []string{"a#1:submitted", "b#1:submitted", "c#1:submitted"}, end: model.WorkflowSucceeded},
		{name: "a retry is written delayed and numbered on",
			edges:   []string{"a>b"},
			specs:   map[string]Task{"a": {Retries: 2, RetryInterval: time.Minute}},
			results: map[string][]model.TaskState{"a": {model.TaskFailed, model.TaskFailed, model.TaskSucceeded}},
			written: []string{"a#1:submitted", "a#2:delayed", "a#3:delayed", "b#1:submitted"}, end: model.WorkflowSucceeded},
		{name: "retries spent: the run fails, nothing after runs",
			edges:   []string{"a>b"},
			specs:   map[string]Task{"a": {Retries: 1}},
			results: map[string][]model.TaskState{"a": {model.TaskFailed, model.TaskFailed}},
			written: []string{"a#1:submitted", "a#2:submitted"}, end: model.WorkflowFailed, reason: "task a failed"},
		{name: "a lost attempt runs again in its budget",
			edges:   []string{"a"},
			results: map[string][]model.TaskState{"a": {model.TaskNeedFaultTolerance, model.TaskSucceeded}},
			written: []string{"a#1:submitted", "a#2:submitted"}, end: model.WorkflowSucceeded},
		{name: "a switch takes one branch; the other is skipped; the join runs",
			edges:   []string{"s>b", "s>c", "b>d", "c>d"},
			specs:   map[string]Task{"s": {Decides: true}},
			branch:  map[string][]string{"s": {"b"}},
			written: []string{"s#1:submitted", "b#1:submitted", "c#1:skipped", "d#1:submitted"}, end: model.WorkflowSucceeded},
		{name: "a conditions task runs after a failure it handles",
			edges:   []string{"a>k", "k>x", "k>y"},
			specs:   map[string]Task{"k": {Decides: true, HandlesFailure: true}},
			results: map[string][]model.TaskState{"a": {model.TaskFailed}},
			branch:  map[string][]string{"k": {"y"}},
			written: []string{"a#1:submitted", "k#1:submitted", "y#1:submitted", "x#1:skipped"}, end: model.WorkflowSucceeded},
		{name: "a failed decision fails the run",
			edges:   []string{"s>b"},
			specs:   map[string]Task{"s": {Decides: true}},
			results: map[string][]model.TaskState{"s": {model.TaskFailed}},
			written: []string{"s#1:submitted"}, end: model.WorkflowFailed, reason: "task s failed"},
		{name: "a dry run ends each task as written, branches all taken",
			edges: []string{"s>b", "s>c"}, dry: true,
			specs:   map[string]Task{"s": {Decides: true}},
			branch:  map[string][]string{"s": {"b"}},
			written: []string{"s#1:submitted", "b#1:submitted", "c#1:submitted"}, end: model.WorkflowSucceeded},
		{name: "a pause holds what becomes ready; the run ends paused",
			edges:   []string{"a>b", "b>c"},
			haltOn:  map[string]Halt{"a": Pause},
			written: []string{"a#1:submitted", "b#1:paused"}, end: model.WorkflowPaused, reason: "paused"},
		{name: "a stop kills what runs, retries nothing; the run ends stopped",
			edges:   []string{"a>b", "c"},
			specs:   map[string]Task{"a": {Retries: 3}},
			haltOn:  map[string]Halt{"c": Stop},
			written: []string{"a#1:submitted", "c#1:submitted"}, end: model.WorkflowStopped, reason: "stopped"},
		{name: "continue: the failure's branch stops, the other runs",
			edges: []string{"a>b", "c>d"}, cont: true,
			results: map[string][]model.TaskState{"a": {model.TaskFailed}},
			written: []string{"a#1:submitted", "c#1:submitted", "d#1:submitted"}, end: model.WorkflowFailed, reason: "task a failed"},
		{name: "a fan-out is written in plans of the limit",
			edges:   []string{"a>b", "a>c", "a>d", "a>e", "a>f"},
			written: []string{"a#1:submitted", "b#1:submitted", "c#1:submitted", "d#1:submitted", "e#1:submitted", "f#1:submitted"}, end: model.WorkflowSucceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(graph(t, c.edges...), c.specs, c.cont)
			if c.dry {
				f.DryRun()
			}
			o := &owner{f: f, results: c.results, branch: c.branch, haltOn: c.haltOn}
			if o.results == nil {
				o.results = map[string][]model.TaskState{}
			}
			o.run()
			if !slices.Equal(o.written, c.written) {
				t.Errorf("written %v, want %v", o.written, c.written)
			}
			if f.Active() != 0 {
				t.Fatalf("%d still active", f.Active())
			}
			if end, reason := f.End(); end != c.end || reason != c.reason {
				t.Errorf("end %s %q, want %s %q", end, reason, c.end, c.reason)
			}
		})
	}
}
