package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
)

// ErrBackfillMoved means a backfill changed (submitted, stopped, ended)
// since it was read; nothing was written.
var ErrBackfillMoved = errors.New("backfill changed since it was read")

type backfillRow struct {
	ID           int64
	ProjectID    int64
	ProjectName  string
	WorkflowName string
	Cron         string
	Timezone     string
	StartTime    time.Time
	EndTime      time.Time
	TimesJSON    string `gorm:"column:times_json"`
	Calendar     string
	OnHoliday    string
	RefusedJSON  *string `gorm:"column:refused_json"`
	Total        int
	Submitted    int
	Parallelism  int
	OnFailure    string
	Priority     *int
	WorkerGroup  string
	ParamsJSON   *string `gorm:"column:params_json"`
	DryRun       bool
	State        string
	Reason       string
	Revision     int64
	RequestedBy  string
	CreatedAt    time.Time
	EndAt        *time.Time
}

func (backfillRow) TableName() string { return "backfill" }

func (r backfillRow) model() model.Backfill {
	b := model.Backfill{ID: r.ID, ProjectID: r.ProjectID, Project: r.ProjectName, Workflow: r.WorkflowName,
		Cron: r.Cron, Timezone: r.Timezone, Start: r.StartTime.UTC(), End: r.EndTime.UTC(), Total: r.Total, Submitted: r.Submitted,
		Parallelism: r.Parallelism, OnFailure: r.OnFailure, WorkerGroup: r.WorkerGroup, DryRun: r.DryRun,
		State: model.BackfillState(r.State), Reason: r.Reason, Revision: r.Revision, RequestedBy: r.RequestedBy,
		CreatedAt: r.CreatedAt.UTC(), EndAt: utc(r.EndAt)}
	if r.TimesJSON != "" {
		_ = json.Unmarshal([]byte(r.TimesJSON), &b.Times) // written by us from a slice
	}
	for i := range b.Times {
		b.Times[i] = b.Times[i].UTC()
	}
	b.Calendar, b.OnHoliday = r.Calendar, r.OnHoliday
	if r.RefusedJSON != nil && *r.RefusedJSON != "" {
		_ = json.Unmarshal([]byte(*r.RefusedJSON), &b.Refused) // written by us from a slice
	}
	if r.Priority != nil {
		p := model.Priority(*r.Priority)
		b.Priority = &p
	}
	if r.ParamsJSON != nil && *r.ParamsJSON != "" {
		_ = json.Unmarshal([]byte(*r.ParamsJSON), &b.Params)
	}
	return b
}

// BackfillCreate stores a backfill of b.Times (validated and ordered by the
// caller) in state running; the active master submits its runs.
func (s *Store) BackfillCreate(ctx context.Context, b model.Backfill) (model.Backfill, error) {
	if len(b.Times) == 0 {
		return model.Backfill{}, fmt.Errorf("backfill of %q has no schedule times", b.Workflow)
	}
	var out model.Backfill
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) (err error) {
		out, err = insertBackfill(tx, s.box, b)
		return err
	})
	return out, err
}

// insertBackfill writes backfill b in tx (BackfillCreate; an impact
// plan's apply).
func insertBackfill(tx *gorm.DB, box *secret.Box, b model.Backfill) (model.Backfill, error) {
	if len(b.Times) == 0 {
		return model.Backfill{}, fmt.Errorf("backfill of %q has no schedule times", b.Workflow)
	}
	p, err := workflowProject(tx, b.Project, b.Workflow)
	if err != nil {
		return model.Backfill{}, err
	}
	times := make([]time.Time, len(b.Times))
	for i, t := range b.Times {
		times[i] = t.UTC()
	}
	r := backfillRow{ProjectID: p.ID, ProjectName: p.Name, WorkflowName: b.Workflow, Cron: b.Cron, Timezone: b.Timezone,
		StartTime: b.Start.UTC(), EndTime: b.End.UTC(), TimesJSON: *jsonText(times, len(times)), Total: len(times),
		Parallelism: max(b.Parallelism, 1), OnFailure: b.OnFailure, WorkerGroup: b.WorkerGroup, DryRun: b.DryRun,
		State: string(model.BackfillRunning), RequestedBy: b.RequestedBy, CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		Calendar: b.Calendar, OnHoliday: b.OnHoliday, RefusedJSON: jsonText(b.Refused, len(b.Refused))}
	if r.OnFailure == "" {
		r.OnFailure = model.BackfillContinue
	}
	names, err := latestSecrets(tx, p.ID, b.Workflow)
	if err != nil {
		return model.Backfill{}, err
	}
	ps, err := sealParams(box, b.Params, b.SecretParams, names, nil)
	if err != nil {
		return model.Backfill{}, fmt.Errorf("backfill params: %w", err)
	}
	r.Priority, r.ParamsJSON = priorityCol(b.Priority), jsonText(ps, len(ps))
	if err := tx.Create(&r).Error; err != nil {
		return model.Backfill{}, fmt.Errorf("insert backfill: %w", err)
	}
	return r.model(), nil
}

// BackfillFilter selects backfills; empty fields match all.
type BackfillFilter struct {
	Project  string
	Workflow string
	State    model.BackfillState
	Limit    int  // default 200
	NoTimes  bool // leave Times empty (lists): they take most of a row
}

