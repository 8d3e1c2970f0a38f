package plan

import (
	"fmt"
	"slices"
	"time"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
)

// Plans of actions that start new runs rather than reopen one: a rerun
// from a task (a new run of an instance's version from chosen tasks) and a
// backfill (a new run per schedule time of a range). Their runs have no id
// yet: a plan numbers them -1, -2, ... in submission order, and its
// downstream reaches existing runs (reruns) as an instance's plan does.
const (
	ActionRerunFrom model.ActionKind = "rerun_from"
	ActionBackfill  model.ActionKind = "backfill"
)

// StartActions lists the plans of new runs.
var StartActions = []model.ActionKind{ActionRerunFrom, ActionBackfill}

// Start is what applying a plan of new runs writes: the run request (a
// rerun from a task) or the backfill, exactly as planned. It travels in
// the stored plan.
type Start struct {
	Project  string `json:"project"`
	Workflow string `json:"workflow"`
	Version  int    `json:"version"` // the version planned
	// Latest: the runs take the latest version (a backfill's always do),
	// so a newer one refuses the apply.
	Latest      bool              `json:"latest,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	Priority    *int              `json:"priority,omitempty"`
	WorkerGroup string            `json:"worker_group,omitempty"`
	StartNodes  []string          `json:"start_nodes,omitempty"`
	Scope       string            `json:"scope,omitempty"`
	DryRun      bool              `json:"dry_run,omitempty"`
	From        int64             `json:"from_instance,omitempty"` // rerun_from: the run it reruns from
	// A backfill's.
	Cron        string      `json:"cron,omitempty"`
	Timezone    string      `json:"timezone,omitempty"`
	Begin       time.Time   `json:"start,omitzero"`
	End         time.Time   `json:"end,omitzero"`
	Times       []time.Time `json:"times,omitempty"` // in submission order
	Parallelism int         `json:"parallelism,omitempty"`
	OnFailure   string      `json:"on_failure,omitempty"`
	// The schedule's business calendar the times were decided under, and
	// the cron's times it did not run as themselves, kept on the backfill
	// the apply writes as a started backfill keeps them.
	Calendar  string                  `json:"calendar,omitempty"`
	OnHoliday string                  `json:"on_holiday,omitempty"`
	Refused   []model.BackfillRefusal `json:"refused,omitempty"`
}

// NewRun is a run a plan would start.
type NewRun struct {
	Base time.Time // its schedule time (backfill) or now (rerun from a task)
	Loc  *time.Location
}

// StartRequest plans the new runs of one workflow version.
type StartRequest struct {
	Action     model.ActionKind
	WF         WF
	Def        int64 // the version the runs take (Snapshot.Defs)
	Runs       []NewRun
	StartNodes []string
	Scope      string
	// Parallelism is how many of the runs are in flight at once (a
	// backfill's); 0 is all.
	Parallelism int
	Downstream  Downstream
}

// MakeStart plans req over s: the new runs first (level 0), then the
// existing runs that wait on them, as Make does for a rerun. s.Covering
// holds the runs of req.WF at the planned times and s.Backfills the
// running backfills of req.WF: a planned time one of them holds is a
// conflict.
func MakeStart(req StartRequest, s Snapshot) (Plan, error) {
	if !slices.Contains(StartActions, req.Action) {
		return Plan{}, fmt.Errorf("action %q does not start new runs", req.Action)
	}
	if len(req.Runs) == 0 {
		return Plan{}, fmt.Errorf("%s of %s: no run to plan", req.Action, req.WF)
	}
	def, ok := s.Defs[req.Def]
	if !ok {
		return Plan{}, fmt.Errorf("workflow version %d is not in the snapshot", req.Def)
	}
	redo, err := scoped(def, req.StartNodes, req.Scope)
	if err != nil {
		return Plan{}, err
	}
	insts := make(map[int64]Instance, len(s.Instances)+len(req.Runs))
	for id, in := range s.Instances {
		insts[id] = in
	}
	s.Instances = insts
	var roots []int64
	for i, r := range req.Runs {
		id := -int64(i + 1)
		s.Instances[id] = Instance{ID: id, WF: req.WF, Def: req.Def, State: stateNew, Base: r.Base, Loc: r.Loc}
		roots = append(roots, id)
	}
	p := walk(Request{Action: req.Action, Downstream: req.Downstream}, s, roots, func(in Instance) map[string]bool {
		if in.ID < 0 {
			return redo
		}
		return redone(model.ActionRerun, s.Defs[in.Def], in.Tasks)
	}, req.Parallelism)
	if n := s.Running[req.WF]; n > 0 {
		what := fmt.Sprintf("%s has %d unfinished run(s): this plan's new runs overlap them", req.WF, n)
		if m := def.MaxActiveRuns; m > 0 {
			what += fmt.Sprintf(" and queue past max_active_runs %d", m)
		} else {
			what += " (no max_active_runs: side by side)"
		}
		p.Conflicts = append(p.Conflicts, Conflict{What: what})
	}
	for i := range p.Instances {
		pi := &p.Instances[i]
		if pi.ID >= 0 {
			continue
		}
		in := s.Instances[pi.ID]
		pi.New = true
		if req.Action == ActionBackfill {
			t := in.Base
			pi.ScheduleTime = &t
		}
		p.Conflicts = append(p.Conflicts, covered(in, s)...)
	}
	return p, nil
}

// stateNew is the state of a planned run not yet written.
const stateNew model.WorkflowState = "new"

// covered are the conflicts of new run in with the runs and backfills of
// its workflow at its time: an unfinished run or a running backfill there
// blocks; a finished run there is a note (the time runs again, as a new
// run).
func covered(in Instance, s Snapshot) []Conflict {
	var out []Conflict
	for _, c := range s.Covering {
		if c.WF != in.WF || !c.Base.Equal(in.Base) {
			continue
		}
		at := in.Base.UTC().Format(time.RFC3339)
		if slices.Contains(allowed[model.ActionRecoverFailed], c.State) {
			out = append(out, Conflict{Instance: in.ID, What: fmt.Sprintf("%s at %s already has run %d (%s); this plan runs the time again as a new run",
				in.WF, at, c.ID, c.State)})
			continue
		}
		out = append(out, Conflict{Instance: in.ID, Blocking: true,
			What: fmt.Sprintf("%s at %s has run %d, %s: it overlaps; stop it or leave the time out", in.WF, at, c.ID, c.State)})
	}
	for id, times := range s.Backfills {
		if slices.ContainsFunc(times, func(t time.Time) bool { return t.Equal(in.Base) }) {
			out = append(out, Conflict{Instance: in.ID, Blocking: true,
				What: fmt.Sprintf("backfill %d of %s (running) also covers %s; stop it or leave the time out", id, in.WF, in.Base.UTC().Format(time.RFC3339))})
		}
	}
	return out
}

// scoped is the set of def's tasks a run from starts under scope runs
// (every task without starts).
func scoped(def Workflow, starts []string, scope string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(starts) == 0 {
		for _, t := range def.Tasks {
			out[t.Name] = true
		}
		return out, nil
	}
	sc, err := dag.ParseScope(scope)
	if err != nil {
		return nil, err
	}
	var nodes []string
	var edges [][2]string
	for _, t := range def.Tasks {
		nodes = append(nodes, t.Name)
		for _, u := range t.Upstream {
			edges = append(edges, [2]string{u, t.Name})
		}
	}
	g, err := dag.New(nodes, edges)
	if err != nil {
		return nil, err
	}
	sub, err := g.SubGraph(starts, sc)
	if err != nil {
		return nil, err
	}
	for _, n := range sub.Nodes() {
		out[n] = true
	}
	return out, nil
}
