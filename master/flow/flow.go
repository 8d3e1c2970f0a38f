// Package flow is the runner's decisions as a pure state machine: given
// an instance's DAG and the outcome of each task as it arrives, it says
// which tasks to submit, retry, run again or skip, and how the instance
// ends. It has no DB, clock or network; the master's runner (the owner
// goroutine) applies its decisions (writes, queueing, timers) and feeds it
// the events (docs/architecture.md, "Lifecycle of a run", step 9).
//
// Edges and states: a task is ready when every direct upstream is done.
// An upstream counts for a task as
//   - taken: it succeeded (or was forced to), and if it branches (conditions,
//     switch) it chose this task;
//   - skipped: it was skipped, or it branched and did not choose this task;
//   - failed: it ended failed or killed for good (no retries left). Only a
//     task whose type handles failure (conditions) runs after a failed
//     upstream; for any other it never becomes ready.
//
// A ready task whose upstreams are all skipped is skipped; one with at
// least one taken upstream (or a failed one it handles) runs, so branches
// join. A failure all of whose direct downstreams handle failure is
// handled: it does not fail the instance or halt it, the tasks after it
// decide the end.
package flow

import (
	"fmt"
	"slices"
	"time"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
)

// Task is what the machine knows of a task's spec.
type Task struct {
	Retries int
	// HandlesFailure: the task runs once its upstreams end, failed or not,
	// and decides from their outcome (conditions).
	HandlesFailure bool
	// Decides: a branching type (conditions, switch), decided as it is
	// written (WriteOf).
	Decides bool
	// RetryInterval is how long after a failed attempt's end its retry
	// waits (Plan writes it delayed until then).
	RetryInterval time.Duration
}

// Halt is an operator's pause or stop in progress.
type Halt string

// Halts.
const (
	Running Halt = ""
	Pause   Halt = "pause"
	Stop    Halt = "stop"
)

// Decisions is what the owner does after one event.
type Decisions struct {
	Submit []string // first attempt of a (new) retry budget
	Again  []string // the attempt was lost: a new attempt, same budget
	Retry  []string // failed with retries left: the next attempt (delayed by its interval)
	Skip   []string // written as skipped; never reach a worker
}

// Empty reports whether there is nothing to do.
func (d Decisions) Empty() bool {
	return len(d.Submit)+len(d.Again)+len(d.Retry)+len(d.Skip) == 0
}

// Add appends o's decisions to d's (the owner gathers them until a flush).
func (d *Decisions) Add(o Decisions) {
	d.Submit = append(d.Submit, o.Submit...)
	d.Again = append(d.Again, o.Again...)
	d.Retry = append(d.Retry, o.Retry...)
	d.Skip = append(d.Skip, o.Skip...)
}

type task struct {
	state     model.TaskState // of the latest attempt; "" never submitted
	submitted bool
	active    bool
	tries     int             // attempts in the current retry budget
	chosen    map[string]bool // a branching task that succeeded: the downstreams it took (nil: all)
	final     bool            // failed or killed with nothing more to come
	// ended is how many of the task's upstreams, in Upstream order, are
	// known to have ended for it: consider resumes there, so a join of n
	// upstreams costs O(n) in all, not a scan per upstream's end. Reset
	// when an upstream runs again (reopen).
	ended int
	ups   []string // direct upstreams (the graph's Upstream copies on each call)
	// The latest row written (Number): its attempt number and the attempt
	// that began its budget; redo: a rerun forgot it (Redo).
	attempt, base int
	redo          bool
}

// Flow is one instance's machine. It is not safe for concurrent use: one
// goroutine (the runner) owns it.
type Flow struct {
	g      *dag.Graph
	specs  map[string]Task
	cont   bool // failure_strategy continue
	ts     map[string]*task
	failed []string
	why    map[string]string
	halted bool // failure_strategy end after a failure: nothing more submitted
	halt   Halt
	active int  // tasks submitted and not ended
	dry    bool // a dry run (WriteOf)
}

