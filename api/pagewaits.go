package api

import (
	"context"
	"fmt"
	"time"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// pageWaits derives the waits of page (a page of inst's tasks, from
// store.InstanceTasks) and the instance's pending tasks. A queued task's
// rank is counted in the database (store.InstanceQueueRanks), so a page of a
// fan-out of 100,000 reads its own rows and a few counts, not the 90,000
// queued rows the waits of every task were derived from. withPending
// false leaves the pending tasks out.
func (h *handlers) pageWaits(ctx context.Context, inst model.WorkflowInstance, page []model.TaskInstance, withPending bool) (map[int64]*Wait, []PendingTask, error) {
	if inst.State.Finished() {
		return map[int64]*Wait{}, nil, nil
	}
	f := pageFacts{inst: inst, page: page}
	var g *dag.Graph
	var handles map[string]bool
	if d := h.defs.get(ctx, h.Store, inst.DefinitionID); d != nil {
		f.wf, g, handles = d.wf, runGraph(d.graph, inst), d.handles
	}
	var err error
	if f.ranks, err = h.Store.InstanceQueueRanks(ctx, inst.ID, page); err != nil {
		return nil, nil, err
	}
	if len(f.ranks) > 0 {
		if f.ahead, err = h.Store.TaskQueuedAhead(ctx, inst.ID, int(inst.Priority)); err != nil {
			return nil, nil, err
		}
	}
	delayed := map[string]int{}
	for _, t := range page {
		if t.State == model.TaskDelayed && !t.Superseded {
			delayed[t.Name] = t.Attempt
		}
	}
	if f.prevEnd, err = h.Store.InstancePreviousEnds(ctx, inst.ID, delayed); err != nil {
		return nil, nil, err
	}
	var pend []PendingTask
	if withPending {
		if pend, err = h.pendingTasks(ctx, inst, f.wf, g, handles); err != nil {
			return nil, nil, err
		}
	}
	return waitsOfPage(f), pend, nil
}

// pageFacts are what the waits of a page are derived from.
type pageFacts struct {
	inst  model.WorkflowInstance
	page  []model.TaskInstance
	wf    *spec.Workflow // nil: the definition did not parse (no retry times)
	ranks map[int64]int  // a queued task's place in its instance's queue
	ahead int            // submitted tasks of other instances queued before this one's
	// prevEnd is when the attempt before a delayed retry ended, by name.
	prevEnd map[string]time.Time
}

// waitsOfPage is each latest attempt's wait on the page, as waits words
// them. Pure.
func waitsOfPage(f pageFacts) map[int64]*Wait {
	out := map[int64]*Wait{}
	tasksOf := map[string]*spec.Task{}
	if f.wf != nil {
		for i := range f.wf.Tasks {
			tasksOf[f.wf.Tasks[i].Name] = &f.wf.Tasks[i]
		}
	}
	cause, key, dispatchWait := model.ParseDispatchWait(f.inst.Reason)
	for _, t := range f.page {
		if t.Superseded {
			continue
		}
		if rank, queued := f.ranks[t.ID]; queued {
			if dispatchWait && dispatchAbout(cause, key, t) {
				out[t.ID] = &Wait{Cause: string(cause), Reason: f.inst.Reason}
			} else {
				n := f.ahead + rank
				out[t.ID] = &Wait{Cause: string(model.WaitQueue), Ahead: &n,
					Reason: fmt.Sprintf("queued behind %d task(s) in priority order (workflow priority %s, task priority %s)",
						n, f.inst.Priority, t.Priority)}
			}
		}
		switch {
		case t.WaitCause != "":
			out[t.ID] = &Wait{Cause: t.WaitCause, Reason: t.WaitReason}
		case t.State == model.TaskDelayed:
			w := &Wait{Cause: string(model.WaitRetry), Reason: "retry waiting for its interval"}
			if ts := tasksOf[t.Name]; ts != nil {
				if end, ok := f.prevEnd[t.Name]; ok {
					at := timeOf(end.Add(ts.RetryInterval.D()))
					w.RetryAt = &at
					w.Reason = "retry at " + at.Format(time.RFC3339)
				}
			}
			out[t.ID] = w
		case t.State == model.TaskDispatched:
			out[t.ID] = &Wait{Cause: string(model.WaitWorker), Reason: "dispatched to " + t.Host + "; waiting for the worker to start it"}
		}
	}
	return out
}

// pendingTasks are inst's tasks with no attempt yet, each waiting for its
// upstreams. When every task of the run's graph has an attempt (counted
// from the index) there are none and no row is read; else they are
// derived from the names and states of the rows that did not succeed
// (settled), or from all rows when those do not account for every
// succeeded one.
func (h *handlers) pendingTasks(ctx context.Context, inst model.WorkflowInstance, wf *spec.Workflow, g *dag.Graph, handles map[string]bool) ([]PendingTask, error) {
	if wf == nil || g == nil || inst.State != model.WorkflowRunning && inst.State != model.WorkflowSubmitted {
		return nil, nil
	}
	if len(inst.StartNodes) == 0 {
		// A run of the whole graph has rows of its tasks only: as many
		// latest attempts as tasks means each has one.
		n, err := h.Store.InstanceLatestRows(ctx, inst.ID)
		if err != nil {
			return nil, err
		}
		if n == g.Len() {
			return nil, nil
		}
	}
	u, err := h.Store.InstanceUnsettled(ctx, inst.ID)
	if err != nil {
		return nil, err
	}
	// The latest attempt's state by task: of the unsettled rows and the
	// succeeded tasks inferred, or of every row.
	latest := make(map[string]store.AttemptState, g.Len())
	keep := func(t store.AttemptState) {
		if cur, has := latest[t.Name]; !has || t.Attempt > cur.Attempt {
			latest[t.Name] = t
		}
	}
	if done, ok := settled(g, handles, u); ok {
		for _, t := range u.Tasks {
			keep(t)
		}
		for _, n := range done {
			latest[n] = store.AttemptState{Name: n, State: model.TaskSucceeded}
		}
	} else {
		all, err := h.Store.TaskList(ctx, inst.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range all {
			keep(store.AttemptState{Name: t.Name, State: t.State, Attempt: t.Attempt, Superseded: t.Superseded})
		}
	}
	return pending(waitFacts{inst: inst, wf: wf, g: g}, latest), nil
}
