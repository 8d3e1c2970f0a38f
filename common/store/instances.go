package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
)

// RunRequest asks for a new workflow instance.
type RunRequest struct {
	Project  string
	Workflow string
	Version  int // 0: latest
	Params   map[string]string
	// SecretParams names params that are secret besides those the
	// workflow's spec marks: they are stored sealed.
	SecretParams []string
	Priority     *model.Priority // nil: the workflow's
	WorkerGroup  string          // "": the workflow's
	CommandType  model.CommandType
	StartNodes   []string // run only these tasks and, by Scope, their upstream or downstream
	Scope        string   // only (default), upstream or downstream; used with StartNodes
	DryRun       bool     // record tasks as succeeded without running them
	// Set by the cron scheduler and backfills: the schedule or backfill and
	// the time the run is for.
	ScheduleID   int64
	BackfillID   int64
	ScheduleTime *time.Time
	Timezone     string // IANA zone the run's time params are read in; "" is UTC
	// Queued writes the instance held, without a start command, until
	// InstanceReleaseQueued finds room for it; QueueReason says what it waits for.
	Queued      bool
	QueueReason string
}

// InstanceCreateRun writes a workflow instance in state submitted and the command
// that asks the active master to start it, in one transaction, so the caller
// gets the instance id at once and the master never sees a half-made run.
func (s *Store) InstanceCreateRun(ctx context.Context, req RunRequest) (model.WorkflowInstance, error) {
	var out model.WorkflowInstance
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, def, err := runTarget(tx, req)
		if err != nil {
			return err
		}
		out, err = insertRun(tx, s.box, p, def, req, time.Now().UTC())
		return err
	})
	return out, err
}

// runTarget reads the project and the definition version req runs (the
// latest when req names none), locking the workflow's definitions
// (lockingRead): the first thing every writer of runs does.
func runTarget(tx *gorm.DB, req RunRequest) (projectRow, workflowDefinitionRow, error) {
	var def workflowDefinitionRow
	p, err := getProject(tx, req.Project)
	if err != nil {
		return p, def, err
	}
	q := lockingRead(tx).Omit("spec_json").Where("project_id = ? AND name = ?", p.ID, req.Workflow)
	if req.Version > 0 {
		q = q.Where("version = ?", req.Version)
	}
	if err := q.Order("version DESC").Take(&def).Error; err != nil {
		return p, def, notFound(err, fmt.Sprintf("workflow %q in project %q", req.Workflow, req.Project))
	}
	return p, def, nil
}

// insertRun writes the instance of req for def and its start command in tx.
func insertRun(tx *gorm.DB, box *secret.Box, p projectRow, def workflowDefinitionRow, req RunRequest, now time.Time) (model.WorkflowInstance, error) {
	r, err := runRow(tx, box, p, def, req, now)
	if err != nil {
		return model.WorkflowInstance{}, err
	}
	if err := tx.Create(&r).Error; err != nil {
		return model.WorkflowInstance{}, fmt.Errorf("insert workflow instance: %w", err)
	}
	if err := appendEvents(tx, instanceChanges(r.ID)); err != nil {
		return model.WorkflowInstance{}, err
	}
	if r.Queued {
		return r.model(), nil
	}
	c := commandRow{Type: r.CommandType, WorkflowInstanceID: r.ID, CreatedAt: now}
	if err := tx.Create(&c).Error; err != nil {
		return model.WorkflowInstance{}, fmt.Errorf("insert command: %w", err)
	}
	return r.model(), nil
}

