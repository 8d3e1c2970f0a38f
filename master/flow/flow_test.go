package flow

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
)

// graph builds a DAG from "a>b" edges and lone nodes ("c").
func graph(t *testing.T, spec ...string) *dag.Graph {
	t.Helper()
	var nodes []string
	var edges [][2]string
	add := func(n string) {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	for _, s := range spec {
		var a, b string
		if n, _ := fmt.Sscanf(s, "%1s>%1s", &a, &b); n == 2 {
			add(a)
			add(b)
			edges = append(edges, [2]string{a, b})
			continue
		}
		add(s)
	}
	g, err := dag.New(nodes, edges)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func sorted(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }

// step is one event and what the machine must decide on it.
type step struct {
	ev                         Event
	submit, again, retry, skip []string
}

// TestTransitions checks the machine event by event.
func TestTransitions(t *testing.T) {
	ok := func(n string) Event { return Event{Name: n, State: model.TaskSucceeded} }
	fail := func(n string) Event { return Event{Name: n, State: model.TaskFailed} }
	branch := func(n string, next ...string) Event {
		return Event{Name: n, State: model.TaskSucceeded, Branched: true, Branch: next}
	}
	cases := []struct {
		name    string
		edges   []string
		specs   map[string]Task
		cont    bool
		start   []string
		steps   []step
		end     model.WorkflowState
		reason  string
		noEnd   bool // something still active after the steps
		skipped []string
	}{
		{name: "chain", edges: []string{"a>b", "b>c"}, start: []string{"a"},
			steps: []step{{ev: ok("a"), submit: []string{"b"}}, {ev: ok("b"), submit: []string{"c"}}, {ev: ok("c")}},
			end:   model.WorkflowSucceeded},
		{name: "join waits for both", edges: []string{"a>c", "b>c"}, start: []string{"a", "b"},
			steps: []step{{ev: ok("a")}, {ev: ok("b"), submit: []string{"c"}}, {ev: ok("c")}},
			end:   model.WorkflowSucceeded},
		{name: "repeat event ignored", edges: []string{"a>b"}, start: []string{"a"},
			steps: []step{{ev: ok("a"), submit: []string{"b"}}, {ev: ok("a")}, {ev: ok("b")}},
			end:   model.WorkflowSucceeded},
		{name: "failure ends", edges: []string{"a>b", "c"}, start: []string{"a", "c"},
			steps: []step{{ev: fail("a")}, {ev: ok("c")}},
			end:   model.WorkflowFailed, reason: "task a failed"},
		{name: "failure continue runs the independent branch", edges: []string{"a>b", "c>d"}, cont: true, start: []string{"a", "c"},
			steps: []step{{ev: fail("a")}, {ev: ok("c"), submit: []string{"d"}}, {ev: ok("d")}},
			end:   model.WorkflowFailed},
		{name: "failure end submits nothing more", edges: []string{"a>b", "c>d"}, start: []string{"a", "c"},
			steps: []step{{ev: fail("a")}, {ev: ok("c")}},
			end:   model.WorkflowFailed},
		{name: "retries then success", edges: []string{"a>b"}, specs: map[string]Task{"a": {Retries: 2}}, start: []string{"a"},
			steps: []step{{ev: fail("a"), retry: []string{"a"}}, {ev: fail("a"), retry: []string{"a"}}, {ev: ok("a"), submit: []string{"b"}}, {ev: ok("b")}},
			end:   model.WorkflowSucceeded},
		{name: "retries exhausted", edges: []string{"a"}, specs: map[string]Task{"a": {Retries: 1}}, start: []string{"a"},
			steps: []step{{ev: fail("a"), retry: []string{"a"}}, {ev: fail("a")}},
			end:   model.WorkflowFailed},
		{name: "killed is not retried", edges: []string{"a"}, specs: map[string]Task{"a": {Retries: 3}}, start: []string{"a"},
			steps: []step{{ev: Event{Name: "a", State: model.TaskKilled}}},
			end:   model.WorkflowFailed},
		{name: "lost task runs again", edges: []string{"a>b"}, start: []string{"a"},
			steps: []step{{ev: Event{Name: "a", State: model.TaskNeedFaultTolerance}, again: []string{"a"}}, {ev: ok("a"), submit: []string{"b"}}, {ev: ok("b")}},
			end:   model.WorkflowSucceeded},
		{name: "conditions on success skips on_failure and what only it leads to",
			edges: []string{"a>c", "c>s", "c>f", "f>g"}, specs: map[string]Task{"c": {HandlesFailure: true}}, start: []string{"a"},
			steps: []step{{ev: ok("a"), submit: []string{"c"}}, {ev: branch("c", "s"), submit: []string{"s"}, skip: []string{"f", "g"}}, {ev: ok("s")}},
			end:   model.WorkflowSucceeded, skipped: []string{"f", "g"}},
		{name: "conditions handles a failure: the instance succeeds",
			edges: []string{"a>c", "c>s", "c>f"}, specs: map[string]Task{"c": {HandlesFailure: true}}, start: []string{"a"},
			steps: []step{{ev: fail("a"), submit: []string{"c"}}, {ev: branch("c", "f"), submit: []string{"f"}, skip: []string{"s"}}, {ev: ok("f")}},
			end:   model.WorkflowSucceeded},
		{name: "conditions failure branch fails: the instance fails",
			edges: []string{"a>c", "c>s", "c>f"}, specs: map[string]Task{"c": {HandlesFailure: true}}, start: []string{"a"},
			steps: []step{{ev: fail("a"), submit: []string{"c"}}, {ev: branch("c", "f"), submit: []string{"f"}, skip: []string{"s"}}, {ev: fail("f")}},
			end:   model.WorkflowFailed, reason: "task f failed"},
		{name: "a failure also flowing to a plain task is not handled",
			edges: []string{"a>c", "a>p", "c>s"}, specs: map[string]Task{"c": {HandlesFailure: true}}, start: []string{"a"},
			steps: []step{{ev: fail("a")}},
			end:   model.WorkflowFailed},
		{name: "join after a switch runs with one branch taken",
			edges: []string{"w>x", "w>y", "x>j", "y>j"}, start: []string{"w"},
			steps: []step{{ev: branch("w", "x"), submit: []string{"x"}, skip: []string{"y"}}, {ev: ok("x"), submit: []string{"j"}}, {ev: ok("j")}},
			end:   model.WorkflowSucceeded, skipped: []string{"y"}},
		{name: "a branch choosing none skips all, and the join after",
			edges: []string{"w>x", "w>y", "x>j", "y>j"}, start: []string{"w"},
			steps: []step{{ev: branch("w"), skip: []string{"x", "j", "y"}}},
			end:   model.WorkflowSucceeded, skipped: []string{"x", "y", "j"}},
		{name: "a task with a taken upstream and a skipped one runs",
			edges: []string{"w>x", "w>y", "a>y"}, start: []string{"w", "a"},
			steps: []step{{ev: branch("w", "x"), submit: []string{"x"}}, {ev: ok("a"), submit: []string{"y"}}, {ev: ok("x")}, {ev: ok("y")}},
			end:   model.WorkflowSucceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(graph(t, c.edges...), c.specs, c.cont)
			d := f.Start()
			if !slices.Equal(sorted(d.Submit), sorted(c.start)) {
				t.Fatalf("start submits %v, want %v", d.Submit, c.start)
			}
			for i, s := range c.steps {
				d := f.Finished(s.ev)
				for _, cmp := range []struct {
					what      string
					got, want []string
				}{{"submit", d.Submit, s.submit}, {"again", d.Again, s.again}, {"retry", d.Retry, s.retry}, {"skip", d.Skip, s.skip}} {
					if !slices.Equal(sorted(cmp.got), sorted(cmp.want)) {
						t.Fatalf("step %d (%s %s): %s %v, want %v", i+1, s.ev.Name, s.ev.State, cmp.what, cmp.got, cmp.want)
					}
				}
			}
			if f.Active() != 0 {
				t.Fatalf("%d task(s) still active", f.Active())
			}
			state, reason := f.End()
			if state != c.end || (c.reason != "" && reason != c.reason) {
				t.Fatalf("ends %s (%q), want %s (%q)", state, reason, c.end, c.reason)
			}
			for _, n := range c.skipped {
				if f.State(n) != model.TaskSkipped {
					t.Fatalf("%s is %q, want skipped", n, f.State(n))
				}
			}
		})
	}
}

// TestForgive: force_success of the failure that ended the instance lets
// its downstream run and the instance succeed.
func TestForgive(t *testing.T) {
	f := New(graph(t, "a>b"), nil, false)
	f.Start()
	f.Finished(Event{Name: "a", State: model.TaskFailed})
	if d := f.Forgive("a"); !slices.Equal(d.Submit, []string{"b"}) {
		t.Fatalf("forgive submits %v, want [b]", d.Submit)
	}
	f.Finished(Event{Name: "b", State: model.TaskSucceeded})
	if s, _ := f.End(); s != model.WorkflowSucceeded {
		t.Fatalf("ends %s", s)
	}
}

// TestForgiveReleasesHeldBranches: under failure_strategy end, a branch
// whose upstream succeeded while the failure held everything back runs
// once the failure is forgiven (found by TestRandomDAGs: it was left
// unsubmitted and the instance ended succeeded without it).
func TestForgiveReleasesHeldBranches(t *testing.T) {
	f := New(graph(t, "a>b", "c>d"), nil, false)
	f.Start()
	f.Finished(Event{Name: "a", State: model.TaskFailed})
	if d := f.Finished(Event{Name: "c", State: model.TaskSucceeded}); !d.Empty() {
		t.Fatalf("halted, c's success decided %+v", d)
	}
	if d := f.Forgive("a"); !slices.Equal(sorted(d.Submit), []string{"b", "d"}) {
		t.Fatalf("forgive submits %v, want [b d]", d.Submit)
	}
}

// TestHalts: a stop submits and retries nothing; a pause still decides
// (the owner writes those paused) and ends paused.
func TestHalts(t *testing.T) {
	f := New(graph(t, "a>b", "c"), map[string]Task{"c": {Retries: 2}}, false)
	f.Start()
	f.Halt(Stop)
	if d := f.Finished(Event{Name: "a", State: model.TaskSucceeded}); !d.Empty() {
		t.Fatalf("stopping, a success decided %+v", d)
	}
	if d := f.Finished(Event{Name: "c", State: model.TaskFailed}); !d.Empty() {
		t.Fatalf("stopping, a failure with retries decided %+v", d)
	}
	if s, _ := f.End(); s != model.WorkflowStopped {
		t.Fatalf("ends %s", s)
	}

	f = New(graph(t, "a>b"), nil, false)
	f.Start()
	f.Halt(Pause)
	d := f.Finished(Event{Name: "a", State: model.TaskSucceeded})
	if !slices.Equal(d.Submit, []string{"b"}) {
		t.Fatalf("pausing, a success decided %+v", d)
	}
	f.Finished(Event{Name: "b", State: model.TaskPaused}) // written paused by the owner
	if s, _ := f.End(); s != model.WorkflowPaused || f.Active() != 0 {
		t.Fatalf("ends %s with %d active", s, f.Active())
	}
}

// TestRestore: a rebuild from recorded states submits what became ready
// while no runner watched, and runs lost tasks again.
func TestRestore(t *testing.T) {
	f := New(graph(t, "a>b", "c>d", "e"), nil, false)
	f.Restore("a", model.TaskSucceeded, 1, 1, nil)
	f.Restore("c", model.TaskRunning, 1, 1, nil)
	f.Restore("e", model.TaskNeedFaultTolerance, 1, 1, nil)
	d := f.RunAgain("e")
	d.Add(f.Start())
	if !slices.Equal(d.Submit, []string{"b"}) || !slices.Equal(d.Again, []string{"e"}) || f.Active() != 3 {
		t.Fatalf("decided %+v with %d active", d, f.Active())
	}
	// A restored branch: what it did not take is skipped.
	f = New(graph(t, "w>x", "w>y"), nil, false)
	f.Restore("w", model.TaskSucceeded, 1, 1, []string{"y"})
	if d := f.Start(); !slices.Equal(d.Submit, []string{"y"}) || !slices.Equal(d.Skip, []string{"x"}) {
		t.Fatalf("restored branch decided %+v", d)
	}
}

// TestRandomDAGs is the property test: random DAGs (with conditions and
// branching tasks) and random outcomes, under both failure strategies,
// never submit a task twice, never end with a task active or (when the
// instance succeeds) unfinished, and always end.
func TestRandomDAGs(t *testing.T) {
	for seed := uint64(1); seed <= 10000; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		if err := randomRun(rng); err != "" {
			t.Fatalf("seed %d: %s", seed, err)
		}
	}
}

