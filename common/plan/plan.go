// Package plan is the impact planner (docs/architecture.md, "Plans"): from
// an action that starts work and a snapshot of the world, the exact set of
// instances and tasks that would run, what they wait on, how long they are
// expected to take, and what stands in the way. It decides only; the store
// reads the snapshot and writes the plan's commands.
package plan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/forecast"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/tasks/dependent"
)

// Downstream says how far a plan follows the workflows that depend (with a
// dependent task) on the runs it reruns.
type Downstream string

// Downstream levels.
const (
	None   Downstream = "none"   // the instance alone
	Direct Downstream = "direct" // and the runs that wait on it
	All    Downstream = "all"    // and theirs, every level
)

// ParseDownstream reads a level; "" is none.
func ParseDownstream(s string) (Downstream, error) {
	switch d := Downstream(s); d {
	case "":
		return None, nil
	case None, Direct, All:
		return d, nil
	}
	return "", fmt.Errorf("downstream %q: want none, direct or all", s)
}

// hops is how many dependency hops d follows (-1: no bound).
func (d Downstream) hops() int {
	switch d {
	case Direct:
		return 1
	case All:
		return -1
	}
	return 0
}

// Actions lists the actions a plan can be made for.
var Actions = []model.ActionKind{model.ActionRerun, model.ActionRecoverFailed}

// WF names a workflow.
type WF struct{ Project, Workflow string }

func (w WF) String() string { return w.Project + "/" + w.Workflow }

// Dep is one wait_for entry of a dependent task, its project filled in.
type Dep struct {
	WF   WF
	Date string
}

// Task is one task of a workflow version.
type Task struct {
	Name     string
	Upstream []string
	Group    string // task group, "" none
	Deps     []Dep  // a dependent task's wait_for
}

// Workflow is what the planner needs of a workflow version.
type Workflow struct {
	Tasks         []Task
	MaxActiveRuns int // 0: no bound
}

// TaskNow is the latest attempt of a task.
type TaskNow struct {
	Name  string
	State model.TaskState
}

// Instance is a run as the planner sees it.
type Instance struct {
	ID    int64
	WF    WF
	Def   int64 // its workflow version (Snapshot.Defs)
	State model.WorkflowState
	Base  time.Time // schedule time, else start, else creation: what a dependent's window holds
	Loc   *time.Location
	Tasks []TaskNow
	// Waiting names a restart request of the instance still waiting for
	// the master ("" none).
	Waiting string
}

// Group is a task group's capacity and the slots in use now.
type Group struct{ Capacity, InUse int }

// Estimate is a duration at p50 and p90 (in JSON: seconds).
type Estimate struct {
	P50 time.Duration `json:"-"`
	P90 time.Duration `json:"-"`
}

type estimateJSON struct {
	P50 float64 `json:"p50_seconds"`
	P90 float64 `json:"p90_seconds"`
}

// MarshalJSON writes seconds.
func (e Estimate) MarshalJSON() ([]byte, error) {
	return json.Marshal(estimateJSON{P50: e.P50.Seconds(), P90: e.P90.Seconds()})
}

// UnmarshalJSON reads seconds.
func (e *Estimate) UnmarshalJSON(b []byte) error {
	var j estimateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	e.P50, e.P90 = time.Duration(j.P50*float64(time.Second)), time.Duration(j.P90*float64(time.Second))
	return nil
}

// Snapshot is the world a plan is made from.
type Snapshot struct {
	// Instances holds the root and every run that might depend on a run of
	// the plan (the store over-reads; the planner keeps those whose
	// dependent windows hold a planned run).
	Instances map[int64]Instance
	Defs      map[int64]Workflow
	// Running counts each workflow's unfinished runs.
	Running map[WF]int
	// Paused holds the workflows whose schedule is paused.
	Paused    map[WF]bool
	Groups    map[string]Group
	Estimates map[WF]map[string]Estimate // p50/p90 per task from history; missing: forecast defaults
	// For plans of new runs (MakeStart): the runs of the workflow at the
	// planned times, and the times of its running backfills by id.
	Covering  []Instance
	Backfills map[int64][]time.Time
}

// Request is the action planned.
type Request struct {
	Action     model.ActionKind
	Instance   int64
	Downstream Downstream
}

// Plan is what would run.
type Plan struct {
	Action     model.ActionKind `json:"action"`
	Downstream Downstream       `json:"downstream"`
	Instances  []Planned        `json:"instances"` // the root first, then by level and id
	// Estimate is the whole plan's, from the writing of its commands to
	// its last run's projected end.
	Estimate  Estimate   `json:"estimate"`
	Conflicts []Conflict `json:"conflicts"`
	// Start is what the apply writes for a plan of new runs (nil: the
	// plan reopens existing runs only).
	Start *Start `json:"start,omitempty"`
	// Emit is the dataset event a dataset event's plan posts (nil: none).
	Emit *Emit `json:"emit,omitempty"`
}