// New makes the machine of graph g (the instance's whole DAG or its
// sub-graph); continueOnFailure is failure_strategy continue.
func New(g *dag.Graph, specs map[string]Task, continueOnFailure bool) *Flow {
	f := &Flow{g: g, specs: specs, cont: continueOnFailure, ts: make(map[string]*task, g.Len())}
	for _, n := range g.Nodes() {
		f.ts[n] = &task{ups: g.Upstream(n)}
	}
	return f
}

// Fail records a failure that is not a task's (the start nodes do not
// resolve): the instance ends failed with it.
func (f *Flow) Fail(why string) { f.failed = append(f.failed, why); f.halted = true }

// Restore records the latest attempt of a task as the DB has it (rebuild
// after a failover or when an operator reopens the instance). A task not
// restored counts as never submitted (rerun and recover_failed forget the
// tasks they redo). attempt-base is how far into its retry budget it is.
// chosen is what a branching task that succeeded took (nil: all).
//
// A failed attempt with retries left in its budget is not final: the
// failure and its next attempt are written in two transactions, and a term
// that ended between them left the decision unmade. Restore makes it as
// Finished would have (the same budget, no retry under a stop) and returns
// it, so a retry survives any failover.
func (f *Flow) Restore(name string, st model.TaskState, attempt, base int, chosen []string) Decisions {
	t := f.ts[name]
	if t == nil {
		return Decisions{}
	}
	t.state, t.submitted, t.tries = st, true, attempt-max(base, 1)+1
	t.attempt, t.base, t.redo = attempt, base, false
	t.chosen = set(chosen)
	f.reopen(name)
	switch st {
	case model.TaskSubmitted, model.TaskDispatched, model.TaskRunning, model.TaskDelayed:
		f.setActive(t, true)
	case model.TaskFailed:
		if f.retryLeft(name, t) {
			return f.retry(name, t)
		}
		t.final = true
		f.recordFailure(name, "")
	case model.TaskKilled:
		t.final = true
		f.recordFailure(name, "")
	}
	return Decisions{}
}

// retryLeft reports whether a failed attempt of name is followed by another:
// its budget has attempts left and no stop is in progress (a killed or
// stopped task is never retried).
func (f *Flow) retryLeft(name string, t *task) bool {
	return t.tries-1 < f.specs[name].Retries && f.halt != Stop
}

// retry decides the next attempt of a failed task in its budget.
func (f *Flow) retry(name string, t *task) Decisions {
	t.state = model.TaskSubmitted
	f.setActive(t, true)
	t.tries++
	return Decisions{Retry: []string{name}}
}

// Resubmit marks a restored task as running again in its budget: a paused
// task submitted on resume.
func (f *Flow) Resubmit(name string) {
	if t := f.ts[name]; t != nil && !t.active {
		t.state = model.TaskSubmitted
		f.setActive(t, true)
		f.reopen(name)
	}
}

// reopen forgets what name's downstreams knew of its end: it runs again.
func (f *Flow) reopen(name string) {
	for _, d := range f.g.Downstream(name) {
		if dt := f.ts[d]; dt != nil {
			dt.ended = 0
		}
	}
}

func (f *Flow) setActive(t *task, on bool) {
	if t.active != on {
		t.active = on
		if on {
			f.active++
		} else {
			f.active--
		}
	}
}

// RunAgain decides a new attempt of a restored task in the same budget: a
// lost task (need_fault_tolerance), or a killed one on resume. A killed
// task restored as failed is forgiven.
func (f *Flow) RunAgain(name string) Decisions {
	t := f.ts[name]
	if t == nil {
		return Decisions{}
	}
	if t.final {
		t.final = false
		f.unfail(name)
	}
	t.state = model.TaskSubmitted
	f.setActive(t, true)
	f.reopen(name)
	t.tries++
	return Decisions{Again: []string{name}}
}