// randomGraph is a DAG of 1 to most tasks t0, t1, ... (names, in order) in which each pair
// i < j has the edge ti -> tj with a chance of one in oneIn.
func randomGraph(rng *rand.Rand, most, oneIn int) ([]string, *dag.Graph, error) {
	n := 1 + rng.IntN(most)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("t%d", i)
	}
	var edges [][2]string
	for j := 1; j < n; j++ {
		for i := 0; i < j; i++ {
			if rng.IntN(oneIn) == 0 {
				edges = append(edges, [2]string{names[i], names[j]})
			}
		}
	}
	g, err := dag.New(names, edges)
	return names, g, err
}

func randomRun(rng *rand.Rand) string {
	names, g, err := randomGraph(rng, 14, 4)
	if err != nil {
		return err.Error()
	}
	specs := map[string]Task{}
	branching := map[string]bool{}
	for _, nm := range names {
		switch rng.IntN(5) {
		case 0:
			specs[nm] = Task{HandlesFailure: true} // conditions: also branches
			branching[nm] = true
		case 1:
			branching[nm] = true // switch
			specs[nm] = Task{}
		default:
			specs[nm] = Task{Retries: rng.IntN(3)}
		}
	}
	f := New(g, specs, rng.IntN(2) == 0)
	submits := map[string]int{}
	skipped := map[string]bool{}
	var queue []string // active tasks, in any order
	take := func(d Decisions) string {
		for _, s := range d.Submit {
			if submits[s]++; submits[s] > 1 {
				return "submitted twice: " + s
			}
			for _, u := range g.Upstream(s) {
				if st := f.State(u); st != model.TaskSkipped && !st.Success() && !(f.ts[u].final && specs[s].HandlesFailure) {
					return fmt.Sprintf("submitted %s while its upstream %s is %q", s, u, st)
				}
			}
			if skipped[s] {
				return "submitted after it was skipped: " + s
			}
			queue = append(queue, s)
		}
		for _, s := range d.Skip {
			if submits[s] > 0 || skipped[s] {
				return "skipped after it was decided: " + s
			}
			skipped[s] = true
		}
		queue = append(queue, d.Again...)
		queue = append(queue, d.Retry...)
		return ""
	}
	if e := take(f.Start()); e != "" {
		return e
	}
	halted := false
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 10000 {
			return "does not end"
		}
		if !halted && rng.IntN(60) == 0 {
			halted = true
			if rng.IntN(2) == 0 {
				f.Halt(Stop)
			} else {
				f.Halt(Pause)
			}
		}
		if rng.IntN(25) == 0 {
			// A failover: a new machine restored from the recorded states
			// has nothing new to decide (everything ready was decided).
			var d Decisions
			f, d = restored(f)
			if d.Add(f.Start()); !d.Empty() {
				return fmt.Sprintf("after a restore, restore and start decided %+v", d)
			}
		}
		if rng.IntN(30) == 0 {
			// force_success of a task that failed for good.
			for _, nm := range names {
				if st := f.State(nm); (st == model.TaskFailed || st == model.TaskKilled) && f.ts[nm].final {
					if e := take(f.Forgive(nm)); e != "" {
						return e
					}
					if f.State(nm) != model.TaskForcedSuccess {
						return "forgiven and not forced_success: " + nm
					}
					break
				}
			}
		}
		if len(queue) == 0 {
			break
		}
		i := rng.IntN(len(queue))
		name := queue[i]
		queue = slices.Delete(queue, i, i+1)
		ev := Event{Name: name}
		switch r := rng.IntN(10); {
		case r < 6:
			ev.State = model.TaskSucceeded
			if branching[name] {
				ev.Branched = true
				ev.Branch = []string{}
				for _, d := range g.Downstream(name) {
					if rng.IntN(2) == 0 {
						ev.Branch = append(ev.Branch, d)
					}
				}
			}
		case r < 8:
			ev.State = model.TaskFailed
		case r < 9:
			ev.State = model.TaskNeedFaultTolerance
		default:
			ev.State = model.TaskKilled
		}
		if e := take(f.Finished(ev)); e != "" {
			return e
		}
	}
	if f.Active() != 0 {
		return fmt.Sprintf("nothing queued but %d active", f.Active())
	}
	state, reason := f.End()
	if state == model.WorkflowSucceeded {
		for _, nm := range names {
			st := f.State(nm)
			if !st.Finished() || st == model.TaskPaused || st == model.TaskNeedFaultTolerance {
				return fmt.Sprintf("succeeded with %s %q", nm, st)
			}
			if (st == model.TaskFailed || st == model.TaskKilled) && !f.Handled(nm) {
				return fmt.Sprintf("succeeded with %s %s and not handled", nm, st)
			}
		}
	}
	if state == model.WorkflowFailed && reason == "" {
		return "failed with no reason"
	}
	return ""
}

