package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// ErrScheduleMoved means a schedule changed (edited, disabled, deleted or
// fired by someone else) since it was read; nothing was written.
var ErrScheduleMoved = errors.New("schedule changed since it was read")

type scheduleRow struct {
	ID              int64
	ProjectID       int64
	ProjectName     string
	WorkflowName    string
	Cron            string
	Timezone        string
	StartTime       *time.Time
	EndTime         *time.Time
	Catchup         string
	Priority        *int
	WorkerGroup     string
	ParamsJSON      *string `gorm:"column:params_json"`
	Enabled         bool
	NextFireTime    *time.Time
	LastFireTime    *time.Time
	Note            string
	Overlap         string
	SkippedFires    int64
	LastSkippedTime *time.Time
	Revision        int64
	Version         int64
	UpdatedBy       string
	AlertsJSON      *string `gorm:"column:alerts_json"`
	Deadline        string
	Calendar        string
	OnHoliday       string
	PinVersion      int // the version its fires run (0: the latest)
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (scheduleRow) TableName() string { return "schedule" }

func (r scheduleRow) model() model.Schedule {
	s := model.Schedule{ID: r.ID, ProjectID: r.ProjectID, Project: r.ProjectName, Workflow: r.WorkflowName,
		Cron: r.Cron, Timezone: r.Timezone, StartTime: utc(r.StartTime), EndTime: utc(r.EndTime),
		Catchup: r.Catchup, WorkerGroup: r.WorkerGroup, Enabled: r.Enabled, NextFireTime: utc(r.NextFireTime),
		LastFireTime: utc(r.LastFireTime), Note: r.Note, Overlap: model.Overlap(r.Overlap), SkippedFires: r.SkippedFires,
		LastSkippedTime: utc(r.LastSkippedTime), Revision: r.Revision, Version: r.Version, UpdatedBy: r.UpdatedBy,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if r.Priority != nil {
		p := model.Priority(*r.Priority)
		s.Priority = &p
	}
	if r.ParamsJSON != nil && *r.ParamsJSON != "" {
		_ = json.Unmarshal([]byte(*r.ParamsJSON), &s.Params) // written by us from a map
	}
	if r.AlertsJSON != nil && *r.AlertsJSON != "" {
		_ = json.Unmarshal([]byte(*r.AlertsJSON), &s.Alerts) // written by us
	}
	s.Deadline, s.Calendar, s.OnHoliday, s.PinVersion = r.Deadline, r.Calendar, r.OnHoliday, r.PinVersion
	return s
}

// SchedulePut creates or replaces the schedule of sc.Project/sc.Workflow
// with the fields of sc (the caller has validated them and computed
// NextFireTime). The workflow must exist. It returns the stored schedule and
// whether it was created.
//
// A replace is conditional on the revision it read, like a fire: a fire
// committing in between makes it read again (never undo the fire), and the
// revision it writes moves on, so a fire planned from the old row is
// refused. The fire's own columns (last fire time, note) are not written.
//
// ifVersion, when set, is the version of the schedule the caller read
// (0: there was none): an edit made since is ErrConflict, not overwritten.
func (s *Store) SchedulePut(ctx context.Context, sc model.Schedule, ifVersion *int64) (out model.Schedule, created bool, err error) {
	for range 5 {
		out, created, err = s.putSchedule(ctx, sc, ifVersion)
		if !errors.Is(err, ErrScheduleMoved) {
			return out, created, err
		}
	}
	return out, created, fmt.Errorf("schedule of %q keeps changing; try again: %w", sc.Workflow, ErrConflict)
}

func (s *Store) putSchedule(ctx context.Context, sc model.Schedule, ifVersion *int64) (out model.Schedule, created bool, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		out, created, err = s.putScheduleTx(tx, sc, ifVersion)
		return err
	})
	return out, created, err
}

