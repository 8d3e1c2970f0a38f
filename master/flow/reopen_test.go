package flow

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestReopen: what a rebuild does with the restored latest attempts, by
// why the instance is reopened and the halt its master left, and the
// attempts the restored rows then plan.
func TestReopen(t *testing.T) {
	r := func(name string, st model.TaskState, attempt int) Restored {
		return Restored{Name: name, State: st, Attempt: attempt, Base: 1}
	}
	on := func(rr Restored, host string) Restored { rr.Host = host; return rr }
	master := func(rr Restored) Restored { rr.InMaster = true; return rr }
	ended := func(rr Restored, at time.Time) Restored { rr.PrevEnd = at; return rr }
	cases := []struct {
		name   string
		edges  []string
		specs  map[string]Task
		why    Reopening
		halt   Halt
		rows   []Restored
		want   Reopened
		active int
		plan   []string // name#attempt:state of the rows the decisions plan, and supersession
	}{
		{name: "a failover: submitted requeued, on workers asked, master-run continued, lost run anew",
			edges: []string{"a", "b", "c", "d", "e"},
			rows: []Restored{r("a", model.TaskSubmitted, 1), on(r("b", model.TaskRunning, 1), "w1"),
				on(r("c", model.TaskDispatched, 2), "w2"), master(r("d", model.TaskRunning, 1)), r("e", model.TaskNeedFaultTolerance, 1)},
			want: Reopened{Requeue: []string{"a"}, Continue: []string{"d"}, Ask: map[string][]string{"w1": {"b"}, "w2": {"c"}},
				Decisions: Decisions{Again: []string{"e"}}},
			active: 5, plan: []string{"e#2:submitted+"}},
		{name: "a failed attempt with retries left gets the retry the last term did not write",
			edges: []string{"a>b"}, specs: map[string]Task{"a": {Retries: 2}},
			rows:   []Restored{r("a", model.TaskFailed, 1)},
			want:   Reopened{Decisions: Decisions{Retry: []string{"a"}}},
			active: 1, plan: []string{"a#2:submitted+"}},
		{name: "a delayed retry goes back on the wheel from the failed attempt's end",
			edges: []string{"a"}, specs: map[string]Task{"a": {Retries: 2, RetryInterval: time.Minute}},
			rows:   []Restored{ended(r("a", model.TaskDelayed, 2), t0.Add(-10*time.Second)), ended(r("b", model.TaskDelayed, 2), time.Time{})},
			want:   Reopened{Delay: []Due{{"a", t0.Add(50 * time.Second)}}},
			active: 1},
		{name: "done upstreams make their downstream ready (Start)",
			edges:  []string{"a>b", "b>c"},
			rows:   []Restored{r("a", model.TaskSucceeded, 1)},
			active: 0, plan: []string{"b#1:submitted"}},
		{name: "a stop left by its master: no retry, what is new is held killed",
			edges: []string{"a>b", "c"}, specs: map[string]Task{"a": {Retries: 2}}, halt: Stop,
			rows:   []Restored{r("a", model.TaskFailed, 1), on(r("c", model.TaskRunning, 1), "w1")},
			want:   Reopened{Ask: map[string][]string{"w1": {"c"}}},
			active: 1},
		{name: "a pause left by its master: paused tasks stay, new ones are held paused",
			edges: []string{"a>b", "c"}, halt: Pause,
			rows:   []Restored{r("a", model.TaskSucceeded, 1), r("c", model.TaskPaused, 1)},
			active: 0, plan: []string{"b#1:paused"}},
		{name: "resume: paused tasks unpaused, killed ones run anew, a paused branching one decided anew",
			edges: []string{"a", "b", "s"}, specs: map[string]Task{"s": {Decides: true}}, why: Resume,
			rows: []Restored{r("a", model.TaskPaused, 1), r("b", model.TaskKilled, 3),
				func() Restored { x := r("s", model.TaskPaused, 1); x.Decides = true; return x }()},
			want:   Reopened{Unpause: []string{"a"}, Decisions: Decisions{Again: []string{"b", "s"}}},
			active: 2, plan: []string{"b#4:submitted+", "s#2:submitted+"}},
		{name: "rerun redoes every task: new budgets numbered on, superseding",
			edges: []string{"a>b"}, why: Rerun,
			rows:   []Restored{r("a", model.TaskSucceeded, 2), r("b", model.TaskFailed, 1)},
			want:   Reopened{Redo: []string{"a", "b"}},
			active: 0, plan: []string{"a#3:submitted+"}},
		{name: "recover_failed redoes the failure and what is after it, not a handled one",
			edges: []string{"a>b", "b>c", "x>k"}, specs: map[string]Task{"k": {HandlesFailure: true}}, why: RecoverFailed,
			rows: []Restored{r("a", model.TaskSucceeded, 1), r("b", model.TaskFailed, 2), r("x", model.TaskFailed, 1),
				r("k", model.TaskSucceeded, 1)},
			want:   Reopened{Redo: []string{"b"}},
			active: 0, plan: []string{"b#3:submitted+"}},
		{name: "rows of tasks outside the run's graph are left alone",
			edges:  []string{"a"},
			rows:   []Restored{r("zz", model.TaskSubmitted, 1)},
			active: 0, plan: []string{"a#1:submitted"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(graph(t, c.edges...), c.specs, false)
			got := f.Reopen(ReopenIn{Why: c.why, Halt: c.halt, Now: t0, Rows: c.rows})
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Reopen:\n got %+v\nwant %+v", got, c.want)
			}
			if f.Active() != c.active {
				t.Errorf("active %d, want %d", f.Active(), c.active)
			}
			d := got.Decisions
			d.Add(f.Start())
			rows, _ := f.Plan(d, PlanIn{Now: t0})
			var plan []string
			for _, row := range rows {
				s := row.Name + "#" + itoa(row.Attempt.Number) + ":" + string(row.State)
				if row.Attempt.Supersedes {
					s += "+"
				}
				plan = append(plan, s)
			}
			if !reflect.DeepEqual(plan, c.plan) {
				t.Errorf("plan %v, want %v", plan, c.plan)
			}
		})
	}
}

func itoa(n int) string { return fmt.Sprint(n) }