// Start decides what is ready now: the roots of a new instance, or after
// Restore whatever became ready while no runner watched.
func (f *Flow) Start() Decisions {
	var d Decisions
	if f.blocked() {
		return d
	}
	for _, n := range f.g.TopoOrder() {
		d.Add(f.consider(n))
	}
	return d
}

// Halt begins a pause or a stop: nothing new runs; a stop also retries
// nothing. The owner takes back what is queued and reports it finished.
// It reports whether h began: a stop in progress is not made a pause, and
// a second request of the halt in progress changes nothing.
func (f *Flow) Halt(h Halt) bool {
	if f.halt == Stop || f.halt == h || h == Running {
		return false
	}
	f.halt = h
	return true
}

// Halting is the pause or stop in progress.
func (f *Flow) Halting() Halt { return f.halt }

// Event is the end (or loss) of a task's latest attempt.
type Event struct {
	Name  string
	State model.TaskState // succeeded, forced_success, failed, killed, paused, need_fault_tolerance
	Why   string          // a failure the worker did not run: why
	// Branch is set by a branching task that succeeded: the direct
	// downstreams it chose (empty: none). nil for every other task.
	Branch []string
	// Branched marks Branch as set (a branching task may choose none).
	Branched bool
}

// Finished applies the end of a task's latest attempt. An event for a task
// that is not active is ignored (a repeat).
func (f *Flow) Finished(ev Event) Decisions {
	t := f.ts[ev.Name]
	if t == nil || !t.active {
		return Decisions{}
	}
	f.setActive(t, false)
	t.state = ev.State
	switch ev.State {
	case model.TaskNeedFaultTolerance:
		// Its worker is gone: the same task runs again as a new attempt (held
		// by a pause or stop like anything new: the owner writes it so).
		t.state = model.TaskSubmitted
		f.setActive(t, true)
		t.tries++
		return Decisions{Again: []string{ev.Name}}
	case model.TaskSucceeded, model.TaskForcedSuccess:
		if ev.Branched {
			t.chosen = set(ev.Branch)
			if t.chosen == nil {
				t.chosen = map[string]bool{}
			}
		}
		return f.after(ev.Name)
	case model.TaskPaused:
		return Decisions{}
	case model.TaskFailed:
		if f.retryLeft(ev.Name, t) {
			return f.retry(ev.Name, t)
		}
	}
	// Failed for good, or killed.
	t.final = true
	f.recordFailure(ev.Name, ev.Why)
	return f.after(ev.Name) // a conditions task after it may be ready
}

// Forgive makes a failed or killed task count as succeeded (force_success)
// and lets what is after it run.
func (f *Flow) Forgive(name string) Decisions {
	t := f.ts[name]
	if t == nil || !t.final {
		return Decisions{}
	}
	t.final, t.state = false, model.TaskForcedSuccess
	wasHalted := f.halted
	f.unfail(name)
	if wasHalted && !f.halted {
		// What became ready while the failure held everything back runs now
		// too, not only what is after name.
		return f.Start()
	}
	return f.after(name)
}

// after considers the direct downstreams of name, which just ended.
func (f *Flow) after(name string) Decisions {
	var d Decisions
	if f.blocked() {
		return d
	}
	for _, n := range f.g.Downstream(name) {
		d.Add(f.consider(n))
	}
	return d
}

// blocked: nothing new is decided (failure strategy end after a failure,
// or a stop; a pause still decides, and the owner holds what it submits).
func (f *Flow) blocked() bool { return f.halted || f.halt == Stop }

