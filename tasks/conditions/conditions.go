// Package conditions is the conditions task type: a branch on the outcome
// of the task's direct upstreams, decided in the master. on_success runs
// when every direct upstream succeeded, else on_failure; the other direct
// downstreams are skipped (master/flow). A failure that flows into a
// conditions task is handled by it: the instance's end state is the tasks'
// after it.
package conditions

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Spec is the conditions type's fields.
type Spec struct {
	OnSuccess []string `json:"on_success,omitempty"`
	OnFailure []string `json:"on_failure,omitempty"`
}

// Type is the conditions task type.
var Type = &tasktype.Def{
	Name:      "conditions",
	Summary:   "branches on the upstreams' outcome",
	Placement: tasktype.Master,
	Spec:      func() tasktype.Spec { return &Spec{} },
	Check:     func(s tasktype.Spec) []string { return check(s.(*Spec)) },
	Next: func(s tasktype.Spec) []string {
		sp := s.(*Spec)
		return append(slices.Clone(sp.OnSuccess), sp.OnFailure...)
	},
	Decide:         func(s tasktype.Spec, in tasktype.Inputs) (tasktype.Branch, error) { return decide(s.(*Spec), in), nil },
	HandlesFailure: true,
}

func check(s *Spec) []string {
	var problems []string
	if len(s.OnSuccess) == 0 && len(s.OnFailure) == 0 {
		problems = append(problems, "conditions needs on_success or on_failure (the tasks to run in each case)")
	}
	problems = append(problems, tasktype.CheckNames("on_success", s.OnSuccess)...)
	problems = append(problems, tasktype.CheckNames("on_failure", s.OnFailure)...)
	return problems
}

// decide takes on_success when every direct upstream succeeded (a skipped
// one counts as not in the way, as for a join), else on_failure.
func decide(s *Spec, in tasktype.Inputs) tasktype.Branch {
	var bad []string
	for u, st := range in.Upstreams {
		if st != "succeeded" && st != "forced_success" && st != "skipped" {
			bad = append(bad, u+" "+st)
		}
	}
	sort.Strings(bad)
	if len(bad) == 0 {
		return tasktype.Branch{Next: s.OnSuccess, Outputs: map[string]string{"branch": "on_success"}}
	}
	return tasktype.Branch{Next: s.OnFailure, Outputs: map[string]string{"branch": "on_failure",
		"because": fmt.Sprintf("upstream %s", strings.Join(bad, ", "))}}
}
