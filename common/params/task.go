package params

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/schedule"
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
	// Calendar is the business calendar of the run's schedule (nil: none),
	// for BELUGA_BIZ_DATE and bizday.
	Calendar *schedule.Calendar

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
	env := BuiltinsIn(in.Base, in.Calendar)
	set := func(ps map[string]string, resolve bool) {
		for k, v := range ps {
			if resolve {
				if rv, err := ResolveIn(v, in.Base, in.Calendar); err == nil { // specs stored before validation may not resolve: keep them raw
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

// Substitute replaces each ${name} in text, name an identifier, by the
// value of that param, passed through escape when it is not nil (a URL's
// query escaping). Text that is not ${identifier} is kept as is; an
// identifier with no param is an error naming it, not an empty string.
func Substitute(text string, vals map[string]string, escape func(string) string) (string, error) {
	if !strings.Contains(text, "${") {
		return text, nil
	}
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 || !isParamName(rest[i+2:i+j]) {
			b.WriteString(rest[:i+2])
			rest = rest[i+2:]
			continue
		}
		name := rest[i+2 : i+j]
		v, ok := vals[name]
		if !ok {
			return "", fmt.Errorf("${%s} names no param of the task", name)
		}
		if escape != nil {
			v = escape(v)
		}
		b.WriteString(rest[:i])
		b.WriteString(v)
		rest = rest[i+j+1:]
	}
	b.WriteString(rest)
	return b.String(), nil
}

// IsName reports whether s is an identifier, as a param or output name
// must be ([A-Za-z_][A-Za-z0-9_]*).
func IsName(s string) bool { return isParamName(s) }

func isParamName(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isLetter(c) || isDigit(c) || c == '_') {
			return false
		}
	}
	return true
}