// putScheduleTx is putSchedule in tx (a Git sync puts a commit's schedules
// in its own transaction).
func (s *Store) putScheduleTx(tx *gorm.DB, sc model.Schedule, ifVersion *int64) (out model.Schedule, created bool, err error) {
	p, err := workflowProject(tx, sc.Project, sc.Workflow)
	if err != nil {
		return model.Schedule{}, false, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond) // as stored, so the answer equals a later read
	r := scheduleRow{ProjectID: p.ID, ProjectName: p.Name, WorkflowName: sc.Workflow, Cron: sc.Cron,
		Timezone: sc.Timezone, StartTime: utc(sc.StartTime), EndTime: utc(sc.EndTime), Catchup: sc.Catchup,
		WorkerGroup: sc.WorkerGroup, Enabled: sc.Enabled, NextFireTime: utc(sc.NextFireTime),
		UpdatedBy: sc.UpdatedBy, CreatedAt: now, UpdatedAt: now, Priority: priorityCol(sc.Priority),
		Overlap: string(sc.Overlap), Deadline: sc.Deadline, Calendar: sc.Calendar, OnHoliday: sc.OnHoliday,
		PinVersion: sc.PinVersion}
	if sc.PinVersion > 0 {
		// The definitions are locked (workflowProject), as every run
		// writer locks them first. Versions go only with their workflow
		// (and its schedule with them), so a pin that exists now
		// resolves at every fire.
		if err := versionExists(tx, p.ID, sc.Workflow, sc.PinVersion); err != nil {
			return model.Schedule{}, false, err
		}
	}
	if sc.Calendar != "" {
		// Checked in the write's transaction, as CalendarDelete checks
		// its users in its own: a calendar is never deleted under a
		// schedule that names it.
		if _, err := calendarFor(lockingRead(tx), p.ID, sc.Calendar); errors.Is(err, ErrNotFound) {
			return model.Schedule{}, false, fmt.Errorf("calendar %q is neither project %q's nor a shared one: %w", sc.Calendar, p.Name, ErrUnknownCalendar)
		} else if err != nil {
			return model.Schedule{}, false, err
		}
	}
	if sc.Alerts != nil {
		r.AlertsJSON = jsonText(sc.Alerts, 1)
	}
	if r.Overlap == "" {
		r.Overlap = string(model.OverlapAllow)
	}
	var old scheduleRow
	err = tx.Where("project_id = ? AND workflow_name = ?", p.ID, sc.Workflow).Take(&old).Error
	names, nerr := latestSecrets(tx, p.ID, sc.Workflow)
	if nerr != nil {
		return model.Schedule{}, false, nerr
	}
	ps, serr := sealParams(s.box, sc.Params, sc.SecretParams, names, old.model().Params)
	if serr != nil {
		return model.Schedule{}, false, fmt.Errorf("schedule params: %w", serr)
	}
	r.ParamsJSON = jsonText(ps, len(ps))
	if err == nil || errors.Is(err, gorm.ErrRecordNotFound) {
		if ifVersion != nil && *ifVersion != old.Version { // old is zero when there is none
			return model.Schedule{}, false, fmt.Errorf("the schedule of %q is at version %d (edited at %s by %s), not %d as read: read it again: %w",
				sc.Workflow, old.Version, old.UpdatedAt.UTC().Format(time.RFC3339), old.UpdatedBy, *ifVersion, ErrConflict)
		}
	}
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		created = true
		if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return model.Schedule{}, false, fmt.Errorf("schedule of %q was created concurrently: %w", sc.Workflow, ErrConflict)
			}
			return model.Schedule{}, false, fmt.Errorf("insert schedule: %w", err)
		}
	case err != nil:
		return model.Schedule{}, false, fmt.Errorf("read schedule: %w", err)
	default:
		r.ID, r.CreatedAt, r.LastFireTime, r.Note, r.Revision, r.Version = old.ID, old.CreatedAt, old.LastFireTime, old.Note, old.Revision+1, old.Version+1
		r.SkippedFires, r.LastSkippedTime = old.SkippedFires, old.LastSkippedTime
		cols := map[string]any{
			"cron": r.Cron, "timezone": r.Timezone, "start_time": r.StartTime, "end_time": r.EndTime, "catchup": r.Catchup,
			"priority": r.Priority, "worker_group": r.WorkerGroup, "params_json": r.ParamsJSON, "enabled": r.Enabled,
			"next_fire_time": r.NextFireTime, "updated_by": r.UpdatedBy, "updated_at": r.UpdatedAt, "revision": r.Revision,
			"version": r.Version, "overlap": r.Overlap, "alerts_json": r.AlertsJSON, "deadline": r.Deadline,
			"calendar": r.Calendar, "on_holiday": r.OnHoliday, "pin_version": r.PinVersion}
		// A fire written ahead of its second and not yet due is the old
		// schedule's: the edit (a pause, a new cron or params) takes
		// it back, and the fire time is free to fire again as edited.
		if last, cancelled, err := cancelAhead(tx, old.ID, old.LastFireTime, now); err != nil {
			return model.Schedule{}, false, err
		} else if cancelled {
			r.LastFireTime, cols["last_fire_time"] = last, last
		}
		res := tx.Model(&scheduleRow{}).Where("id = ? AND revision = ?", old.ID, old.Revision).UpdateColumns(cols)
		if res.Error != nil {
			return model.Schedule{}, false, fmt.Errorf("update schedule: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return model.Schedule{}, false, ErrScheduleMoved
		}
		if !old.Enabled && r.Enabled {
			// A resume: the times due while paused are missed fires.
			l := newLedger()
			for _, t := range sc.PausedFires {
				if old.LastFireTime == nil || t.After(*old.LastFireTime) {
					l.add(old.ID, t, model.FireMissed, 0)
				}
			}
			if err := l.write(tx); err != nil {
				return model.Schedule{}, false, err
			}
		}
	}
	out = r.model()
	return out, created, nil
}

