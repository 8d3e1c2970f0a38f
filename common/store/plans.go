package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/forecast"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/tasks/dependent"
)

// Plans (docs/architecture.md, "Plans"): PlanSnapshot reads the world an
// impact plan is made from (common/plan decides), PlanCreate keeps the plan
// with the facts it saw, PlanApply writes exactly its commands when every
// fact still holds.

// PlanTTL is how long a plan can be applied.
const PlanTTL = time.Hour

// planCandidates bounds the runs of each dependent workflow a snapshot
// reads: the newest, the ones a rerun's date windows can reach.
const planCandidates = 200

type planRow struct {
	ID         int64
	ProjectID  int64
	InstanceID int64
	Action     string
	Downstream string
	PlanJSON   string `gorm:"column:plan_json"`
	FactsJSON  string `gorm:"column:facts_json"`
	CreatedBy  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AppliedAt  *time.Time
	AppliedBy  string
}

func (planRow) TableName() string { return "plan" }

type planInstanceRow struct {
	PlanID     int64 `gorm:"primaryKey;autoIncrement:false"`
	InstanceID int64 `gorm:"primaryKey;autoIncrement:false"`
}

func (planInstanceRow) TableName() string { return "plan_instance" }

// Plan is a stored plan.
type Plan struct {
	ID        int64
	Instance  int64 // the instance it was made for
	Plan      plan.Plan
	Facts     plan.Facts
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	AppliedAt *time.Time
	AppliedBy string
	Commands  []int64 // the commands the apply wrote
	// Of a plan of new runs, what its apply wrote: the run (a rerun from a
	// task) or the backfill.
	Started  []int64
	Backfill int64
	Event    int64 // a dataset event's plan: the event its apply posted
}

