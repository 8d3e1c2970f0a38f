package api

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Wait says why a task is not running (docs/architecture.md, "Reasons for
// a wait"): a cause (common/model's WaitCause values; the set is open) and
// a sentence, with the figures of some causes.
type Wait struct {
	Cause  string `json:"cause"`
	Reason string `json:"reason"`
	// Upstream: the upstream tasks not succeeded yet (cause upstream).
	Upstream []string `json:"upstream,omitempty"`
	// Ahead: tasks before it in the leader's queue (cause queue).
	Ahead *int `json:"ahead,omitempty"`
	// RetryAt: when the retry may start (cause retry).
	RetryAt *Time `json:"retry_at,omitempty"`
}

// PendingTask is a task of a running instance with no attempt yet.
type PendingTask struct {
	Name string `json:"name"`
	Wait Wait   `json:"wait"`
}

// waitFacts are what the waits of one instance are derived from.
type waitFacts struct {
	inst  model.WorkflowInstance
	tasks []model.TaskInstance
	wf    *spec.Workflow // nil: the definition did not parse (no pending tasks, no retry times)
	g     *dag.Graph     // the run's graph (its start nodes and scope): nil with wf
	// ahead is the count of submitted tasks of other instances queued
	// before this instance's (store.QueuedAhead).
	ahead int
	// done are tasks whose latest attempt succeeded, their rows not read
	// (tasks holds the others: settled).
	done []string
	// want are the task instances whose waits are asked for (nil: all):
	// a page of a queued fan-out of 100,000 words 50 waits, not all.
	want map[int64]bool
}

// waits derives each latest attempt's wait (by task instance id) and the
// tasks with no attempt yet. A finished instance has none. Pure: the
// handler reads the facts.
func waits(f waitFacts) (map[int64]*Wait, []PendingTask) {
	out := map[int64]*Wait{}
	if f.inst.State.Finished() {
		return out, nil
	}
	latest := map[string]model.TaskInstance{}
	prevEnd := map[string]*time.Time{} // end of the attempt before the latest
	for _, t := range f.tasks {
		if cur, ok := latest[t.Name]; !ok || t.Attempt > cur.Attempt {
			if ok {
				prevEnd[t.Name] = cur.EndTime
			}
			latest[t.Name] = t
		} else if t.Attempt == latest[t.Name].Attempt-1 {
			prevEnd[t.Name] = t.EndTime
		}
	}
	for _, n := range f.done {
		latest[n] = model.TaskInstance{Name: n, State: model.TaskSucceeded}
	}
	tasksOf := map[string]*spec.Task{}
	if f.wf != nil {
		for i := range f.wf.Tasks {
			tasksOf[f.wf.Tasks[i].Name] = &f.wf.Tasks[i]
		}
	}
	// The instance's own submitted tasks in queue order: task priority, id.
	var queued []model.TaskInstance
	for _, t := range latest {
		if t.State == model.TaskSubmitted {
			queued = append(queued, t)
		}
	}
	sort.Slice(queued, func(i, j int) bool {
		if queued[i].Priority != queued[j].Priority {
			return queued[i].Priority < queued[j].Priority
		}
		return queued[i].ID < queued[j].ID
	})
	cause, key, dispatchWait := model.ParseDispatchWait(f.inst.Reason)
	for i, t := range queued {
		if f.want != nil && !f.want[t.ID] {
			continue
		}
		if dispatchWait && dispatchAbout(cause, key, t) {
			out[t.ID] = &Wait{Cause: string(cause), Reason: f.inst.Reason}
			continue
		}
		n := f.ahead + i
		out[t.ID] = &Wait{Cause: string(model.WaitQueue), Ahead: &n,
			Reason: fmt.Sprintf("queued behind %d task(s) in priority order (workflow priority %s, task priority %s)",
				n, f.inst.Priority, t.Priority)}
	}
	for _, t := range latest {
		if f.want != nil && !f.want[t.ID] {
			continue
		}
		switch {
		case t.WaitCause != "":
			out[t.ID] = &Wait{Cause: t.WaitCause, Reason: t.WaitReason}
		case t.State == model.TaskDelayed:
			w := &Wait{Cause: string(model.WaitRetry), Reason: "retry waiting for its interval"}
			if ts := tasksOf[t.Name]; ts != nil && prevEnd[t.Name] != nil {
				at := timeOf(prevEnd[t.Name].Add(ts.RetryInterval.D()))
				w.RetryAt = &at
				w.Reason = "retry at " + at.Format(time.RFC3339)
			}
			out[t.ID] = w
		case t.State == model.TaskDispatched:
			out[t.ID] = &Wait{Cause: string(model.WaitWorker), Reason: "dispatched to " + t.Host + "; waiting for the worker to start it"}
		}
	}
	return out, pending(f, latest)
}

// dispatchAbout reports whether the dispatcher's reason on the instance
// is about task t: the platform cap holds every task; a task group or
// worker group reason only the tasks of that group.
func dispatchAbout(cause model.WaitCause, key string, t model.TaskInstance) bool {
	switch cause {
	case model.WaitPlatform:
		return true
	case model.WaitTaskGroup:
		return t.TaskGroup == key
	case model.WaitNoWorker, model.WaitWorkersBusy:
		return t.WorkerGroup == key
	}
	return false
}

// pending lists the tasks of the run's graph with no attempt yet, each
// waiting for the upstream tasks that have not succeeded.
func pending(f waitFacts, latest map[string]model.TaskInstance) []PendingTask {
	if f.wf == nil || f.inst.State != model.WorkflowRunning && f.inst.State != model.WorkflowSubmitted {
		return nil
	}
	g := f.g
	if g == nil {
		return nil
	}
	var out []PendingTask
	for _, name := range g.TopoOrder() {
		if _, has := latest[name]; has {
			continue
		}
		var ups []string
		for _, up := range g.Upstream(name) {
			if t, ok := latest[up]; !ok || !t.State.Success() {
				ups = append(ups, up)
			}
		}
		if len(ups) == 0 {
			continue // ready: the runner writes it at once
		}
		slices.Sort(ups)
		out = append(out, PendingTask{Name: name, Wait: Wait{Cause: string(model.WaitUpstream), Upstream: ups,
			Reason: "waiting for upstream " + strings.Join(ups, ", ")}})
	}
	return out
}

// instanceWaits reads the facts of inst's waits and derives them: from
// the rows that did not succeed and the run's graph (settled), or, when
// those do not account for every succeeded row, from all of its rows.
// want are the task instances whose waits are asked for (nil: all).
func (h *handlers) instanceWaits(ctx context.Context, inst model.WorkflowInstance, want map[int64]bool) (map[int64]*Wait, []PendingTask, error) {
	if inst.State.Finished() {
		return map[int64]*Wait{}, nil, nil
	}
	u, err := h.Store.UnsettledTasks(ctx, inst.ID)
	if err != nil {
		return nil, nil, err
	}
	f := waitFacts{inst: inst, tasks: u.Tasks, want: want}
	var handles map[string]bool
	if d := h.defs.get(ctx, h.Store, inst.DefinitionID); d != nil {
		f.wf, f.g, handles = d.wf, runGraph(d.graph, inst), d.handles
	}
	if f.g != nil {
		var ok bool
		if f.done, ok = settled(f.g, handles, u); !ok {
			f.done = nil
			if f.tasks, err = h.Store.ListTaskInstances(ctx, inst.ID); err != nil {
				return nil, nil, err
			}
		}
	}
	if f.ahead, err = h.Store.QueuedAhead(ctx, inst.ID, int(inst.Priority)); err != nil {
		return nil, nil, err
	}
	w, p := waits(f)
	return w, p, nil
}

// runGraph is the graph inst runs: its start nodes and scope of g, or all
// of g; nil when they do not resolve (no pending tasks are derived then).
func runGraph(g *dag.Graph, inst model.WorkflowInstance) *dag.Graph {
	if len(inst.StartNodes) == 0 {
		return g
	}
	scope, err := dag.ParseScope(inst.Scope)
	if err == nil {
		g, err = g.SubGraph(inst.StartNodes, scope)
	}
	if err != nil {
		return nil
	}
	return g
}

// settled infers the tasks of g whose latest attempt succeeded from the
// rows that did not (u.Tasks): as the runner writes them, a task has an
// attempt once each upstream succeeded, was skipped, or failed for good
// where the task handles failure (master/flow), so in topological order a
// task with no unsettled latest row succeeded if its upstreams let it run,
// and has no attempt otherwise. ok reports that the inferred tasks are as
// many as the succeeded rows; when they are not (a ready task not written
// yet, a run halted by a failure, rows not as the runner writes them) the
// caller reads every row instead.
func settled(g *dag.Graph, handles map[string]bool, u store.Unsettled) (done []string, ok bool) {
	open := map[string]model.TaskInstance{} // latest unsettled row by name, superseded ones left out
	for _, t := range u.Tasks {
		if cur, has := open[t.Name]; !t.Superseded && (!has || t.Attempt > cur.Attempt) {
			open[t.Name] = t
		}
	}
	has := make(map[string]bool, g.Len()) // has a latest attempt
	for _, n := range g.TopoOrder() {
		if _, unsettled := open[n]; unsettled {
			has[n] = true
			continue
		}
		runs := true
		for _, up := range g.Upstream(n) {
			t, unsettled := open[up]
			switch {
			case !unsettled && has[up]: // succeeded
			case unsettled && t.State == model.TaskSkipped:
			case unsettled && (t.State == model.TaskFailed || t.State == model.TaskKilled) && handles[n]:
			default:
				runs = false
			}
			if !runs {
				break
			}
		}
		if runs {
			has[n] = true
			done = append(done, n)
		}
	}
	return done, len(done) == u.Succeeded
}

// taskWait is one task instance's wait, derived with its instance's facts.
func (h *handlers) taskWait(ctx context.Context, t model.TaskInstance) (*Wait, error) {
	if t.Superseded || t.State == model.TaskRunning || t.State.Finished() {
		return nil, nil
	}
	inst, err := h.Store.GetWorkflowInstance(ctx, t.WorkflowInstanceID)
	if err != nil {
		return nil, err
	}
	ws, _, err := h.instanceWaits(ctx, inst, map[int64]bool{t.ID: true})
	if err != nil {
		return nil, err
	}
	return ws[t.ID], nil
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