// runRow is the instance row of req for def, its params sealed.
func runRow(tx *gorm.DB, box *secret.Box, p projectRow, def workflowDefinitionRow, req RunRequest, now time.Time) (workflowInstanceRow, error) {
	r := workflowInstanceRow{ProjectID: p.ID, ProjectName: p.Name, WorkflowName: def.Name,
		WorkflowDefinitionID: def.ID, Version: def.Version, State: string(model.WorkflowSubmitted),
		CommandType: string(req.CommandType), Priority: def.Priority, WorkerGroup: def.WorkerGroup,
		RunTimes: 1, CreatedAt: now, ScheduleTime: req.ScheduleTime, Timezone: req.Timezone}
	if r.CommandType == "" {
		r.CommandType = string(model.CommandStart)
	}
	if req.ScheduleID != 0 {
		r.ScheduleID = &req.ScheduleID
	}
	if req.BackfillID != 0 {
		r.BackfillID = &req.BackfillID
	}
	if req.Priority != nil {
		r.Priority = int(*req.Priority)
	}
	if req.WorkerGroup != "" {
		r.WorkerGroup = req.WorkerGroup
	}
	r.Scope, r.DryRun = req.Scope, req.DryRun
	ps, err := runParams(tx, box, def, req)
	if err != nil {
		return r, fmt.Errorf("run params: %w", err)
	}
	r.StartNodes, r.ParamsJSON = jsonText(req.StartNodes, len(req.StartNodes)), jsonText(ps, len(ps))
	r.Queued, r.Reason = req.Queued, req.QueueReason
	return r, nil
}

// InstanceClaimCommands consumes up to limit start commands: up to half of them
// the oldest runs asked for by a person (start), the rest the oldest of
// any kind, so an operator's run is not claimed after a burst of
// thousands of scheduled or backfill runs written before it (fair share;
// fairClaim). Each
// command is deleted in the same transaction that moves its instance to
// running and records the owning master and epoch, so a command is consumed
// once even when two masters race for it. An instance whose workflow is at
// its max_active_runs (or has runs queued) is queued instead, for
// InstanceReleaseQueued. Operator action commands are left
// for ClaimActions.
func (s *Store) InstanceClaimCommands(ctx context.Context, host string, epoch int64, limit int) ([]model.WorkflowInstance, error) {
	db := s.db.WithContext(ctx)
	var manual, oldest []commandRow
	if err := db.Where("type = ?", string(model.CommandStart)).Order("id").Limit(max(limit/2, 1)).Find(&manual).Error; err != nil {
		return nil, fmt.Errorf("read commands: %w", err)
	}
	if err := claimable(db, time.Now()).Where("type <> ?", commandTypeAction).Order("id").Limit(limit).Find(&oldest).Error; err != nil {
		return nil, fmt.Errorf("read commands: %w", err)
	}
	return s.claimCommands(ctx, host, epoch, fairClaim(manual, oldest, limit))
}

// InstanceClaimManualCommands is InstanceClaimCommands of the runs a person asked for
// (start commands) only: while a fire burst is being written the leader
// claims nothing else, so the burst's own runs do not compete with its
// write, and an operator's run still starts.
func (s *Store) InstanceClaimManualCommands(ctx context.Context, host string, epoch int64, limit int) ([]model.WorkflowInstance, error) {
	var cmds []commandRow
	if err := claimable(s.db.WithContext(ctx), time.Now()).Where("type = ?", string(model.CommandStart)).Order("id").Limit(limit).Find(&cmds).Error; err != nil {
		return nil, fmt.Errorf("read commands: %w", err)
	}
	return s.claimCommands(ctx, host, epoch, cmds)
}

// claimable limits a read of commands to those due at now: a run fired
// ahead of its second (not_before) starts at that second, not when written.
func claimable(db *gorm.DB, now time.Time) *gorm.DB {
	return db.Where("(not_before IS NULL OR not_before <= ?)", now.UTC())
}

// claimCommands consumes cmds, read outside the transaction.
func (s *Store) claimCommands(ctx context.Context, host string, epoch int64, cmds []commandRow) ([]model.WorkflowInstance, error) {
	// The commands found at once are claimed in one transaction (a burst
	// of runs is a transaction, not one each); when that fails, each in its
	// own, so one bad command does not hold up the others.
	if len(cmds) > 1 {
		var out []model.WorkflowInstance
		err := s.tx(ctx, func(tx *gorm.DB) error {
			out = nil
			var ids []int64
			for _, c := range cmds {
				inst, err := claimCommand(tx, c, host, epoch)
				if err != nil {
					return err
				}
				if inst != nil {
					out, ids = append(out, inst.model()), append(ids, inst.ID)
				}
			}
			if len(ids) == 0 {
				return nil
			}
			return appendEvents(tx, instanceChanges(ids...))
		})
		if err == nil || errors.Is(err, ErrFenced) {
			return out, err
		}
	}
	var out []model.WorkflowInstance
	for _, c := range cmds {
		var inst *workflowInstanceRow
		err := s.tx(ctx, func(tx *gorm.DB) error {
			var err error
			if inst, err = claimCommand(tx, c, host, epoch); err != nil || inst == nil {
				return err
			}
			return appendEvents(tx, instanceChanges(inst.ID))
		})
		if err != nil {
			return out, err
		}
		if inst != nil {
			out = append(out, inst.model())
		}
	}
	return out, nil
}

