package forecast

import (
	"context"
	"time"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// Reader is what a forecast reads: the history of the workflow and the
// running instance's tasks (two indexed queries, bounded rows).
type Reader interface {
	TaskHistory(ctx context.Context, project, workflow string, before int64, runs int) ([]model.TaskSample, error)
	InstanceTasksNow(ctx context.Context, id int64) ([]model.TaskNow, error)
}

// Unfinished reports whether inst is a run a forecast is made for.
func Unfinished(inst model.WorkflowInstance) bool {
	return inst.State == model.WorkflowRunning || inst.State == model.WorkflowSubmitted
}

// Of reads what inst's forecast needs and projects it. g is the graph the
// run runs (its definition's, cut to its start nodes), wf its spec (for
// the worker group of tasks not yet written; nil: the instance's).
func Of(ctx context.Context, r Reader, inst model.WorkflowInstance, g *dag.Graph, wf *spec.Workflow, now time.Time) (Projection, error) {
	hist, err := r.TaskHistory(ctx, inst.Project, inst.Workflow, inst.ID, RunsFor(g.Len()))
	if err != nil {
		return Projection{}, err
	}
	cur, err := r.InstanceTasksNow(ctx, inst.ID)
	if err != nil {
		return Projection{}, err
	}
	return Project(Input{Graph: g, Tasks: TasksOf(inst, g, wf, cur), History: Learn(hist, HistoryRuns), Now: now}), nil
}

// TasksOf is what the forecast knows of inst's tasks from the latest
// attempts cur (InstanceTasksNow): a task without one is pending, on the
// worker group its spec (else the run's, else the workflow's) names.
func TasksOf(inst model.WorkflowInstance, g *dag.Graph, wf *spec.Workflow, cur []model.TaskNow) map[string]Task {
	tasks := make(map[string]Task, g.Len())
	if wf != nil {
		for i := range wf.Tasks {
			ts := &wf.Tasks[i]
			if g.Has(ts.Name) {
				tasks[ts.Name] = Task{WorkerGroup: firstOf(ts.WorkerGroup, inst.WorkerGroup, wf.WorkerGroup, model.DefaultWorkerGroup)}
			}
		}
	}
	for _, t := range cur {
		if !g.Has(t.Name) {
			continue
		}
		ft := Task{Phase: PhaseOf(t.State, t.StartTime != nil), WorkerGroup: t.WorkerGroup}
		if t.StartTime != nil {
			ft.Started = *t.StartTime
		}
		tasks[t.Name] = ft
	}
	return tasks
}
func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