func (r planRow) model() (Plan, error) {
	p := Plan{ID: r.ID, Instance: r.InstanceID, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
		AppliedAt: utc(r.AppliedAt), AppliedBy: r.AppliedBy}
	if err := json.Unmarshal([]byte(r.PlanJSON), &p.Plan); err != nil {
		return p, fmt.Errorf("read plan %d: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(r.FactsJSON), &p.Facts); err != nil {
		return p, fmt.Errorf("read the facts of plan %d: %w", r.ID, err)
	}
	return p, nil
}

// PlanSnapshot reads what plan.Make needs to plan an action on instance
// root following down: the root, and the newest runs of every workflow that
// waits (with a dependent task) on one of the plan's workflows, as many
// levels out as down goes; their versions, unfinished runs, paused
// schedules, task groups and task durations.
func (s *Store) PlanSnapshot(ctx context.Context, root int64, down plan.Downstream) (plan.Snapshot, error) {
	db := s.read(ctx)
	snap := newSnapshot()
	var r workflowInstanceRow
	if err := db.Take(&r, root).Error; err != nil {
		return snap, notFound(err, fmt.Sprintf("workflow instance %d", root))
	}
	if r.ParentInstanceID != nil {
		return snap, fmt.Errorf("workflow instance %d is a sub_workflow run of instance %d; plan an action on its parent: %w",
			r.ID, *r.ParentInstanceID, ErrConflict)
	}
	wf := plan.WF{Project: r.ProjectName, Workflow: r.WorkflowName}
	rows, wfs, err := planDownstream(db, wf, down, nil)
	if err != nil {
		return snap, err
	}
	if err := s.fillSnapshot(ctx, db, &snap, append([]workflowInstanceRow{r}, rows...), wfs); err != nil {
		return snap, err
	}
	// The root's latest attempts: what recover_failed redoes.
	tasks, err := s.InstanceTasksNow(ctx, root)
	if err != nil {
		return snap, err
	}
	in := snap.Instances[root]
	for _, t := range tasks {
		in.Tasks = append(in.Tasks, plan.TaskNow{Name: t.Name, State: t.State})
	}
	snap.Instances[root] = in
	return snap, nil
}

func newSnapshot() plan.Snapshot {
	return plan.Snapshot{Instances: map[int64]plan.Instance{}, Defs: map[int64]plan.Workflow{}, Running: map[plan.WF]int{},
		Paused: map[plan.WF]bool{}, Groups: map[string]plan.Group{}, Estimates: map[plan.WF]map[string]plan.Estimate{},
		Backfills: map[int64][]time.Time{}}
}

// planDownstream reads the runs of every workflow that waits (with a
// dependent task) on wf, as many levels out as down goes: the newest of
// each, and with a window (a backfill's range) those scheduled near it. It
// returns them and the workflows, wf first.
func planDownstream(db *gorm.DB, wf plan.WF, down plan.Downstream, window *[2]time.Time) ([]workflowInstanceRow, []plan.WF, error) {
	wfs := []plan.WF{wf}
	if down == plan.None {
		return nil, wfs, nil
	}
	index, err := dependentIndex(db)
	if err != nil {
		return nil, nil, err
	}
	var rows []workflowInstanceRow
	got := map[int64]bool{}
	seen := map[plan.WF]bool{wf: true}
	for level, frontier := 0, wfs; len(frontier) > 0 && (down == plan.All || level < 1); level++ {
		var next []plan.WF
		for _, wf := range frontier {
			for _, d := range index[wf] {
				if !seen[d] {
					seen[d] = true
					next = append(next, d)
				}
			}
		}
		for _, wf := range next {
			q := func() *gorm.DB {
				return db.Where("project_name = ? AND workflow_name = ? AND parent_instance_id IS NULL", wf.Project, wf.Workflow)
			}
			var runs []workflowInstanceRow
			if err := q().Order("id DESC").Limit(planCandidates).Find(&runs).Error; err != nil {
				return nil, nil, fmt.Errorf("read runs of %s: %w", wf, err)
			}
			if window != nil {
				// A window of a dependent reaches at most a month or so
				// either side of the runs it holds.
				var near []workflowInstanceRow
				if err := q().Where("schedule_time >= ? AND schedule_time <= ?", window[0].AddDate(0, 0, -40), window[1].AddDate(0, 0, 40)).
					Order("id DESC").Limit(5 * planCandidates).Find(&near).Error; err != nil {
					return nil, nil, fmt.Errorf("read runs of %s near the range: %w", wf, err)
				}
				runs = append(runs, near...)
			}
			for _, r := range runs {
				if !got[r.ID] {
					got[r.ID] = true
					rows = append(rows, r)
				}
			}
		}
		wfs, frontier = append(wfs, next...), next
	}
	return rows, wfs, nil
}

// fillSnapshot adds rows to snap with their versions and waiting restarts,
// and the unfinished runs, schedules and task durations of wfs, and the
// task groups.
func (s *Store) fillSnapshot(ctx context.Context, db *gorm.DB, snap *plan.Snapshot, rows []workflowInstanceRow, wfs []plan.WF) error {
	waiting, err := waitingRestarts(db, rowIDs(rows))
	if err != nil {
		return err
	}
	for _, r := range rows {
		base, loc := dependent.Base(r.ScheduleTime, r.StartTime, r.CreatedAt, r.Timezone)
		in := plan.Instance{ID: r.ID, WF: plan.WF{Project: r.ProjectName, Workflow: r.WorkflowName}, Def: r.WorkflowDefinitionID,
			State: model.WorkflowState(r.State), Base: base.UTC(), Loc: loc, Waiting: waiting[r.ID]}
		if err := planDef(db, snap, r.ProjectName, r.WorkflowDefinitionID); err != nil {
			return err
		}
		snap.Instances[r.ID] = in
	}
	for _, wf := range wfs {
		var n int64
		if err := db.Model(&workflowInstanceRow{}).Where("project_name = ? AND workflow_name = ? AND state IN ?", wf.Project, wf.Workflow,
			unfinishedStates()).Count(&n).Error; err != nil {
			return fmt.Errorf("count unfinished runs of %s: %w", wf, err)
		}
		snap.Running[wf] = int(n)
		var sc []scheduleRow
		if err := db.Where("project_name = ? AND workflow_name = ?", wf.Project, wf.Workflow).Find(&sc).Error; err != nil {
			return fmt.Errorf("read the schedule of %s: %w", wf, err)
		}
		if len(sc) > 0 && !sc[0].Enabled {
			snap.Paused[wf] = true
		}
		samples, err := s.TaskHistory(ctx, wf.Project, wf.Workflow, 1<<62, forecast.HistoryRuns)
		if err != nil {
			return err
		}
		h := forecast.Learn(samples, forecast.HistoryRuns)
		est := map[string]plan.Estimate{}
		for name, st := range h.Tasks {
			est[name] = plan.Estimate{P50: st.P50, P90: st.P90}
		}
		snap.Estimates[wf] = est
	}
	groups, err := s.TaskGroupList(ctx)
	if err != nil {
		return err
	}
	for _, g := range groups {
		snap.Groups[g.Name] = plan.Group{Capacity: g.Capacity, InUse: g.InUse}
	}
	return nil
}

// planDef adds workflow version id of project to snap.Defs.
func planDef(db *gorm.DB, snap *plan.Snapshot, project string, id int64) error {
	if _, ok := snap.Defs[id]; ok {
		return nil
	}
	var d workflowDefinitionRow
	if err := db.Take(&d, id).Error; err != nil {
		return notFound(err, fmt.Sprintf("workflow version %d", id))
	}
	w, err := planWorkflow(project, d.SpecJSON)
	if err != nil {
		return fmt.Errorf("workflow %s/%s version %d: %w", project, d.Name, d.Version, err)
	}
	snap.Defs[d.ID] = w
	return nil
}

// PlanTarget is what a plan of new runs starts: runs of a workflow
// version (0: the latest) at Times (a backfill's; none: one run now).
type PlanTarget struct {
	Project, Workflow string
	Version           int
	Times             []time.Time
}

// PlanSnapshotStart reads what plan.MakeStart needs for t following down:
// the version (its id and number are returned), the runs of the workflow
// at t.Times and its running backfills, and what PlanSnapshot reads of the
// workflows downstream.
func (s *Store) PlanSnapshotStart(ctx context.Context, t PlanTarget, down plan.Downstream) (plan.Snapshot, int64, int, error) {
	db := s.read(ctx)
	snap := newSnapshot()
	var p projectRow
	if err := db.Where("name = ?", t.Project).Take(&p).Error; err != nil {
		return snap, 0, 0, notFound(err, fmt.Sprintf("project %q", t.Project))
	}
	var d workflowDefinitionRow
	q := db.Omit("spec_json").Where("project_id = ? AND name = ?", p.ID, t.Workflow)
	if t.Version > 0 {
		q = q.Where("version = ?", t.Version)
	}
	if err := q.Order("version DESC").Take(&d).Error; err != nil {
		what := fmt.Sprintf("workflow %q in project %q", t.Workflow, t.Project)
		if t.Version > 0 {
			what = fmt.Sprintf("version %d of workflow %q in project %q", t.Version, t.Workflow, t.Project)
		}
		return snap, 0, 0, notFound(err, what)
	}
	if err := planDef(db, &snap, t.Project, d.ID); err != nil {
		return snap, 0, 0, err
	}
	wf := plan.WF{Project: t.Project, Workflow: t.Workflow}
	var window *[2]time.Time
	if len(t.Times) > 0 {
		window = &[2]time.Time{slices.MinFunc(t.Times, time.Time.Compare), slices.MaxFunc(t.Times, time.Time.Compare)}
		var covering []workflowInstanceRow
		if err := db.Select("id, state, schedule_time, project_name, workflow_name").
			Where("project_name = ? AND workflow_name = ? AND parent_instance_id IS NULL AND schedule_time IN ?", wf.Project, wf.Workflow, utcTimes(t.Times)).
			Order("id").Find(&covering).Error; err != nil {
			return snap, 0, 0, fmt.Errorf("read the runs of %s at the planned times: %w", wf, err)
		}
		for _, r := range covering {
			snap.Covering = append(snap.Covering, plan.Instance{ID: r.ID, WF: wf, State: model.WorkflowState(r.State), Base: r.ScheduleTime.UTC()})
		}
		var bfs []backfillRow
		if err := db.Where("project_name = ? AND workflow_name = ? AND state = ?", wf.Project, wf.Workflow, model.BackfillRunning).
			Find(&bfs).Error; err != nil {
			return snap, 0, 0, fmt.Errorf("read the running backfills of %s: %w", wf, err)
		}
		for _, b := range bfs {
			m := b.model()
			snap.Backfills[b.ID] = m.Times[min(m.Submitted, len(m.Times)):]
		}
	}
	rows, wfs, err := planDownstream(db, wf, down, window)
	if err != nil {
		return snap, 0, 0, err
	}
	if err := s.fillSnapshot(ctx, db, &snap, rows, wfs); err != nil {
		return snap, 0, 0, err
	}
	return snap, d.ID, d.Version, nil
}

func utcTimes(ts []time.Time) []time.Time {
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[i] = t.UTC()
	}
	return out
}