// Planned is one instance of a plan and the action it gets.
type Planned struct {
	ID       int64            `json:"id"`
	Project  string           `json:"project"`
	Workflow string           `json:"workflow"`
	Action   model.ActionKind `json:"action"`
	Level    int              `json:"level"`    // 0: the root; n: n dependency hops from it
	After    []int64          `json:"after"`    // planned runs its dependent tasks wait on
	Tasks    []PlannedTask    `json:"tasks"`    // in topological order
	Waits    []string         `json:"waits"`    // what the run as a whole waits on
	Estimate Estimate         `json:"estimate"` // from its command to its projected end
	// New: a run the plan starts (its ID is -n, the n-th new run);
	// ScheduleTime is a backfill run's time.
	New          bool       `json:"new,omitempty"`
	ScheduleTime *time.Time `json:"schedule_time,omitempty"`
}

// PlannedTask is one task that would run.
type PlannedTask struct {
	Name     string   `json:"name"`
	Estimate Estimate `json:"estimate"`
	Waits    []string `json:"waits"`
}

// Conflict is something in the way; a blocking one refuses the apply.
type Conflict struct {
	Instance int64  `json:"instance,omitempty"`
	What     string `json:"what"`
	Blocking bool   `json:"blocking"`
}

// Projects lists the projects of p's runs, sorted, each once.
func (p Plan) Projects() []string {
	var out []string
	for _, in := range p.Instances {
		out = append(out, in.Project)
	}
	if p.Emit != nil { // its own project, whether or not the event starts a run
		out = append(out, p.Emit.Project)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Blocked says whether a conflict refuses the plan.
func (p Plan) Blocked() bool {
	return slices.ContainsFunc(p.Conflicts, func(c Conflict) bool { return c.Blocking })
}

// allowed are the instance states each planned action starts from (the
// store's action checks say the same).
var allowed = map[model.ActionKind][]model.WorkflowState{
	model.ActionRerun:         {model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped},
	model.ActionRecoverFailed: {model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped, model.WorkflowPaused},
}

// Make plans req over s.
func Make(req Request, s Snapshot) (Plan, error) {
	if !slices.Contains(Actions, req.Action) {
		return Plan{}, fmt.Errorf("action %q has no plan; plans are for rerun and recover_failed", req.Action)
	}
	root, ok := s.Instances[req.Instance]
	if !ok {
		return Plan{}, fmt.Errorf("instance %d is not in the snapshot", req.Instance)
	}
	return walk(req, s, []int64{root.ID}, func(in Instance) map[string]bool {
		kind := model.ActionRerun
		if in.ID == root.ID {
			kind = req.Action
		}
		return redone(kind, s.Defs[in.Def], in.Tasks)
	}, 0), nil
}

// walk plans roots (level 0, in order) and the runs that wait on them as
// far as req.Downstream goes; redo says which tasks of each run run. With
// parallelism > 0 the roots run that many at a time, in order.
func walk(req Request, s Snapshot, roots []int64, redo func(Instance) map[string]bool, parallelism int) Plan {
	p := Plan{Action: req.Action, Downstream: req.Downstream, Instances: []Planned{}, Conflicts: []Conflict{}}
	level := map[int64]int{}
	isRoot := map[int64]bool{}
	for _, id := range roots {
		level[id] = 0
		isRoot[id] = true
	}
	after := map[int64][]int64{}
	order := slices.Clone(roots)
	// Breadth first over "waits on": each run once (the first, shortest
	// path places it), so cycles and diamonds end.
	for i, hops := 0, req.Downstream.hops(); i < len(order); i++ {
		up := s.Instances[order[i]]
		if hops >= 0 && level[up.ID] >= hops {
			continue
		}
		for _, id := range dependents(s, up) {
			if isRoot[id] {
				continue
			}
			after[id] = append(after[id], up.ID)
			if _, seen := level[id]; !seen {
				level[id] = level[up.ID] + 1
				order = append(order, id)
			}
		}
	}
	planned := map[int64]bool{}
	for _, id := range order {
		planned[id] = true
	}
	ends := map[int64]Estimate{}
	groupUse := map[string]int{}
	wfUse := map[WF]int{}
	for k, id := range order {
		in := s.Instances[id]
		kind := model.ActionRerun
		if isRoot[id] {
			kind = req.Action
		}
		pi := Planned{ID: id, Project: in.WF.Project, Workflow: in.WF.Workflow, Action: kind, Level: level[id],
			After: compactIDs(after[id]), Tasks: []PlannedTask{}, Waits: []string{}}
		if in.State != stateNew {
			p.Conflicts = append(p.Conflicts, conflicts(in, kind, isRoot[id], s)...)
		} else if s.Paused[in.WF] {
			p.Conflicts = append(p.Conflicts, Conflict{Instance: in.ID,
				What: fmt.Sprintf("the schedule of %s is paused: this run goes ahead, the schedule fires nothing new", in.WF)})
		}
		def := s.Defs[in.Def]
		pi.Tasks, pi.Estimate = schedule(def, redo(in), in, s, planned, ends)
		// A root waits for the root parallelism places before it.
		if parallelism > 0 && isRoot[id] && k >= parallelism {
			prev := ends[order[k-parallelism]]
			pi.Estimate.P50 += prev.P50
			pi.Estimate.P90 += prev.P90
			pi.Waits = append(pi.Waits, fmt.Sprintf("run %d of this plan (%d at a time)", order[k-parallelism], parallelism))
		}
		ends[id] = pi.Estimate
		for _, t := range pi.Tasks {
			if g := taskGroup(def, t.Name); g != "" {
				groupUse[g]++
			}
		}
		wfUse[in.WF]++
		p.Instances = append(p.Instances, pi)
		p.Estimate.P50 = max(p.Estimate.P50, pi.Estimate.P50)
		p.Estimate.P90 = max(p.Estimate.P90, pi.Estimate.P90)
	}
	for i := range p.Instances {
		pi := &p.Instances[i]
		in := s.Instances[pi.ID]
		def := s.Defs[in.Def]
		if n := def.MaxActiveRuns; n > 0 && s.Running[in.WF]+wfUse[in.WF] > n {
			pi.Waits = append(pi.Waits, fmt.Sprintf("max_active_runs %d of %s: %d running, %d in this plan; runs past the bound queue",
				n, in.WF, s.Running[in.WF], wfUse[in.WF]))
		}
		for j := range pi.Tasks {
			t := &pi.Tasks[j]
			g := taskGroup(def, t.Name)
			if g == "" {
				continue
			}
			gr, ok := s.Groups[g]
			switch {
			case !ok:
				t.Waits = append(t.Waits, fmt.Sprintf("task group %s does not exist; the task fails", g))
			case gr.InUse+groupUse[g] > gr.Capacity:
				t.Waits = append(t.Waits, fmt.Sprintf("a slot of task group %s (%d slots, %d in use, %d tasks of this plan)",
					g, gr.Capacity, gr.InUse, groupUse[g]))
			}
		}
	}
	return p
}

// dependents are the runs (other than up) with a dependent task whose
// window holds up, sorted by id.
func dependents(s Snapshot, up Instance) []int64 {
	var out []int64
	for id, in := range s.Instances {
		if id == up.ID {
			continue
		}
		if waitsOn(s.Defs[in.Def], in, up) != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// waitsOn names the task of in's version def that waits on run up ("": none).
func waitsOn(def Workflow, in, up Instance) string {
	for _, t := range def.Tasks {
		for _, d := range t.Deps {
			if d.WF != up.WF {
				continue
			}
			from, to, err := dependent.Window(d.Date, in.Base, in.Loc)
			if err == nil && !up.Base.Before(from) && up.Base.Before(to) {
				return t.Name
			}
		}
	}
	return ""
}

// conflicts are what stands in the way of kind on in.
func conflicts(in Instance, kind model.ActionKind, root bool, s Snapshot) []Conflict {
	var out []Conflict
	if !slices.Contains(allowed[kind], in.State) {
		what := fmt.Sprintf("instance %d (%s) is %s; %s needs a finished instance", in.ID, in.WF, in.State, kind)
		if !root {
			what += "; stop it or plan with fewer downstream levels"
		}
		out = append(out, Conflict{Instance: in.ID, What: what, Blocking: true})
	}
	if in.Waiting != "" {
		out = append(out, Conflict{Instance: in.ID, What: fmt.Sprintf("instance %d (%s): %s", in.ID, in.WF, in.Waiting), Blocking: true})
	}
	if s.Paused[in.WF] {
		out = append(out, Conflict{Instance: in.ID,
			What: fmt.Sprintf("the schedule of %s is paused: this run goes ahead, the schedule fires nothing new", in.WF)})
	}
	return out
}

// redone is the set of tasks kind runs again on a run of def whose latest
// attempts are cur: every task for rerun; for recover_failed the failed and
// killed ones and every task after them (master/flow Reopen).
func redone(kind model.ActionKind, def Workflow, cur []TaskNow) map[string]bool {
	out := map[string]bool{}
	if kind == model.ActionRerun {
		for _, t := range def.Tasks {
			out[t.Name] = true
		}
		return out
	}
	down := map[string][]string{}
	for _, t := range def.Tasks {
		for _, u := range t.Upstream {
			down[u] = append(down[u], t.Name)
		}
	}
	var stack []string
	for _, t := range cur {
		if t.State == model.TaskFailed || t.State == model.TaskKilled {
			stack = append(stack, t.Name)
		}
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if out[n] {
			continue
		}
		out[n] = true
		stack = append(stack, down[n]...)
	}
	// Only tasks of the version: a row of a task the version lacks is left.
	for n := range out {
		if !slices.ContainsFunc(def.Tasks, func(t Task) bool { return t.Name == n }) {
			delete(out, n)
		}
	}
	return out
}

// schedule estimates the tasks of redo in topological order: each starts
// when its redone upstreams end (and a dependent task when the planned runs
// it waits on end, ends), runs its p50 (p90), and the run ends with its
// last task.
func schedule(def Workflow, redo map[string]bool, in Instance, s Snapshot, planned map[int64]bool, ends map[int64]Estimate) ([]PlannedTask, Estimate) {
	fin := map[string]Estimate{}
	var out []PlannedTask
	var end Estimate
	for _, t := range topo(def) {
		if !redo[t.Name] {
			continue
		}
		var start Estimate
		for _, u := range t.Upstream {
			start.P50, start.P90 = max(start.P50, fin[u].P50), max(start.P90, fin[u].P90)
		}
		var waits []string
		for _, d := range t.Deps {
			for id := range planned {
				up := s.Instances[id]
				if id == in.ID || up.WF != d.WF || waitsOn(Workflow{Tasks: []Task{{Name: t.Name, Deps: []Dep{d}}}}, in, up) == "" {
					continue
				}
				waits = append(waits, fmt.Sprintf("instance %d (%s) of this plan", id, up.WF))
				if e, ok := ends[id]; ok {
					start.P50, start.P90 = max(start.P50, e.P50), max(start.P90, e.P90)
				}
			}
		}
		slices.Sort(waits)
		e := estimateOf(s, in.WF, t.Name)
		f := Estimate{P50: start.P50 + e.P50, P90: start.P90 + e.P90}
		fin[t.Name] = f
		end.P50, end.P90 = max(end.P50, f.P50), max(end.P90, f.P90)
		out = append(out, PlannedTask{Name: t.Name, Estimate: e, Waits: append([]string{}, waits...)})
	}
	if out == nil {
		out = []PlannedTask{}
	}
	return out, end
}

func estimateOf(s Snapshot, wf WF, task string) Estimate {
	if e, ok := s.Estimates[wf][task]; ok {
		return e
	}
	return Estimate{P50: forecast.DefaultP50, P90: forecast.DefaultP90}
}

// topo orders def's tasks upstream first (Kahn's, ties by spec order); a
// cycle, which a stored version never has, leaves the rest out.
func topo(def Workflow) []Task {
	indeg := map[string]int{}
	down := map[string][]int{}
	for i, t := range def.Tasks {
		indeg[t.Name] = len(t.Upstream)
		for _, u := range t.Upstream {
			down[u] = append(down[u], i)
		}
	}
	var queue, out []int
	for i, t := range def.Tasks {
		if indeg[t.Name] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		out = append(out, i)
		for _, j := range down[def.Tasks[i].Name] {
			if indeg[def.Tasks[j].Name]--; indeg[def.Tasks[j].Name] == 0 {
				queue = append(queue, j)
			}
		}
	}
	tasks := make([]Task, len(out))
	for k, i := range out {
		tasks[k] = def.Tasks[i]
	}
	return tasks
}

func taskGroup(def Workflow, name string) string {
	for _, t := range def.Tasks {
		if t.Name == name {
			return t.Group
		}
	}
	return ""
}

func compactIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []int64{}
	}
	return out
}

// Facts are what a plan saw of the world, by name ("instance 12 state"):
// the apply reads them again and refuses when one changed.
type Facts map[string]string

// Changed names each fact that differs between was and now, sorted.
func Changed(was, now Facts) []string {
	var out []string
	for k, v := range was {
		switch n, ok := now[k]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s: was %s, now gone", k, v))
		case n != v:
			out = append(out, fmt.Sprintf("%s: was %s, now %s", k, v, n))
		}
	}
	for k, n := range now {
		if _, ok := was[k]; !ok {
			out = append(out, fmt.Sprintf("%s: new, %s", k, n))
		}
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}

// Summary is a one-line account of p, for the CLI and logs.
func (p Plan) Summary() string {
	tasks := 0
	for _, in := range p.Instances {
		tasks += len(in.Tasks)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d instance(s), %d task(s), about %s (p90 %s)", p.Action, len(p.Instances), tasks,
		p.Estimate.P50.Round(time.Second), p.Estimate.P90.Round(time.Second))
	if n := len(p.Conflicts); n > 0 {
		fmt.Fprintf(&b, ", %d conflict(s)", n)
	}
	return b.String()
}
