package forecast

import (
	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// Unfinished reports whether inst is a run a forecast is made for.
func Unfinished(inst model.WorkflowInstance) bool {
	return inst.State == model.WorkflowRunning || inst.State == model.WorkflowSubmitted
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