// dependentIndex maps each workflow to the workflows (latest versions)
// with a dependent task waiting on it.
func dependentIndex(db *gorm.DB) (map[plan.WF][]plan.WF, error) {
	type latest struct {
		ProjectName string
		Name        string
		SpecJSON    string
	}
	var rows []latest
	// Only specs that name a dependent task are decoded.
	if err := db.Raw(`SELECT p.name AS project_name, d.name, d.spec_json FROM workflow_definition d
JOIN project p ON p.id = d.project_id
JOIN (SELECT project_id, name, MAX(version) AS version FROM workflow_definition GROUP BY project_id, name) l
  ON l.project_id = d.project_id AND l.name = d.name AND l.version = d.version
WHERE d.spec_json LIKE ?`, `%"dependent"%`).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read workflows with dependent tasks: %w", err)
	}
	out := map[plan.WF][]plan.WF{}
	for _, r := range rows {
		w, err := planWorkflow(r.ProjectName, r.SpecJSON)
		if err != nil {
			continue // a version the server cannot read is planned as no dependent
		}
		me := plan.WF{Project: r.ProjectName, Workflow: r.Name}
		for _, t := range w.Tasks {
			for _, d := range t.Deps {
				if !slices.Contains(out[d.WF], me) {
					out[d.WF] = append(out[d.WF], me)
				}
			}
		}
	}
	return out, nil
}