// restored is a new machine of f's graph restored from f's recorded task
// states, as a rebuild does from the DB, and what the restore decided.
func restored(f *Flow) (*Flow, Decisions) {
	var d Decisions
	g := New(f.g, f.specs, f.cont)
	if f.halt != Running {
		g.Halt(f.halt)
	}
	for name, t := range f.ts {
		if !t.submitted {
			continue
		}
		var chosen []string
		if t.chosen != nil {
			chosen = []string{}
			for n := range t.chosen {
				chosen = append(chosen, n)
			}
		}
		d.Add(g.Restore(name, t.state, t.tries, 1, chosen))
	}
	return g, d
}

// TestRetryBudget: a task's retries count from the attempt that began its
// budget (the first, or the one a rerun or recover_failed started), as a
// rebuild restores it.
func TestRetryBudget(t *testing.T) {
	for _, c := range []struct {
		attempt, base, retries int
		want                   bool
	}{
		{1, 1, 0, false},
		{1, 1, 1, true},
		{2, 1, 1, false},
		{1, 0, 1, true},  // a row from before retry_base: the budget began at 1
		{3, 3, 1, true},  // the first attempt of a recovery retries...
		{4, 3, 1, false}, // ...once
		{4, 3, 2, true},
		{5, 3, 2, false},
	} {
		f := New(graph(t, "a"), map[string]Task{"a": {Retries: c.retries}}, false)
		f.Restore("a", model.TaskRunning, c.attempt, c.base, nil)
		d := f.Finished(Event{Name: "a", State: model.TaskFailed})
		if got := len(d.Retry) == 1; got != c.want {
			t.Errorf("attempt %d, budget from %d, retries %d: retried %v, want %v", c.attempt, c.base, c.retries, got, c.want)
		}
	}
}