// ScheduleGet returns the schedule of a workflow.
func (s *Store) ScheduleGet(ctx context.Context, project, workflow string) (model.Schedule, error) {
	var r scheduleRow
	err := s.db.WithContext(ctx).Where("project_name = ? AND workflow_name = ?", project, workflow).Take(&r).Error
	if err != nil {
		return model.Schedule{}, notFound(err, fmt.Sprintf("schedule of workflow %q in project %q", workflow, project))
	}
	return r.model(), nil
}

// ScheduleDelete removes the schedule of a workflow; runs it fired stay.
// A fire of it written ahead of its second and not yet due goes with it.
func (s *Store) ScheduleDelete(ctx context.Context, project, workflow string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return deleteScheduleTx(tx, project, workflow)
	})
}

// deleteScheduleTx is ScheduleDelete in tx.
func deleteScheduleTx(tx *gorm.DB, project, workflow string) error {
	var rows []scheduleRow
	if err := lockingRead(tx).Select("id, last_fire_time").Where("project_name = ? AND workflow_name = ?", project, workflow).
		Find(&rows).Error; err != nil {
		return fmt.Errorf("read schedule of %q: %w", workflow, err)
	}
	if len(rows) == 0 {
		return fmt.Errorf("schedule of workflow %q in project %q: %w", workflow, project, ErrNotFound)
	}
	if _, _, err := cancelAhead(tx, rows[0].ID, rows[0].LastFireTime, time.Now()); err != nil {
		return err
	}
	if err := tx.Where("schedule_id = ?", rows[0].ID).Delete(&fireRow{}).Error; err != nil {
		return fmt.Errorf("delete the fires of schedule of %q: %w", workflow, err)
	}
	res := tx.Where("id = ?", rows[0].ID).Delete(&scheduleRow{})
	if res.Error != nil {
		return fmt.Errorf("delete schedule of %q: %w", workflow, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("schedule of workflow %q in project %q: %w", workflow, project, ErrNotFound)
	}
	return nil
}

// cancelAhead takes back, in tx, the runs schedule id fired ahead of their
// second (ScheduleFire.NotBefore) that are not due yet at now: their start
// commands (not_before after now) and the runs themselves, never claimed,
// so nobody sees a run the schedule was paused, changed or deleted before. last is the schedule's
// last fire time as read: a fire written ahead moved it past now, so an
// earlier one means there is nothing to take back and costs no read. It
// returns the last fire time the schedule keeps (the latest of its runs
// left, nil: none) and whether it took any run back.
func cancelAhead(tx *gorm.DB, id int64, last *time.Time, now time.Time) (*time.Time, bool, error) {
	now = now.UTC()
	if last == nil || !last.After(now) {
		return last, false, nil
	}
	// Written ahead is what its start command says (not_before), not a
	// schedule time past this clock: a fire of a master whose clock runs
	// ahead of this one is no fire ahead, and stays.
	var ids []int64
	runs := tx.Model(&workflowInstanceRow{}).Select("id").Where("schedule_id = ? AND state = ?", id, model.WorkflowSubmitted)
	if err := tx.Model(&commandRow{}).Where("not_before IS NOT NULL AND not_before > ? AND workflow_instance_id IN (?)", now, runs).
		Pluck("workflow_instance_id", &ids).Error; err != nil {
		return nil, false, fmt.Errorf("schedule %d: read the runs fired ahead: %w", id, err)
	}
	if len(ids) == 0 {
		return last, false, nil
	}
	// Watchers saw these runs submitted: each ends for them with a stopped
	// event naming why, then goes (no run is left to list).
	if err := tx.Model(&workflowInstanceRow{}).Where("id IN ?", ids).Updates(map[string]any{
		"state": string(model.WorkflowStopped), "end_time": now,
		"reason": "taken back before its second: its schedule was changed, paused or deleted"}).Error; err != nil {
		return nil, false, fmt.Errorf("schedule %d: end %d runs fired ahead: %w", id, len(ids), err)
	}
	if err := appendEvents(tx, changed{instances: ids}); err != nil {
		return nil, false, fmt.Errorf("schedule %d: %w", id, err)
	}
	// The commands first: the order a claim takes them in (command, then run).
	if err := tx.Where("workflow_instance_id IN ?", ids).Delete(&commandRow{}).Error; err != nil {
		return nil, false, fmt.Errorf("schedule %d: take back the start commands of %d runs fired ahead: %w", id, len(ids), err)
	}
	if err := tx.Where("id IN ?", ids).Delete(&workflowInstanceRow{}).Error; err != nil {
		return nil, false, fmt.Errorf("schedule %d: take back %d runs fired ahead: %w", id, len(ids), err)
	}
	// Their times were never due: no ledger row is left for them either.
	if err := tx.Where("schedule_id = ? AND workflow_instance_id IN ?", id, ids).Delete(&fireRow{}).Error; err != nil {
		return nil, false, fmt.Errorf("schedule %d: take back the ledger rows of %d runs fired ahead: %w", id, len(ids), err)
	}
	var kept []workflowInstanceRow
	if err := tx.Select("schedule_time").Where("schedule_id = ? AND schedule_time IS NOT NULL", id).
		Order("schedule_time DESC").Limit(1).Find(&kept).Error; err != nil {
		return nil, false, fmt.Errorf("schedule %d: read its last run: %w", id, err)
	}
	if len(kept) == 0 {
		return nil, true, nil
	}
	return utc(kept[0].ScheduleTime), true, nil
}

// ScheduleList returns the schedules of a project ("" for all), by id.
func (s *Store) ScheduleList(ctx context.Context, project string) ([]model.Schedule, error) {
	q := s.db.WithContext(ctx).Order("id")
	if project != "" {
		q = q.Where("project_name = ?", project)
	}
	var rows []scheduleRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	out := make([]model.Schedule, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// ScheduleArmed returns the enabled schedules that have a next fire time.
func (s *Store) ScheduleArmed(ctx context.Context) ([]model.Schedule, error) {
	var rows []scheduleRow
	if err := s.db.WithContext(ctx).Where("enabled = ? AND next_fire_time IS NOT NULL", true).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read armed schedules: %w", err)
	}
	out := make([]model.Schedule, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// ScheduleKey is a place in the order of armed schedules by next fire
// time, then id: where a read of due schedules goes on.
type ScheduleKey struct {
	At time.Time
	ID int64
}

// ScheduleDue returns up to limit enabled schedules whose next fire time
// is at or before upTo, after the key after (zero: from the first), in
// that order. It reads the (enabled, next_fire_time) index, so a pass
// costs what is due, not what is defined.
func (s *Store) ScheduleDue(ctx context.Context, upTo time.Time, after ScheduleKey, limit int) ([]model.Schedule, error) {
	q := s.db.WithContext(ctx).Where("enabled = ? AND next_fire_time IS NOT NULL AND next_fire_time <= ?", true, upTo.UTC())
	if !after.At.IsZero() {
		q = q.Where("(next_fire_time > ? OR (next_fire_time = ? AND id > ?))", after.At.UTC(), after.At.UTC(), after.ID)
	}
	var rows []scheduleRow
	if err := q.Order("next_fire_time, id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read due schedules: %w", err)
	}
	out := make([]model.Schedule, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// ScheduleNextFire returns the earliest next fire time after t of the
// enabled schedules (false: none), from the index: one row, however many
// schedules exist.
func (s *Store) ScheduleNextFire(ctx context.Context, t time.Time) (time.Time, bool, error) {
	var rows []scheduleRow
	err := s.db.WithContext(ctx).Select("id, next_fire_time").Where("enabled = ? AND next_fire_time > ?", true, t.UTC()).
		Order("next_fire_time").Limit(1).Find(&rows).Error
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read the next schedule fire: %w", err)
	}
	if len(rows) == 0 || rows[0].NextFireTime == nil {
		return time.Time{}, false, nil
	}
	return rows[0].NextFireTime.UTC(), true, nil
}

// Firing is one pass of the cron scheduler over a schedule read at
// Revision: the runs to write and where the schedule goes next.
type Firing struct {
	Times []time.Time // schedule times to start, oldest first
	Next  *time.Time  // nil: the schedule has no fire time left
	Note  string      // what the pass skipped; "" keeps the last note
	// Missed are the due times the catch-up policy did not run, Refused
	// the cron times the calendar dropped: ledger rows with no run.
	Missed, Refused []time.Time
}

// ScheduleFireOne writes one run per fire time of f (instance and start
// command, with the schedule's priority, worker group and params) and moves
// the schedule to f.Next, applying the schedule's overlap policy to the
// runs it finds unfinished (skip, queue, or stop them for replace), in one
// fenced transaction that applies only if the
// schedule is still at sc.Revision and enabled. So a schedule time starts
// once however masters come and go; a lost race is ErrScheduleMoved.
func (s *Store) ScheduleFireOne(ctx context.Context, sc model.Schedule, f Firing) ([]model.WorkflowInstance, error) {
	w := s.fireWrite(sc, f)
	var out []model.WorkflowInstance
	err := s.tx(ctx, func(tx *gorm.DB) (err error) {
		if out, err = w.write(tx); err != nil {
			return err
		}
		return w.fires.write(tx)
	})
	return out, err
}

// fireWrite is the write of one schedule's firing.
func (s *Store) fireWrite(sc model.Schedule, f Firing) timedRuns {
	up := map[string]any{"next_fire_time": utc(f.Next)}
	if len(f.Times) > 0 {
		up["last_fire_time"] = f.Times[len(f.Times)-1].UTC()
	}
	if f.Note != "" {
		up["note"] = f.Note
	}
	return timedRuns{table: &scheduleRow{}, what: fmt.Sprintf("schedule %d", sc.ID), where: "enabled = ?", whereArg: true,
		id: sc.ID, rev: sc.Revision, up: up, moved: ErrScheduleMoved, times: f.Times, box: s.box,
		run: RunRequest{Project: sc.Project, Workflow: sc.Workflow, Version: sc.PinVersion, Params: sc.Params, Priority: sc.Priority,
			WorkerGroup: sc.WorkerGroup, CommandType: model.CommandScheduled, ScheduleID: sc.ID, Timezone: sc.Timezone},
		gate:  overlapGate(sc, time.Now().UTC()),
		fires: newLedger(), missed: f.Missed, refused: f.Refused,
		queueReason: fmt.Sprintf("queued: schedule %d (overlap %s) runs one at a time; waits for the previous run to end", sc.ID, sc.Overlap)}
}