// BackfillList returns backfills newest first with their runs' progress.
func (s *Store) BackfillList(ctx context.Context, f BackfillFilter) ([]model.Backfill, error) {
	if f.Limit <= 0 {
		f.Limit = 200
	}
	// The refused times are read with one backfill (BackfillGet) only:
	// neither a list nor the master submitting runs needs them.
	omit := []string{"refused_json"}
	if f.NoTimes {
		omit = append(omit, "times_json")
	}
	q := s.db.WithContext(ctx).Order("id DESC").Limit(f.Limit).Omit(omit...)
	q = filterBy(q, f.Project, f.Workflow, string(f.State))
	var rows []backfillRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list backfills: %w", err)
	}
	return s.withProgress(ctx, rows)
}

// BackfillGet returns one backfill with its runs' progress.
func (s *Store) BackfillGet(ctx context.Context, id int64) (model.Backfill, error) {
	var r backfillRow
	if err := s.db.WithContext(ctx).Take(&r, id).Error; err != nil {
		return model.Backfill{}, notFound(err, fmt.Sprintf("backfill %d", id))
	}
	bs, err := s.withProgress(ctx, []backfillRow{r})
	if err != nil {
		return model.Backfill{}, err
	}
	return bs[0], nil
}

// withProgress counts the runs of each backfill by state, in one query.
func (s *Store) withProgress(ctx context.Context, rows []backfillRow) ([]model.Backfill, error) {
	out := make([]model.Backfill, len(rows))
	idx := make(map[int64]int, len(rows))
	ids := make([]int64, len(rows))
	for i, r := range rows {
		out[i], idx[r.ID], ids[i] = r.model(), i, r.ID
	}
	if len(ids) == 0 {
		return out, nil
	}
	var counts []struct {
		BackfillID int64
		State      string
		N          int
	}
	if err := s.db.WithContext(ctx).Model(&workflowInstanceRow{}).Select("backfill_id, state, COUNT(*) AS n").
		Where("backfill_id IN ?", ids).Group("backfill_id, state").Scan(&counts).Error; err != nil {
		return nil, fmt.Errorf("count backfill runs: %w", err)
	}
	for _, c := range counts {
		b := &out[idx[c.BackfillID]]
		switch model.WorkflowState(c.State) {
		case model.WorkflowSucceeded:
			b.Succeeded += c.N
		case model.WorkflowFailed, model.WorkflowStopped:
			b.Failed += c.N
		default:
			b.Unfinished += c.N
		}
	}
	return out, nil
}

// BackfillSubmit writes runs for the next n times of b (read at
// b.Revision) and moves its cursor, in one fenced transaction that applies
// only if the backfill is unchanged and running; a lost race is
// ErrBackfillMoved. So each time runs once however masters come and go.
func (s *Store) BackfillSubmit(ctx context.Context, b model.Backfill, n int) ([]model.WorkflowInstance, error) {
	n = min(n, len(b.Times)-b.Submitted)
	if n <= 0 {
		return nil, nil
	}
	w := timedRuns{table: &backfillRow{}, what: fmt.Sprintf("backfill %d", b.ID), where: "state = ?", whereArg: model.BackfillRunning,
		id: b.ID, rev: b.Revision, up: map[string]any{"submitted": b.Submitted + n}, moved: ErrBackfillMoved, box: s.box,
		times: b.Times[b.Submitted : b.Submitted+n],
		run: RunRequest{Project: b.Project, Workflow: b.Workflow, Params: b.Params, Priority: b.Priority, WorkerGroup: b.WorkerGroup,
			CommandType: model.CommandBackfill, DryRun: b.DryRun, BackfillID: b.ID, Timezone: b.Timezone}}
	var out []model.WorkflowInstance
	err := s.tx(ctx, func(tx *gorm.DB) (err error) {
		out, err = w.write(tx)
		return err
	})
	return out, err
}

// BackfillEnd moves a running backfill read at b.Revision to state (done
// or failed) with a reason, in a fenced transaction; a lost race is
// ErrBackfillMoved.
func (s *Store) BackfillEnd(ctx context.Context, b model.Backfill, state model.BackfillState, reason string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&backfillRow{}).Where("id = ? AND revision = ? AND state = ?", b.ID, b.Revision, model.BackfillRunning).
			UpdateColumns(map[string]any{"state": string(state), "reason": reason, "end_at": time.Now().UTC(), "revision": b.Revision + 1})
		if res.Error != nil {
			return fmt.Errorf("end backfill %d: %w", b.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("backfill %d at revision %d: %w", b.ID, b.Revision, ErrBackfillMoved)
		}
		return nil
	})
}

// BackfillStop stops a running backfill at the operator's request: no
// more of its times are submitted; runs already submitted go on. A
// backfill that is not running is ErrConflict, naming its state.
func (s *Store) BackfillStop(ctx context.Context, id int64, by string) (model.Backfill, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var r backfillRow
		if err := tx.Take(&r, id).Error; err != nil {
			return notFound(err, fmt.Sprintf("backfill %d", id))
		}
		if r.State != string(model.BackfillRunning) {
			return fmt.Errorf("backfill %d is %s, not running: %w", id, r.State, ErrConflict)
		}
		reason := fmt.Sprintf("stopped by %s after %d of %d times were submitted", by, r.Submitted, r.Total)
		res := tx.Model(&backfillRow{}).Where("id = ? AND revision = ?", id, r.Revision).
			UpdateColumns(map[string]any{"state": string(model.BackfillStopped), "reason": reason, "end_at": time.Now().UTC(), "revision": r.Revision + 1})
		if res.Error != nil {
			return fmt.Errorf("stop backfill %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("backfill %d changed while stopping; try again: %w", id, ErrConflict)
		}
		return nil
	})
	if err != nil {
		return model.Backfill{}, err
	}
	return s.BackfillGet(ctx, id)
}
