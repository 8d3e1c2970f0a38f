package forecast

import (
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
)

func graph(t *testing.T, nodes []string, edges ...[2]string) *dag.Graph {
	t.Helper()
	g, err := dag.New(nodes, edges)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestProject(t *testing.T) {
	now := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	s := time.Second
	st := func(p50, p90 time.Duration) Stats { return Stats{P50: p50, P90: p90, N: 20} }
	chain := []string{"a", "b", "c"}
	chainEdges := [][2]string{{"a", "b"}, {"b", "c"}}
	cases := []struct {
		name      string
		g         *dag.Graph
		tasks     map[string]Task
		hist      History
		end, p90  time.Duration // after now
		path      []string
		noHistory []string
		slow      []string
	}{
		{name: "chain, nothing started", g: graph(t, chain, chainEdges...),
			hist: History{Tasks: map[string]Stats{"a": st(10*s, 20*s), "b": st(5*s, 6*s), "c": st(1*s, 2*s)}},
			end:  16 * s, p90: 28 * s, path: chain},
		{name: "chain with queueing of its group", g: graph(t, chain, chainEdges...),
			tasks: map[string]Task{"a": {WorkerGroup: "gpu"}, "b": {WorkerGroup: "gpu"}, "c": {}},
			hist: History{Tasks: map[string]Stats{"a": st(10*s, 20*s), "b": st(5*s, 6*s), "c": st(1*s, 2*s)},
				Queue: map[string]Stats{"gpu": st(2*s, 3*s)}},
			end: 20 * s, p90: 34 * s, path: chain},
		{name: "chain, first done, second running 3s of 5s", g: graph(t, chain, chainEdges...),
			tasks: map[string]Task{"a": {Phase: Done}, "b": {Phase: Running, Started: now.Add(-3 * s)}},
			hist:  History{Tasks: map[string]Stats{"a": st(10*s, 20*s), "b": st(5*s, 6*s), "c": st(1*s, 2*s)}},
			end:   3 * s, p90: 5 * s, path: []string{"b", "c"}},
		{name: "diamond takes its longer branch", g: graph(t, []string{"a", "l", "r", "z"},
			[2]string{"a", "l"}, [2]string{"a", "r"}, [2]string{"l", "z"}, [2]string{"r", "z"}),
			hist: History{Tasks: map[string]Stats{"a": st(1*s, 1*s), "l": st(2*s, 9*s), "r": st(4*s, 5*s), "z": st(1*s, 1*s)}},
			end:  6 * s, p90: 11 * s, path: []string{"a", "r", "z"}},
		{name: "fan-out ends with its longest leaf", g: graph(t, []string{"root", "x", "y", "w"},
			[2]string{"root", "x"}, [2]string{"root", "y"}, [2]string{"root", "w"}),
			tasks: map[string]Task{"root": {Phase: Done}},
			hist:  History{Tasks: map[string]Stats{"x": st(3*s, 4*s), "y": st(7*s, 8*s), "w": st(5*s, 30*s)}},
			end:   7 * s, p90: 30 * s, path: []string{"y"}},
		{name: "running past its p90 is slow and taken to end now", g: graph(t, chain, chainEdges...),
			tasks: map[string]Task{"a": {Phase: Running, Started: now.Add(-60 * s)}},
			hist:  History{Tasks: map[string]Stats{"a": st(10*s, 20*s), "b": st(5*s, 6*s), "c": st(1*s, 2*s)}},
			end:   6 * s, p90: 8 * s, path: chain, slow: []string{"a"}},
		{name: "no history counts the default", g: graph(t, chain, chainEdges...),
			hist: History{Tasks: map[string]Stats{"a": st(10*s, 20*s)}},
			end:  10*s + 2*DefaultP50, p90: 20*s + 2*DefaultP90, path: chain, noHistory: []string{"b", "c"}},
		{name: "running without history past the default is not named slow", g: graph(t, []string{"a"}),
			tasks: map[string]Task{"a": {Phase: Running, Started: now.Add(-time.Hour)}},
			end:   0, p90: 0, path: []string{"a"}, noHistory: []string{"a"}},
		{name: "all done ends now", g: graph(t, chain, chainEdges...),
			tasks: map[string]Task{"a": {Phase: Done}, "b": {Phase: Done}, "c": {Phase: Done}}},
		{name: "no graph ends now"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Project(Input{Graph: c.g, Tasks: c.tasks, History: c.hist, Now: now})
			if got := p.End.Sub(now); got != c.end {
				t.Errorf("end: now+%v, want now+%v", got, c.end)
			}
			if got := p.P90End.Sub(now); got != c.p90 {
				t.Errorf("p90 end: now+%v, want now+%v", got, c.p90)
			}
			if !slices.Equal(p.CriticalPath, c.path) {
				t.Errorf("critical path %v, want %v", p.CriticalPath, c.path)
			}
			if !slices.Equal(p.NoHistory, c.noHistory) {
				t.Errorf("no history %v, want %v", p.NoHistory, c.noHistory)
			}
			if !slices.Equal(p.Slow, c.slow) {
				t.Errorf("slow %v, want %v", p.Slow, c.slow)
			}
		})
	}
}