// planWorkflow is what the planner needs of a stored spec of project.
func planWorkflow(project, specJSON string) (plan.Workflow, error) {
	w, err := spec.ParseStored([]byte(specJSON))
	if err != nil {
		return plan.Workflow{}, err
	}
	out := plan.Workflow{}
	if w.MaxActiveRuns != nil {
		out.MaxActiveRuns = *w.MaxActiveRuns
	}
	for i := range w.Tasks {
		t := &w.Tasks[i]
		pt := plan.Task{Name: t.Name, Upstream: t.DependsOn, Group: t.TaskGroup}
		if t.Type == dependent.Type.Name {
			sp, problems := dependent.Type.Decode(t.TypeFields())
			if len(problems) > 0 {
				return plan.Workflow{}, fmt.Errorf("task %s: %s", t.Name, strings.Join(problems, "; "))
			}
			for _, d := range sp.(*dependent.Spec).WaitFor {
				p := d.Project
				if p == "" {
					p = project
				}
				pt.Deps = append(pt.Deps, plan.Dep{WF: plan.WF{Project: p, Workflow: d.Workflow}, Date: d.Date})
			}
		}
		out.Tasks = append(out.Tasks, pt)
	}
	return out, nil
}

func rowIDs(rows []workflowInstanceRow) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// waitingRestarts names the restart request still waiting for the master of
// each of ids that has one.
func waitingRestarts(db *gorm.DB, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	for c := range slices.Chunk(ids, retentionChunk) {
		var cmds []actionCommandRow
		if err := db.Where("type = ? AND workflow_instance_id IN ? AND task_instance_id IS NULL AND action IN ?",
			commandTypeAction, c, actionNames(restartActions)).Order("id").Find(&cmds).Error; err != nil {
			return nil, fmt.Errorf("read waiting commands: %w", err)
		}
		for _, cmd := range cmds {
			if _, ok := out[cmd.WorkflowInstanceID]; !ok {
				out[cmd.WorkflowInstanceID] = fmt.Sprintf("a %s request (command %d) is still waiting for the master", cmd.Action, cmd.ID)
			}
		}
	}
	return out, nil
}

