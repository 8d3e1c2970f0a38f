// Package forecast projects when a running workflow instance ends: the
// critical path through its remaining tasks, each taking what its recent
// successful runs took. Pure: the callers read the history and the
// instance's tasks and hand them in.
package forecast

import (
	"slices"
	"sort"
	"time"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
)

// Defaults for a task with no successful run in the history read: one
// minute at p50, two at p90. A guess, named in the projection's NoHistory
// so a reader knows which parts of it are guessed.
const (
	DefaultP50 = time.Minute
	DefaultP90 = 2 * time.Minute
)

// HistoryRuns is how many recent runs of a workflow the history is read
// from, and HistoryRows the most task rows read: a workflow of many tasks
// reads fewer runs (at least MinHistoryRuns) so one read stays bounded.
const (
	HistoryRuns    = 20
	MinHistoryRuns = 3
	HistoryRows    = 5000
)

// RunsFor is how many recent runs to read the history of a workflow of
// tasks tasks from.
func RunsFor(tasks int) int {
	if tasks <= 0 {
		return HistoryRuns
	}
	n := HistoryRows / tasks
	return max(MinHistoryRuns, min(HistoryRuns, n))
}

// Stats are a task's recent successful durations.
type Stats struct {
	P50, P90 time.Duration
	N        int // samples
}

// History is what past runs say: run time by task, queueing (dispatch
// minus submit) by worker group.
type History struct {
	Tasks map[string]Stats
	Queue map[string]Stats
}

// Learn summarises samples (successful attempts of past runs, newest
// first) into History, keeping at most perTask samples of each task.
func Learn(samples []model.TaskSample, perTask int) History {
	runs := map[string][]time.Duration{}
	queues := map[string][]time.Duration{}
	for _, s := range samples {
		if s.Run < 0 {
			continue // a clock stepped back: no sample
		}
		if perTask > 0 && len(runs[s.Name]) >= perTask {
			continue
		}
		runs[s.Name] = append(runs[s.Name], s.Run)
		if s.HasQueue && s.Queue >= 0 {
			queues[s.WorkerGroup] = append(queues[s.WorkerGroup], s.Queue)
		}
	}
	h := History{Tasks: make(map[string]Stats, len(runs)), Queue: make(map[string]Stats, len(queues))}
	for n, ds := range runs {
		h.Tasks[n] = statsOf(ds)
	}
	for g, ds := range queues {
		h.Queue[g] = statsOf(ds)
	}
	return h
}

// statsOf is the nearest-rank p50 and p90 of ds (not empty).
func statsOf(ds []time.Duration) Stats {
	slices.Sort(ds)
	rank := func(p int) time.Duration {
		i := (p*len(ds)+99)/100 - 1 // nearest rank: ceil(p/100 * n)
		return ds[max(0, min(i, len(ds)-1))]
	}
	return Stats{P50: rank(50), P90: rank(90), N: len(ds)}
}

// Phase is where a task of the running instance is.
type Phase int

const (
	Pending Phase = iota // not started: waits on upstreams, then queues and runs
	Running              // started at Task.Started
	Done                 // will take no more time (succeeded, skipped, failed for good)
)

// Task is one task of the running instance as the forecast sees it.
type Task struct {
	Phase       Phase
	Started     time.Time // Running: when its attempt started
	WorkerGroup string
}

// PhaseOf maps a task's latest attempt state to its phase; started is
// whether the attempt has a start time.
func PhaseOf(st model.TaskState, started bool) Phase {
	switch {
	case st == model.TaskRunning && started:
		return Running
	case st == model.TaskDelayed || !st.Finished():
		// submitted, dispatched, delayed retry: still to queue and run
		return Pending
	}
	return Done
}

// Input is everything a projection is computed from.
type Input struct {
	Graph   *dag.Graph
	Tasks   map[string]Task // by name; a task of Graph not here is Pending
	History History
	Now     time.Time
}

// Projection is when the instance is projected to end.
type Projection struct {
	End    time.Time // every remaining task at its p50 (plus its group's p50 queueing)
	P90End time.Time // ... at its p90
	// CriticalPath names the remaining tasks, in order, that End waits on.
	CriticalPath []string
	// NoHistory names the remaining tasks with no recent successful run
	// (they count DefaultP50 / DefaultP90).
	NoHistory []string
	// Slow names the running tasks past their p90 (with history).
	Slow []string
	// Spans are the remaining tasks at p50, in topological order: what a
	// chart draws as the projection.
	Spans []Span
}

// Span is one remaining task's projected time at p50: a running task from
// now to its end; a pending one from when the last of its upstreams ends
// (now at the earliest) to its end, its group's queueing included.
type Span struct {
	Name       string
	Start, End time.Time
	Running    bool
}

// Project computes the projection: each remaining task starts when the
// last of its upstreams ends (now at the earliest), after its worker
// group's queueing for a pending one, and takes its p50 (p90); a running
// task takes what is left of its p50 (p90) after its elapsed time, none
// once past it (it is taken to end now, and named slow past its p90).
func Project(in Input) Projection {
	var p Projection
	if in.Graph == nil {
		p.End, p.P90End = in.Now, in.Now
		return p
	}
	order := in.Graph.TopoOrder()
	end50 := make(map[string]time.Time, len(order))
	end90 := make(map[string]time.Time, len(order))
	prev := make(map[string]string, len(order)) // the upstream a task's p50 start waits on
	last, lastAt := "", in.Now
	p.P90End = in.Now
	for _, n := range order {
		t := in.Tasks[n]
		if t.Phase == Done {
			continue
		}
		st, known := in.History.Tasks[n]
		if !known {
			st = Stats{P50: DefaultP50, P90: DefaultP90}
			p.NoHistory = append(p.NoHistory, n)
		}
		var e50, e90 time.Time
		s50 := in.Now
		if t.Phase == Running {
			elapsed := in.Now.Sub(t.Started)
			e50 = in.Now.Add(max(0, st.P50-elapsed))
			e90 = in.Now.Add(max(0, st.P90-elapsed))
			if known && elapsed > st.P90 {
				p.Slow = append(p.Slow, n)
			}
		} else {
			s90 := in.Now
			for _, u := range in.Graph.Upstream(n) {
				if in.Tasks[u].Phase == Done {
					continue // ended: does not hold n back
				}
				if _, has := prev[n]; !has || end50[u].After(s50) {
					s50, prev[n] = end50[u], u
				}
				if end90[u].After(s90) {
					s90 = end90[u]
				}
			}
			q := in.History.Queue[t.WorkerGroup]
			e50 = s50.Add(q.P50 + st.P50)
			e90 = s90.Add(q.P90 + st.P90)
		}
		end50[n], end90[n] = e50, e90
		p.Spans = append(p.Spans, Span{Name: n, Start: s50, End: e50, Running: t.Phase == Running})
		if e50.After(lastAt) || last == "" {
			last, lastAt = n, e50
		}
		if e90.After(p.P90End) {
			p.P90End = e90
		}
	}
	p.End = lastAt
	for n := last; n != ""; n = prev[n] {
		p.CriticalPath = append(p.CriticalPath, n)
	}
	slices.Reverse(p.CriticalPath)
	sort.Strings(p.NoHistory)
	sort.Strings(p.Slow)
	return p
}