// consider submits or skips n if it is ready and was not yet; a skip
// cascades to n's downstreams.
func (f *Flow) consider(n string) Decisions {
	t := f.ts[n]
	if t == nil || t.submitted {
		return Decisions{}
	}
	ups := t.ups
	for ; t.ended < len(ups); t.ended++ {
		if !f.endedFor(n, ups[t.ended]) {
			return Decisions{} // not ended yet, or failed and not handled here
		}
	}
	taken, skipped := 0, 0
	for _, u := range ups {
		ut := f.ts[u]
		switch {
		case ut == nil:
			// Outside the sub-graph: not this run's to wait for.
		case ut.state == model.TaskSkipped:
			skipped++
		case ut.state.Success():
			if ut.chosen != nil && !ut.chosen[n] {
				skipped++
			} else {
				taken++
			}
		default: // failed, and n handles it
			taken++
		}
	}
	t.submitted = true
	if skipped > 0 && taken == 0 {
		t.state = model.TaskSkipped
		d := Decisions{Skip: []string{n}}
		for _, down := range f.g.Downstream(n) {
			d.Add(f.consider(down))
		}
		return d
	}
	t.state, t.tries = model.TaskSubmitted, 1
	f.setActive(t, true)
	return Decisions{Submit: []string{n}}
}

// endedFor reports whether upstream u has ended as far as n is concerned:
// skipped, succeeded, or failed for good where n handles failure. An
// upstream outside the run's sub-graph counts as ended.
func (f *Flow) endedFor(n, u string) bool {
	ut := f.ts[u]
	switch {
	case ut == nil:
		return true
	case ut.state == model.TaskSkipped, ut.state.Success():
		return true
	default:
		return ut.final && f.specs[n].HandlesFailure
	}
}

// recordFailure counts name's failure against the instance unless every
// direct downstream of it handles failure.
func (f *Flow) recordFailure(name, why string) {
	if f.Handled(name) {
		return
	}
	if !slices.Contains(f.failed, name) {
		f.failed = append(f.failed, name)
	}
	if why != "" {
		if f.why == nil {
			f.why = map[string]string{}
		}
		f.why[name] = why
	}
	if !f.cont {
		f.halted = true
	}
	// Under continue, nothing downstream of the failure becomes ready, while
	// independent branches go on.
}

// Handled reports whether a failure of name is handled: every direct
// downstream of it handles failure (conditions), so it does not fail the
// instance.
func (f *Flow) Handled(name string) bool {
	downs := f.g.Downstream(name)
	if len(downs) == 0 {
		return false
	}
	for _, d := range downs {
		if !f.specs[d].HandlesFailure {
			return false
		}
	}
	return true
}

func (f *Flow) unfail(name string) {
	if i := slices.Index(f.failed, name); i >= 0 {
		f.failed = slices.Delete(f.failed, i, i+1)
	}
	if len(f.failed) == 0 {
		f.halted = false
	}
}

// Active is the number of tasks submitted and not ended.
func (f *Flow) Active() int { return f.active }

// State is the state the machine holds for a task's latest attempt.
func (f *Flow) State(name string) model.TaskState {
	if t := f.ts[name]; t != nil {
		return t.state
	}
	return ""
}

// Upstreams are the states of name's direct upstreams in this run (what a
// conditions task decides on).
func (f *Flow) Upstreams(name string) map[string]model.TaskState {
	out := map[string]model.TaskState{}
	for _, u := range f.g.Upstream(name) {
		if t := f.ts[u]; t != nil {
			out[u] = t.state
		}
	}
	return out
}

// End is how the instance ends once nothing is active, and why.
func (f *Flow) End() (model.WorkflowState, string) {
	switch {
	case f.halt == Stop:
		return model.WorkflowStopped, "stopped"
	case f.halt == Pause && f.anyPaused():
		return model.WorkflowPaused, "paused"
	case len(f.failed) > 0:
		reason := fmt.Sprintf("task %s failed", f.failed[0])
		if len(f.failed) > 1 {
			reason = fmt.Sprintf("tasks %v failed", f.failed)
		}
		if why := f.why[f.failed[0]]; why != "" {
			reason += fmt.Sprintf(" (%s: %s)", f.failed[0], why)
		}
		return model.WorkflowFailed, reason
	}
	return model.WorkflowSucceeded, ""
}

func set(names []string) map[string]bool {
	if names == nil {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func (f *Flow) anyPaused() bool {
	for _, t := range f.ts {
		if t.state == model.TaskPaused {
			return true
		}
	}
	return false
}