func TestLearn(t *testing.T) {
	var samples []model.TaskSample
	for i := 1; i <= 10; i++ { // run times 1s..10s, queueing i*100ms
		samples = append(samples, model.TaskSample{Name: "a", WorkerGroup: "g", Run: time.Duration(i) * time.Second,
			Queue: time.Duration(i) * 100 * time.Millisecond, HasQueue: true})
	}
	samples = append(samples,
		model.TaskSample{Name: "c", Run: -time.Second}, // a clock stepped back: ignored
		model.TaskSample{Name: "d", Run: time.Minute})  // no queueing times
	h := Learn(samples, 0)
	if got := h.Tasks["a"]; got != (Stats{P50: 5 * time.Second, P90: 9 * time.Second, N: 10}) {
		t.Errorf("a: %+v", got)
	}
	if got := h.Queue["g"]; got != (Stats{P50: 500 * time.Millisecond, P90: 900 * time.Millisecond, N: 10}) {
		t.Errorf("queue of g: %+v", got)
	}
	if _, ok := h.Tasks["c"]; ok {
		t.Error("c ran a negative time and has stats")
	}
	if got := h.Tasks["d"]; got.N != 1 || got.P50 != time.Minute || got.P90 != time.Minute {
		t.Errorf("d: %+v", got)
	}
	if _, ok := h.Queue[""]; ok {
		t.Error("a sample without dispatch time counted queueing")
	}
	// newest first: perTask keeps the first (newest) samples
	if got := Learn(samples, 3).Tasks["a"]; got != (Stats{P50: 2 * time.Second, P90: 3 * time.Second, N: 3}) {
		t.Errorf("a, 3 newest: %+v", got)
	}
}

func TestRunsFor(t *testing.T) {
	for _, c := range []struct{ tasks, runs int }{{0, 20}, {1, 20}, {250, 20}, {1000, 5}, {2000, 3}, {100000, 3}} {
		if got := RunsFor(c.tasks); got != c.runs {
			t.Errorf("RunsFor(%d) = %d, want %d", c.tasks, got, c.runs)
		}
	}
}

func TestPhaseOf(t *testing.T) {
	for _, c := range []struct {
		st      model.TaskState
		started bool
		want    Phase
	}{
		{model.TaskRunning, true, Running}, {model.TaskRunning, false, Pending}, {model.TaskSubmitted, false, Pending},
		{model.TaskDispatched, false, Pending}, {model.TaskDelayed, false, Pending}, {model.TaskSucceeded, true, Done},
		{model.TaskSkipped, false, Done}, {model.TaskFailed, true, Done}, {model.TaskForcedSuccess, false, Done},
	} {
		if got := PhaseOf(c.st, c.started); got != c.want {
			t.Errorf("PhaseOf(%s, %v) = %v, want %v", c.st, c.started, got, c.want)
		}
	}
}

// The spans a chart draws: the remaining tasks in order, a running one from
// now, a pending one from its upstream's projected end (its group's
// queueing inside its span), done tasks absent.
func TestProjectSpans(t *testing.T) {
	now := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	s := time.Second
	st := func(p50 time.Duration) Stats { return Stats{P50: p50, P90: 2 * p50, N: 5} }
	g := graph(t, []string{"a", "b", "c", "d"}, [2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"b", "d"})
	p := Project(Input{Graph: g, Now: now,
		Tasks:   map[string]Task{"a": {Phase: Done}, "b": {Phase: Running, Started: now.Add(-2 * s)}, "d": {WorkerGroup: "gpu"}},
		History: History{Tasks: map[string]Stats{"a": st(s), "b": st(5 * s), "c": st(3 * s), "d": st(s)}, Queue: map[string]Stats{"gpu": st(s)}}})
	want := []Span{
		{Name: "b", Start: now, End: now.Add(3 * s), Running: true},
		{Name: "c", Start: now.Add(3 * s), End: now.Add(6 * s)},
		{Name: "d", Start: now.Add(3 * s), End: now.Add(5 * s)},
	}
	if !slices.Equal(p.Spans, want) {
		t.Fatalf("spans %+v, want %+v", p.Spans, want)
	}
	if !p.End.Equal(now.Add(6 * s)) {
		t.Fatalf("end now+%v, want the last span's end", p.End.Sub(now))
	}
}