// planFacts is what p's apply checks again: each run's state and times
// run, its task attempts (count, newest, a digest of every attempt's
// state), its waiting commands, and the schedule of each of its workflows.
func planFacts(db *gorm.DB, p plan.Plan) (plan.Facts, error) {
	f := plan.Facts{}
	var ids []int64
	var wfs []plan.WF
	for _, in := range p.Instances {
		if !in.New {
			ids = append(ids, in.ID)
		}
		wfs = append(wfs, plan.WF{Project: in.Project, Workflow: in.Workflow})
	}
	for c := range slices.Chunk(ids, retentionChunk) {
		var insts []workflowInstanceRow
		if err := db.Select("id, state, run_times").Where("id IN ?", c).Find(&insts).Error; err != nil {
			return nil, fmt.Errorf("read the plan's runs: %w", err)
		}
		for _, r := range insts {
			f[fmt.Sprintf("instance %d state", r.ID)] = r.State
			f[fmt.Sprintf("instance %d runs", r.ID)] = fmt.Sprint(r.RunTimes)
		}
		type att struct {
			ID                 int64
			WorkflowInstanceID int64
			State              string
		}
		var atts []att
		if err := db.Table("task_instance").Select("id, workflow_instance_id, state").Where("workflow_instance_id IN ?", c).
			Order("id").Scan(&atts).Error; err != nil {
			return nil, fmt.Errorf("read the plan's task attempts: %w", err)
		}
		by := map[int64][]att{}
		for _, a := range atts {
			by[a.WorkflowInstanceID] = append(by[a.WorkflowInstanceID], a)
		}
		for _, id := range c {
			h := sha256.New()
			var last int64
			for _, a := range by[id] {
				fmt.Fprintf(h, "%d:%s;", a.ID, a.State)
				last = a.ID
			}
			f[fmt.Sprintf("instance %d task attempts", id)] = fmt.Sprintf("%d, newest %d, states %x", len(by[id]), last, h.Sum(nil)[:4])
		}
		var cmds []struct {
			WorkflowInstanceID int64
			N                  int64
		}
		if err := db.Table("command").Select("workflow_instance_id, COUNT(*) AS n").Where("workflow_instance_id IN ?", c).
			Group("workflow_instance_id").Scan(&cmds).Error; err != nil {
			return nil, fmt.Errorf("read the plan's waiting commands: %w", err)
		}
		for _, id := range c {
			f[fmt.Sprintf("instance %d waiting commands", id)] = "0"
		}
		for _, n := range cmds {
			f[fmt.Sprintf("instance %d waiting commands", n.WorkflowInstanceID)] = fmt.Sprint(n.N)
		}
	}
	slices.SortFunc(wfs, func(a, b plan.WF) int { return strings.Compare(a.String(), b.String()) })
	for _, wf := range slices.Compact(wfs) {
		var sc []scheduleRow
		if err := db.Select("enabled").Where("project_name = ? AND workflow_name = ?", wf.Project, wf.Workflow).Find(&sc).Error; err != nil {
			return nil, fmt.Errorf("read the schedule of %s: %w", wf, err)
		}
		v := "none"
		if len(sc) > 0 {
			v = map[bool]string{true: "on", false: "paused"}[sc[0].Enabled]
		}
		f["schedule of "+wf.String()] = v
	}
	if p.Start != nil {
		if err := startFacts(db, *p.Start, f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// startFacts adds what a plan of new runs st saw: the latest version of
// its workflow, and for a backfill the runs of the workflow scheduled in
// its range and the running backfills whose range meets it.
func startFacts(db *gorm.DB, st plan.Start, f plan.Facts) error {
	wf := plan.WF{Project: st.Project, Workflow: st.Workflow}
	if !st.Latest {
		return rangeFacts(db, st, f)
	}
	var v struct{ V *int }
	if err := db.Table("workflow_definition").Select("MAX(workflow_definition.version) AS v").
		Joins("JOIN project ON project.id = workflow_definition.project_id").
		Where("project.name = ? AND workflow_definition.name = ?", st.Project, st.Workflow).Scan(&v).Error; err != nil {
		return fmt.Errorf("read the latest version of %s: %w", wf, err)
	}
	f["latest version of "+wf.String()] = "none"
	if v.V != nil {
		f["latest version of "+wf.String()] = strconv.Itoa(*v.V)
	}
	return rangeFacts(db, st, f)
}

// rangeFacts adds, for a backfill, the runs of its workflow scheduled in
// its range and the running backfills whose range meets it.
func rangeFacts(db *gorm.DB, st plan.Start, f plan.Facts) error {
	wf := plan.WF{Project: st.Project, Workflow: st.Workflow}
	if len(st.Times) == 0 {
		return nil
	}
	from, to := slices.MinFunc(st.Times, time.Time.Compare).UTC(), slices.MaxFunc(st.Times, time.Time.Compare).UTC()
	var runs []int64
	if err := db.Model(&workflowInstanceRow{}).Where("project_name = ? AND workflow_name = ? AND schedule_time >= ? AND schedule_time <= ?",
		st.Project, st.Workflow, from, to).Order("id").Pluck("id", &runs).Error; err != nil {
		return fmt.Errorf("read the runs of %s in the range: %w", wf, err)
	}
	f[fmt.Sprintf("runs of %s scheduled from %s to %s", wf, from.Format(time.RFC3339), to.Format(time.RFC3339))] = idList(runs)
	var bfs []int64
	if err := db.Model(&backfillRow{}).Where("project_name = ? AND workflow_name = ? AND state = ? AND start_time <= ? AND end_time >= ?",
		st.Project, st.Workflow, model.BackfillRunning, to, from).Order("id").Pluck("id", &bfs).Error; err != nil {
		return fmt.Errorf("read the backfills of %s over the range: %w", wf, err)
	}
	f["running backfills of "+wf.String()+" over the range"] = idList(bfs)
	return nil
}

// idList writes ids as "none" or "instances 4, 7" style text for a fact.
func idList(ids []int64) string {
	if len(ids) == 0 {
		return "none"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(out, ", ")
}

// PlanCreate keeps p, made for instance root of project projectID by by,
// with the facts of the world now, and returns it. A run whose state moved
// since the snapshot p was made from is ErrConflict (plan again).
func (s *Store) PlanCreate(ctx context.Context, projectID, root int64, p plan.Plan, by string) (Plan, error) {
	var out Plan
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		facts, err := planFacts(tx, p)
		if err != nil {
			return err
		}
		if p.Emit != nil {
			if err := s.emitFacts(tx, p, facts); err != nil {
				return err
			}
			if !emitMatches(p, facts) {
				return fmt.Errorf("the decisions on %s@%s changed while planning; plan again: %w", p.Emit.Dataset, p.Emit.Partition, ErrConflict)
			}
		}
		for _, in := range p.Instances {
			if in.New {
				continue
			}
			if st := facts[fmt.Sprintf("instance %d state", in.ID)]; st == "" {
				return fmt.Errorf("workflow instance %d went while planning: %w", in.ID, ErrConflict)
			}
		}
		pj, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode plan: %w", err)
		}
		fj, err := json.Marshal(facts)
		if err != nil {
			return fmt.Errorf("encode facts: %w", err)
		}
		now := time.Now().UTC()
		row := planRow{ProjectID: projectID, InstanceID: root, Action: string(p.Action), Downstream: string(p.Downstream),
			PlanJSON: string(pj), FactsJSON: string(fj), CreatedBy: by, CreatedAt: now, ExpiresAt: now.Add(PlanTTL)}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("insert plan: %w", err)
		}
		var pins []planInstanceRow
		for _, in := range p.Instances {
			if !in.New {
				pins = append(pins, planInstanceRow{PlanID: row.ID, InstanceID: in.ID})
			}
		}
		if len(pins) > 0 {
			if err := tx.CreateInBatches(pins, 500).Error; err != nil {
				return fmt.Errorf("insert plan runs: %w", err)
			}
		}
		out, err = row.model()
		return err
	})
	return out, err
}

