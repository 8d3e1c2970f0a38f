// Package shell is the shell task type: `<worker.shell> -c <command>` with
// the task's params as environment variables.
package shell

import (
	"errors"
	"fmt"
	"strings"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Spec is the shell type's fields.
type Spec struct {
	Command string `json:"command"`
}

// Type is the shell task type.
var Type = &tasktype.Def{
	Name:      "shell",
	Summary:   "a shell command on a worker",
	Placement: tasktype.Worker,
	Spec:      func() tasktype.Spec { return &Spec{} },
	Check:     func(s tasktype.Spec) []string { return CheckCommand("shell", s.(*Spec).Command) },
	Command:   func(s tasktype.Spec) string { return s.(*Spec).Command },
	Argv: func(j tasktype.Job) ([]string, error) {
		if j.Command == "" {
			return nil, errors.New("empty command")
		}
		sh := j.Config["shell"]
		if sh == "" {
			sh = "bash"
		}
		return []string{sh, "-c", j.Command}, nil
	},
}

// CheckCommand is the rule for a process type's text: present, no NUL.
func CheckCommand(typ, command string) []string {
	if strings.TrimSpace(command) == "" {
		return []string{"command is required for type " + typ}
	}
	if i := strings.IndexByte(command, 0); i >= 0 {
		return []string{fmt.Sprintf("command holds a NUL byte (at byte %d): no %s can run it", i, map[string]string{"shell": "shell", "python": "interpreter"}[typ])}
	}
	return nil
}