// TestRestoreFailedWithRetriesLeft: a failed latest attempt whose budget has
// attempts left is retried by the rebuild (the term that wrote the failure
// may have ended before writing its next attempt), as Finished would have
// decided; with no attempts left, or under a stop, it fails for good.
func TestRestoreFailedWithRetriesLeft(t *testing.T) {
	for _, c := range []struct {
		name                   string
		state                  model.TaskState
		attempt, base, retries int
		halt                   Halt
		retry                  bool
	}{
		{"first attempt failed", model.TaskFailed, 1, 1, 3, Running, true},
		{"third of four", model.TaskFailed, 3, 1, 3, Running, true},
		{"last of four", model.TaskFailed, 4, 1, 3, Running, false},
		{"no retries", model.TaskFailed, 1, 1, 0, Running, false},
		{"a recovery's budget", model.TaskFailed, 3, 3, 1, Running, true},
		{"a recovery's budget spent", model.TaskFailed, 4, 3, 1, Running, false},
		{"a row from before retry_base", model.TaskFailed, 1, 0, 1, Running, true},
		{"pausing: retried, the owner holds it", model.TaskFailed, 1, 1, 1, Pause, true},
		{"stopping: never retried", model.TaskFailed, 1, 1, 1, Stop, false},
		{"killed: never retried", model.TaskKilled, 1, 1, 3, Running, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := New(graph(t, "a>b"), map[string]Task{"a": {Retries: c.retries}}, false)
			if c.halt != Running {
				f.Halt(c.halt)
			}
			d := f.Restore("a", c.state, c.attempt, c.base, nil)
			d.Add(f.Start())
			if !c.retry {
				if !d.Empty() || f.Active() != 0 {
					t.Fatalf("decided %+v with %d active, want nothing", d, f.Active())
				}
				if s, _ := f.End(); c.halt == Running && s != model.WorkflowFailed {
					t.Fatalf("ends %s, want failed", s)
				}
				return
			}
			if !slices.Equal(d.Retry, []string{"a"}) || len(d.Submit)+len(d.Again)+len(d.Skip) != 0 || f.Active() != 1 {
				t.Fatalf("decided %+v with %d active, want a retried", d, f.Active())
			}
			// The retry is the next attempt of the same budget: its own
			// failure retries exactly as far as the budget goes.
			left := c.retries - (c.attempt - max(c.base, 1) + 1)
			for i := range left + 1 {
				d := f.Finished(Event{Name: "a", State: model.TaskFailed})
				if got, want := len(d.Retry) == 1, i < left; got != want {
					t.Fatalf("failure %d after the restore: retried %v, want %v", i+1, got, want)
				}
			}
			if s, _ := f.End(); c.halt == Running && s != model.WorkflowFailed {
				t.Fatalf("ends %s after the budget, want failed", s)
			}
		})
	}
}

