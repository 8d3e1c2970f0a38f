package params

import (
	"strconv"
	"time"
)

// Names of the per-attempt built-in params.
const (
	Project            = "BELUGA_PROJECT"
	Workflow           = "BELUGA_WORKFLOW"
	WorkflowVersion    = "BELUGA_WORKFLOW_VERSION"
	TaskInstanceID     = "BELUGA_TASK_INSTANCE_ID"
	WorkflowInstanceID = "BELUGA_WORKFLOW_INSTANCE_ID"
	TaskName           = "BELUGA_TASK_NAME"
	Attempt            = "BELUGA_ATTEMPT"
)

// TaskInputs is everything a task attempt's params are made of.
type TaskInputs struct {
	Base time.Time // schedule time (else creation time) of the run, in its zone (BaseIn)

	Project, Workflow string
	Version           int
	WorkflowInstance  int64
	TaskInstance      int64
	Task              string
	Attempt           int

	WorkflowParams  map[string]string // the workflow's params
	UpstreamOutputs map[string]string // outputs of the task's upstream tasks (see Upstream)
	TaskParams      map[string]string // the task's own params
	RunParams       map[string]string // the run's startup params
}

// ForTask is the one place a task attempt's params are resolved: the
// built-in BELUGA_* values, then, each overriding the one before, workflow
// params, upstream outputs, the task's params and the run's startup params,
// with $[...] time expressions resolved from Base. Upstream outputs are
// values, not templates: they are taken as they are.
func ForTask(in TaskInputs) map[string]string {
	env := Builtins(in.Base)
	set := func(ps map[string]string, resolve bool) {
		for k, v := range ps {
			if resolve {
				if rv, err := Resolve(v, in.Base); err == nil { // specs stored before validation may not resolve: keep them raw
					v = rv
				}
			}
			env[k] = v
		}
	}
	set(in.WorkflowParams, true)
	set(in.UpstreamOutputs, false)
	set(in.TaskParams, true)
	set(in.RunParams, true)
	env[Project] = in.Project
	env[Workflow] = in.Workflow
	env[WorkflowVersion] = strconv.Itoa(in.Version)
	env[TaskInstanceID] = strconv.FormatInt(in.TaskInstance, 10)
	env[WorkflowInstanceID] = strconv.FormatInt(in.WorkflowInstance, 10)
	env[TaskName] = in.Task
	env[Attempt] = strconv.Itoa(in.Attempt)
	return env
}