// PlanGet returns plan id.
func (s *Store) PlanGet(ctx context.Context, id int64) (Plan, error) {
	var row planRow
	if err := s.read(ctx).Take(&row, id).Error; err != nil {
		return Plan{}, notFound(err, fmt.Sprintf("plan %d", id))
	}
	return row.model()
}

// PlanApply writes plan id's commands, one action request per run of the
// plan (model.ActionRequest, the same checks), in one transaction that
// first locks the plan and reads its facts again: an applied plan, an
// expired one, a blocking conflict, or any fact that changed is
// ErrConflict naming it, and nothing is written.
func (s *Store) PlanApply(ctx context.Context, id int64, by string, now time.Time) (Plan, error) {
	var out Plan
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row planRow
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&row, id).Error; err != nil {
			return notFound(err, fmt.Sprintf("plan %d", id))
		}
		p, err := row.model()
		if err != nil {
			return err
		}
		switch {
		case row.AppliedAt != nil:
			return fmt.Errorf("plan %d was applied at %s by %s: %w", id, row.AppliedAt.UTC().Format(time.RFC3339), row.AppliedBy, ErrConflict)
		case !now.Before(row.ExpiresAt):
			return fmt.Errorf("plan %d expired at %s; make a new plan: %w", id, row.ExpiresAt.UTC().Format(time.RFC3339), ErrConflict)
		case p.Plan.Blocked():
			var what []string
			for _, c := range p.Plan.Conflicts {
				if c.Blocking {
					what = append(what, c.What)
				}
			}
			return fmt.Errorf("plan %d has blocking conflicts: %s: %w", id, strings.Join(what, "; "), ErrConflict)
		}
		// Lock the runs first (the order ActionRequest takes them), so no
		// action slips in between the check and the writes.
		var ids []int64
		for _, in := range p.Plan.Instances {
			if !in.New {
				ids = append(ids, in.ID)
			}
		}
		slices.Sort(ids)
		for c := range slices.Chunk(ids, retentionChunk) {
			var locked []workflowInstanceRow
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").Where("id IN ?", c).Find(&locked).Error; err != nil {
				return fmt.Errorf("lock the plan's runs: %w", err)
			}
		}
		cur, err := planFacts(tx, p.Plan)
		if err != nil {
			return err
		}
		if err := s.emitFacts(tx, p.Plan, cur); err != nil {
			return err
		}
		if changed := plan.Changed(p.Facts, cur); len(changed) > 0 {
			return fmt.Errorf("the world changed since plan %d was made: %s; make a new plan: %w", id, joinMax(changed, 10), ErrConflict)
		}
		if st := p.Plan.Start; st != nil {
			if err := s.applyStart(tx, &p, *st, by); err != nil {
				return fmt.Errorf("plan %d: %w", id, err)
			}
		}
		if e := p.Plan.Emit; e != nil {
			if p.Event, err = postEmit(tx, *e, by); err != nil {
				return fmt.Errorf("plan %d: %w", id, err)
			}
		}
		for _, in := range p.Plan.Instances {
			if in.New {
				continue
			}
			res, err := requestActionTx(tx, model.ActionRequest{InstanceID: in.ID, Action: in.Action, By: by})
			if err != nil {
				return fmt.Errorf("plan %d, instance %d: %w", id, in.ID, err)
			}
			p.Commands = append(p.Commands, res.CommandID)
		}
		at := time.Now().UTC()
		up := tx.Model(&planRow{}).Where("id = ? AND applied_at IS NULL", id).Updates(map[string]any{"applied_at": at, "applied_by": by})
		if up.Error != nil {
			return fmt.Errorf("mark plan %d applied: %w", id, up.Error)
		}
		if up.RowsAffected != 1 {
			return fmt.Errorf("plan %d was applied meanwhile: %w", id, ErrConflict)
		}
		p.AppliedAt, p.AppliedBy = &at, by
		out = p
		return nil
	})
	return out, err
}

