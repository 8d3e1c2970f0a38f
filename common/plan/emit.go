package plan

import (
	"fmt"

	"github.com/beluga-scheduler/beluga/common/model"
)

// ActionDatasetEmit is a dataset event posted by hand: the re-trigger of
// the consumers that read the partition.
const ActionDatasetEmit model.ActionKind = "dataset_emit"

// Emit is the event a dataset event's plan posts at its apply.
type Emit struct {
	Project   string `json:"project"`
	Dataset   string `json:"dataset"`
	Partition string `json:"partition"`
	Key       string `json:"key,omitempty"` // its Idempotency-Key
	// Decisions are each consumer's, as the leader's evaluator would make
	// them if the event were posted when the plan was made.
	Decisions []Decision `json:"decisions"`
}

// Decision is what the event means for one consumer workflow: Outcome
// fired (a first run, or a rerun of a partition that ran), ignored (a
// re-produce under late_data: ignore), or "" (nothing; Reason says why).
type Decision struct {
	Workflow  string `json:"workflow"`
	Partition string `json:"partition,omitempty"` // the run partition it counts towards
	Outcome   string `json:"outcome,omitempty"`
	Rerun     bool   `json:"rerun,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// MakeEmit plans the event e: a new run per consumer the event fires, in
// e.Decisions' order (numbered -1, -2, ...), each with the tasks of its
// latest version (tasks[workflow], in topological order); a consumer the
// event starts nothing for is a conflict that does not block, saying why.
func MakeEmit(e Emit, tasks map[string][]string) Plan {
	p := Plan{Action: ActionDatasetEmit, Downstream: None, Instances: []Planned{}, Conflicts: []Conflict{}, Emit: &e}
	n := int64(0)
	for _, d := range e.Decisions {
		if d.Outcome != model.DatasetFired {
			why := d.Reason
			if d.Outcome == model.DatasetIgnored {
				why = "re-produced partition " + d.Partition + " is ignored (late_data: ignore)"
			}
			p.Conflicts = append(p.Conflicts, Conflict{What: fmt.Sprintf("%s/%s: no run: %s", e.Project, d.Workflow, why)})
			continue
		}
		n++
		in := Planned{ID: -n, Project: e.Project, Workflow: d.Workflow, Action: ActionDatasetEmit, New: true,
			After: []int64{}, Tasks: []PlannedTask{}, Waits: []string{}}
		if d.Rerun {
			in.Waits = append(in.Waits, "a rerun of partition "+d.Partition+" (late_data: rerun)")
		} else {
			in.Waits = append(in.Waits, "partition "+d.Partition+": its inputs are all ready with this event")
		}
		for _, t := range tasks[d.Workflow] {
			in.Tasks = append(in.Tasks, PlannedTask{Name: t, Waits: []string{}})
		}
		p.Instances = append(p.Instances, in)
	}
	return p
}
