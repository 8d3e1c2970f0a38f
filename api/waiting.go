package api

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
	// Upstream: the upstream tasks not succeeded yet (cause upstream), the
	// first upstreamNamed of them by name; UpstreamTotal counts them all.
	Upstream      []string `json:"upstream,omitempty"`
	UpstreamTotal int      `json:"upstream_total,omitempty"`
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

// waitFacts are what the pending tasks of one instance are derived from.
type waitFacts struct {
	inst model.WorkflowInstance
	wf   *spec.Workflow // nil: the definition did not parse (no pending tasks)
	g    *dag.Graph     // the run's graph (its start nodes and scope): nil with wf
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
func pending(f waitFacts, latest map[string]store.AttemptState) []PendingTask {
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
		out = append(out, PendingTask{Name: name, Wait: upstreamWait(ups)})
	}
	return out
}

// upstreamNamed bounds the upstreams a wait names: a join after a fan-out of
// 100,000 would otherwise put every name in the answer twice, making the
// instance's read as big as the instance.
const upstreamNamed = 50

// upstreamWait is the wait of a task for the upstreams ups (not succeeded
// yet): the first upstreamNamed by name, and their count.
func upstreamWait(ups []string) Wait {
	slices.Sort(ups)
	w := Wait{Cause: string(model.WaitUpstream), UpstreamTotal: len(ups)}
	w.Upstream = ups[:min(len(ups), upstreamNamed)]
	w.Reason = "waiting for upstream " + strings.Join(w.Upstream, ", ")
	if more := len(ups) - len(w.Upstream); more > 0 {
		w.Reason += fmt.Sprintf(" and %d more", more)
	}
	return w
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
	open := make(map[string]store.AttemptState, len(u.Tasks)) // latest unsettled row by name, superseded ones left out
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
	inst, err := h.Store.InstanceGet(ctx, t.WorkflowInstanceID)
	if err != nil {
		return nil, err
	}
	ws, _, err := h.pageWaits(ctx, inst, []model.TaskInstance{t}, false)
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