// applyStart writes the new runs of plan p in tx: the run of a rerun from
// a task (the planned version, tasks and params), or the backfill of the
// planned times.
func (s *Store) applyStart(tx *gorm.DB, p *Plan, st plan.Start, by string) error {
	var prio *model.Priority
	if st.Priority != nil {
		v := model.Priority(*st.Priority)
		prio = &v
	}
	switch p.Plan.Action {
	case plan.ActionRerunFrom:
		req := RunRequest{Project: st.Project, Workflow: st.Workflow, Version: st.Version, Params: st.Params, Priority: prio,
			WorkerGroup: st.WorkerGroup, CommandType: model.CommandStart, StartNodes: st.StartNodes, Scope: st.Scope, DryRun: st.DryRun}
		pr, def, err := runTarget(tx, req)
		if err != nil {
			return err
		}
		inst, err := insertRun(tx, s.box, pr, def, req, time.Now().UTC())
		if err != nil {
			return err
		}
		p.Started = append(p.Started, inst.ID)
	case plan.ActionBackfill:
		b, err := insertBackfill(tx, s.box, model.Backfill{Project: st.Project, Workflow: st.Workflow, Cron: st.Cron, Timezone: st.Timezone,
			Start: st.Begin, End: st.End, Times: st.Times, Parallelism: st.Parallelism, OnFailure: st.OnFailure, Priority: prio,
			WorkerGroup: st.WorkerGroup, Params: st.Params, DryRun: st.DryRun, RequestedBy: by,
			Calendar: st.Calendar, OnHoliday: st.OnHoliday, Refused: st.Refused})
		if err != nil {
			return err
		}
		p.Backfill = b.ID
	default:
		return fmt.Errorf("action %s starts no new runs", p.Plan.Action)
	}
	return nil
}

// planPinned is retention's hook: the runs among ids that an unapplied plan
// not yet expired at now holds.
func planPinned(db *gorm.DB, ids []int64, now time.Time) (map[int64]bool, error) {
	var pinned []int64
	if err := db.Table("plan_instance").Distinct("plan_instance.instance_id").
		Joins("JOIN plan ON plan.id = plan_instance.plan_id").
		Where("plan_instance.instance_id IN ? AND plan.applied_at IS NULL AND plan.expires_at > ?", ids, now).
		Pluck("plan_instance.instance_id", &pinned).Error; err != nil {
		return nil, err
	}
	out := make(map[int64]bool, len(pinned))
	for _, id := range pinned {
		out[id] = true
	}
	return out, nil
}
