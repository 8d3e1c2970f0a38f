// Package subworkflow is the sub_workflow task type: the task runs another
// workflow as a child instance and ends as the child ends, with the child's
// outputs. It runs in the master (master/subworkflow.go); this package holds
// its spec and the pure decisions about a child.
package subworkflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Spec is the sub_workflow type's fields.
type Spec struct {
	Workflow string `json:"workflow"`          // "name" (same project) or "project/name"
	Version  int    `json:"version,omitempty"` // 0: the latest at the parent's start
	// The task's own params (the common params field) are the child's
	// startup params, ${name} in them read from the task's resolved params.
}

// Type is the sub_workflow task type.
var Type = &tasktype.Def{
	Name:      "sub_workflow",
	Summary:   "another workflow as a child instance",
	Placement: tasktype.Master,
	Spec:      func() tasktype.Spec { return &Spec{} },
	Check:     func(s tasktype.Spec) []string { return check(s.(*Spec)) },
	Refs: func(s tasktype.Spec) []tasktype.Ref {
		sp := s.(*Spec)
		p, w := Split(sp.Workflow)
		return []tasktype.Ref{{Project: p, Workflow: w, Version: sp.Version, Child: true}}
	},
	// The master face: the leader's child-run service carries the attempt.
	Start: func(ctx context.Context, h tasktype.Host, a tasktype.Attempt) { h.StartChild(ctx, a) },
	Cancel: func(ctx context.Context, h tasktype.Host, a tasktype.Attempt, why tasktype.CancelReason) {
		h.CancelChild(ctx, a, why)
	},
}

func check(s *Spec) []string {
	var out []string
	p, w := Split(s.Workflow)
	switch {
	case s.Workflow == "":
		out = append(out, "workflow is required (the child workflow's name, or project/name)")
	case w == "" || strings.Count(s.Workflow, "/") > 1 || (strings.Contains(s.Workflow, "/") && p == ""):
		out = append(out, fmt.Sprintf("workflow %q: want name or project/name", s.Workflow))
	}
	if s.Version < 0 {
		out = append(out, fmt.Sprintf("version %d: must be positive (or left out for the latest)", s.Version))
	}
	return out
}

// Split reads "project/name" or "name" (project "": the task's own).
func Split(ref string) (project, workflow string) {
	if p, w, ok := strings.Cut(ref, "/"); ok {
		return p, w
	}
	return "", ref
}

// ChildParams resolves the child's startup params, the task's declared
// params: ${name} is the parent task's resolved param.
func ChildParams(declared, resolved map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(declared))
	for k, v := range declared {
		r, err := params.Substitute(v, resolved, nil)
		if err != nil {
			return nil, fmt.Errorf("params.%s: %w", k, err)
		}
		out[k] = r
	}
	return out, nil
}

// Continue is what a new attempt of the parent task does with the child an
// earlier attempt started (resume, recover_failed, a retry, a rerun): the
// same child goes on, never a new one: the operator action (model.ActionKind)
// to apply to it. "" leaves it as it is: it still runs,
// or it succeeded and counts (not under a rerun).
func Continue(child model.WorkflowState, rerun bool) string {
	switch {
	case rerun && child.Finished():
		return "rerun"
	case child == model.WorkflowPaused || child == model.WorkflowStopped:
		return "resume"
	case child == model.WorkflowFailed:
		return "recover_failed"
	}
	return ""
}

// TaskState is the parent task's end for a child that ended in state
// child, and whether it ended at all.
func TaskState(child model.WorkflowState) (model.TaskState, bool) {
	switch child {
	case model.WorkflowSucceeded:
		return model.TaskSucceeded, true
	case model.WorkflowFailed:
		return model.TaskFailed, true
	case model.WorkflowStopped:
		return model.TaskKilled, true
	case model.WorkflowPaused:
		return model.TaskPaused, true
	}
	return "", false
}