// TestRestoreDecidesAsFinished: for random DAGs and outcomes, a term that
// ends between a failed result's write and its decision loses nothing: a
// machine restored from the DB's states (the failure written) decides
// exactly what the live machine decides on the failure.
func TestRestoreDecidesAsFinished(t *testing.T) {
	checked := 0
	for seed := uint64(1); seed <= 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*104729))
		names, g, err := randomGraph(rng, 8, 3)
		if err != nil {
			t.Fatal(err)
		}
		specs := map[string]Task{}
		for _, nm := range names {
			specs[nm] = Task{Retries: rng.IntN(3), HandlesFailure: rng.IntN(4) == 0}
		}
		f := New(g, specs, rng.IntN(2) == 0)
		queue := f.Start().Submit
		for len(queue) > 0 {
			i := rng.IntN(len(queue))
			name := queue[i]
			queue = slices.Delete(queue, i, i+1)
			if rng.IntN(2) == 0 {
				d := f.Finished(Event{Name: name, State: model.TaskSucceeded})
				queue = append(append(queue, d.Submit...), d.Retry...)
				continue
			}
			// The failure is written; the term may end before its decision.
			lost := New(g, specs, f.cont)
			for nm, ts := range f.ts {
				if !ts.submitted || nm == name {
					continue
				}
				if d := lost.Restore(nm, ts.state, ts.tries, 1, nil); !d.Empty() {
					t.Fatalf("seed %d: restoring %s (%s) decided %+v", seed, nm, ts.state, d)
				}
			}
			var rebuilt Decisions
			rebuilt.Add(lost.Restore(name, model.TaskFailed, f.ts[name].tries, 1, nil))
			rebuilt.Add(lost.Start())
			live := f.Finished(Event{Name: name, State: model.TaskFailed})
			if !slices.Equal(sorted(rebuilt.Submit), sorted(live.Submit)) || !slices.Equal(rebuilt.Retry, live.Retry) ||
				!slices.Equal(sorted(rebuilt.Skip), sorted(live.Skip)) || lost.Active() != f.Active() {
				t.Fatalf("seed %d: failure of %s: rebuild decided %+v (%d active), live %+v (%d active)",
					seed, name, rebuilt, lost.Active(), live, f.Active())
			}
			if ls, _ := lost.End(); lost.Active() == 0 {
				if fs, _ := f.End(); ls != fs {
					t.Fatalf("seed %d: rebuild ends %s, live %s", seed, ls, fs)
				}
			}
			checked++
			queue = append(append(queue, live.Submit...), live.Retry...)
		}
	}
	if checked == 0 {
		t.Fatal("no failure was checked")
	}
}