// claimCommand consumes command c in tx: its instance, now running under
// host, or nil when another master took it, the instance is gone or no
// longer submitted, or it was queued for its workflow's max_active_runs.
func claimCommand(tx *gorm.DB, c commandRow, host string, epoch int64) (*workflowInstanceRow, error) {
	del := tx.Where("id = ?", c.ID).Delete(&commandRow{})
	if del.Error != nil {
		return nil, fmt.Errorf("delete command %d: %w", c.ID, del.Error)
	}
	if del.RowsAffected == 0 {
		return nil, nil // another master took it
	}
	var cur workflowInstanceRow
	err := tx.Select("id, project_id, workflow_name, state").Where("id = ? AND state = ?", c.WorkflowInstanceID, model.WorkflowSubmitted).
		Take(&cur).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil // instance gone or not submitted: drop the stale command
	} else if err != nil {
		return nil, fmt.Errorf("read instance %d: %w", c.WorkflowInstanceID, err)
	}
	hold, why, err := holdForLimit(tx, wfKey{cur.ProjectID, cur.WorkflowName})
	if err != nil {
		return nil, err
	}
	if hold { // over max_active_runs: ReleaseQueued starts it in its turn
		return nil, tx.Model(&workflowInstanceRow{}).Where("id = ?", cur.ID).
			UpdateColumns(map[string]any{"queued": true, "reason": clip(why, 1024)}).Error
	}
	now := time.Now().UTC()
	up := tx.Model(&workflowInstanceRow{}).Where("id = ? AND state = ?", c.WorkflowInstanceID, model.WorkflowSubmitted).
		Updates(map[string]any{"state": string(model.WorkflowRunning), "host": host, "epoch": epoch, "start_time": now,
			"reason": ""}) // a reason it waited with (InstanceNoteWaiting) is over
	if up.Error != nil {
		return nil, fmt.Errorf("start instance %d: %w", c.WorkflowInstanceID, up.Error)
	}
	if up.RowsAffected == 0 {
		return nil, nil // instance gone or not submitted: drop the stale command
	}
	var inst workflowInstanceRow
	if err := tx.Take(&inst, c.WorkflowInstanceID).Error; err != nil {
		return nil, fmt.Errorf("read instance %d: %w", c.WorkflowInstanceID, err)
	}
	return &inst, nil
}

// InstanceGet returns one instance.
func (s *Store) InstanceGet(ctx context.Context, id int64) (model.WorkflowInstance, error) {
	var r workflowInstanceRow
	if err := s.read(ctx).Take(&r, id).Error; err != nil {
		return model.WorkflowInstance{}, notFound(err, fmt.Sprintf("workflow instance %d", id))
	}
	return r.model(), nil
}

// InstanceFilter selects instances; empty fields match all.
type InstanceFilter struct {
	Project  string
	Workflow string
	State    model.WorkflowState
	Backfill int64 // runs of this backfill; 0: any
	// OnlyProjects, when not nil, keeps the instances of these project ids
	// (the ones the caller may view); an empty list keeps none.
	OnlyProjects []int64
	Limit        int // default 50, at most 1000
	Offset       int
	// Keyset pages (Before, and Keyset for the first): the instances below
	// id Before (0: from the newest), nothing counted (total -1) and one
	// more read than the page to tell whether more follow (More).
	Keyset bool
	Before int64
}

