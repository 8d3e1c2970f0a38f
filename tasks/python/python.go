// Package python is the python task type: the script text run by the
// worker's interpreter (worker.python, default python3) with the same
// process handling as shell; params are environment variables.
package python

import (
	"errors"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/shell"
)

// Spec is the python type's fields.
type Spec struct {
	Command string `json:"command"` // the script
}

// Type is the python task type.
var Type = &tasktype.Def{
	Name:      "python",
	Summary:   "a Python script on a worker",
	Placement: tasktype.Worker,
	Spec:      func() tasktype.Spec { return &Spec{} },
	Check:     func(s tasktype.Spec) []string { return shell.CheckCommand("python", s.(*Spec).Command) },
	Command:   func(s tasktype.Spec) string { return s.(*Spec).Command },
	Argv: func(j tasktype.Job) ([]string, error) {
		if j.Command == "" {
			return nil, errors.New("empty script")
		}
		py := j.Config["python"]
		if py == "" {
			py = "python3"
		}
		return []string{py, "-c", j.Command}, nil
	},
}