// A join remembers how many of its upstreams ended (so a fan-in of n costs
// O(n)); an upstream that runs again is waited for again: here a conditions
// task saw a killed upstream end, then the kill is run again on resume, and
// the other upstream's end must not release the join.
func TestJoinWaitsForAnUpstreamRunAgain(t *testing.T) {
	g, err := dag.New([]string{"a", "b", "j"}, [][2]string{{"a", "j"}, {"b", "j"}})
	if err != nil {
		t.Fatal(err)
	}
	f := New(g, map[string]Task{"j": {HandlesFailure: true}}, true)
	f.Restore("a", model.TaskKilled, 1, 1, nil)
	f.Restore("b", model.TaskRunning, 1, 1, nil)
	if d := f.Start(); !d.Empty() {
		t.Fatalf("start decided %+v with b running", d)
	}
	if d := f.RunAgain("a"); len(d.Again) != 1 {
		t.Fatalf("run again: %+v", d)
	}
	if d := f.Finished(Event{Name: "b", State: model.TaskSucceeded}); !d.Empty() {
		t.Fatalf("b's end released j while a runs again: %+v", d)
	}
	if d := f.Finished(Event{Name: "a", State: model.TaskSucceeded}); len(d.Submit) != 1 || d.Submit[0] != "j" {
		t.Fatalf("a's end: %+v, want j submitted", d)
	}
}

// BenchmarkFanIn: the ends of n upstreams of one join cost O(n) in all.
func BenchmarkFanIn(b *testing.B) {
	const n = 10000
	names := make([]string, n+1)
	edges := make([][2]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("p%d", i)
		edges[i] = [2]string{names[i], "join"}
	}
	names[n] = "join"
	g, err := dag.New(names, edges)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		f := New(g, map[string]Task{}, false)
		f.Start()
		for i := n - 1; i >= 0; i-- { // the last upstream first: the worst order for a scan from the start
			f.Finished(Event{Name: names[i], State: model.TaskSucceeded})
		}
	}
}