// More says whether a keyset page read past its limit (the extra row is
// dropped): another page follows.
func (f InstanceFilter) More(items []model.WorkflowInstance) ([]model.WorkflowInstance, bool) {
	if !f.Keyset || len(items) <= f.limit() {
		return items, false
	}
	return items[:f.limit()], true
}

func (f InstanceFilter) limit() int {
	switch {
	case f.Limit <= 0:
		return 50
	case f.Limit > 1000:
		return 1000
	}
	return f.Limit
}

// InstanceList returns instances newest first and the total count
// (-1 for a keyset page, which counts nothing).
func (s *Store) InstanceList(ctx context.Context, f InstanceFilter) ([]model.WorkflowInstance, int64, error) {
	q := filterBy(s.read(ctx).Model(&workflowInstanceRow{}), f.Project, f.Workflow, string(f.State))
	if f.Backfill != 0 {
		q = q.Where("backfill_id = ?", f.Backfill)
	}
	if f.OnlyProjects != nil {
		q = q.Where("project_id IN ?", append(f.OnlyProjects, 0)) // 0: no project, so the list is never empty
	}
	total, limit := int64(-1), f.limit()
	if f.Keyset {
		// A page from its key: no count, no offset skipped over; the row
		// past the page says whether another follows (More).
		if f.Before > 0 {
			q = q.Where("id < ?", f.Before)
		}
		limit, f.Offset = limit+1, 0
	} else if err := q.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count instances: %w", err)
	}
	var rows []workflowInstanceRow
	if err := q.Order("id DESC").Limit(limit).Offset(f.Offset).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list instances: %w", err)
	}
	out := make([]model.WorkflowInstance, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, total, nil
}

// InstanceFinish records the end of an instance.
func (s *Store) InstanceFinish(ctx context.Context, id int64, state model.WorkflowState, end time.Time, reason string) error {
	if err := s.writeRunnerBatch(ctx, nil, []InstanceEnd{{ID: id, State: state, End: end, Reason: reason}}); err != nil {
		return fmt.Errorf("finish instance %d as %s: %w", id, state, err)
	}
	return nil
}

// InstanceSetReason records why an instance is not progressing ("" clears
// it), while it is running.
func (s *Store) InstanceSetReason(ctx context.Context, id int64, reason string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE workflow_instance SET reason = ? WHERE id = ? AND state = ?`, reason, id, model.WorkflowRunning).Error
	})
}

// InstanceSetReasons is SetInstanceReason for several instances (id ->
// reason) in one transaction, a statement per distinct reason: the
// dispatcher notes the waits of a round's instances together (a thousand
// concurrent runs waiting for workers were two commits per task).
func (s *Store) InstanceSetReasons(ctx context.Context, reasons map[int64]string) error {
	if len(reasons) == 0 {
		return nil
	}
	byReason := map[string][]int64{}
	for id, r := range reasons {
		byReason[r] = append(byReason[r], id)
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		for r, ids := range byReason {
			slices.Sort(ids) // the same lock order every time (MySQL)
			for chunk := range slices.Chunk(ids, maxInIDs) {
				if err := tx.Exec(`UPDATE workflow_instance SET reason = ? WHERE id IN ? AND state = ?`, r, chunk, model.WorkflowRunning).Error; err != nil {
					return fmt.Errorf("set the reason of %d instances: %w", len(chunk), err)
				}
			}
		}
		return nil
	})
}

// filterBy narrows a query on a table with project_name, workflow_name and
// state columns to the values given; "" matches all.
func filterBy(q *gorm.DB, project, workflow, state string) *gorm.DB {
	for _, c := range [...][2]string{{"project_name", project}, {"workflow_name", workflow}, {"state", state}} {
		if c[1] != "" {
			q = q.Where(c[0]+" = ?", c[1])
		}
	}
	return q
}

// fairClaim is what one claim takes: the manual commands first, then the
// oldest of any kind not among them, up to limit.
func fairClaim(manual, oldest []commandRow, limit int) []commandRow {
	out := slices.Clone(manual)
	for _, c := range oldest {
		if len(out) >= limit {
			break
		}
		if !slices.ContainsFunc(manual, func(m commandRow) bool { return m.ID == c.ID }) {
			out = append(out, c)
		}
	}
	return out
}
