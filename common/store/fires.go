package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// ErrNotMissed means a compensation named a due time that has no missed
// fire in the ledger (none, or one already run); nothing was written.
var ErrNotMissed = errors.New("not a missed fire")

// MaxCompensate bounds the fires one compensation runs (and its preview
// lists): the missed rows kept per schedule and pass are bounded the same
// way (schedule.MaxMissed).
const MaxCompensate = 1000

// fireRow is one row of the ledger of fires (schedule_fire).
type fireRow struct {
	ID                 int64
	ScheduleID         int64
	DueTime            time.Time
	Outcome            string
	WorkflowInstanceID *int64
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

func (fireRow) TableName() string { return "schedule_fire" }

func (r fireRow) model() model.ScheduleFire {
	return model.ScheduleFire{ScheduleID: r.ScheduleID, DueTime: r.DueTime.UTC(), Outcome: model.FireOutcome(r.Outcome),
		InstanceID: r.WorkflowInstanceID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// ledger gathers the ledger rows of a fire transaction, written together
// at its end (one multi-row INSERT a batch, not a round trip a fire).
type ledger struct {
	rows []fireRow
	now  time.Time
}

func newLedger() *ledger { return &ledger{now: time.Now().UTC()} }

// add records the outcome of due time t of schedule id (run: the run it
// made, 0 none).
func (l *ledger) add(id int64, t time.Time, o model.FireOutcome, run int64) {
	r := fireRow{ScheduleID: id, DueTime: t.UTC(), Outcome: string(o), CreatedAt: l.now, UpdatedAt: l.now}
	if run != 0 {
		r.WorkflowInstanceID = &run
	}
	l.rows = append(l.rows, r)
}

// unrun records the times of f that made no run: missed by the catch-up
// policy, refused by the calendar.
func (l *ledger) unrun(id int64, f Firing) {
	for _, t := range f.Missed {
		l.add(id, t, model.FireMissed, 0)
	}
	for _, t := range f.Refused {
		l.add(id, t, model.FireRefused, 0)
	}
}

// write inserts the rows gathered, a multi-row INSERT of ledgerChunk rows
// at a time, sent as SQL rather than through gorm's Create (no RETURNING
// of ids nobody reads, no reflection per row: it is on the fire path). A
// (schedule, time) that has its row already keeps it: a time is decided
// once, whoever asks again (a new leader replaying a pass), so the
// conflict is no error.
func (l *ledger) write(tx *gorm.DB) error {
	ignore := " ON CONFLICT (schedule_id, due_time) DO NOTHING"
	if dialectOf(tx).name == "mysql" {
		ignore = " ON DUPLICATE KEY UPDATE id = id"
	}
	for chunk := range slices.Chunk(l.rows, ledgerChunk) {
		var b strings.Builder
		b.WriteString("INSERT INTO schedule_fire (schedule_id, due_time, outcome, workflow_instance_id, created_at, updated_at) VALUES ")
		args := make([]any, 0, 6*len(chunk))
		for i, r := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?)")
			args = append(args, r.ScheduleID, r.DueTime, r.Outcome, r.WorkflowInstanceID, r.CreatedAt, r.UpdatedAt)
		}
		b.WriteString(ignore)
		if err := tx.Exec(b.String(), args...).Error; err != nil {
			return fmt.Errorf("write %d fires to the ledger: %w", len(chunk), err)
		}
	}
	l.rows = l.rows[:0]
	return nil
}

// ledgerChunk bounds the rows of one ledger INSERT (6 variables each; the
// pure-Go SQLite driver's bind cost grows with a statement's variables,
// see insertBatch).
const ledgerChunk = 100

// FireFilter selects a schedule's ledger rows: due times in [From, To]
// (nil: open), of one outcome ("" every one), after the due time After
// (zero: from the first), Limit of them, oldest first (Desc: newest
// first, After the cursor from the other end).
type FireFilter struct {
	From, To *time.Time
	Outcome  model.FireOutcome
	After    time.Time
	Limit    int
	Desc     bool
}

// scheduleIn reads schedule id of project (ErrNotFound when it is not
// there, or is another project's).
func scheduleIn(tx *gorm.DB, project string, id int64) (scheduleRow, error) {
	var r scheduleRow
	if err := tx.Where("id = ? AND project_name = ?", id, project).Take(&r).Error; err != nil {
		return r, notFound(err, fmt.Sprintf("schedule %d in project %q", id, project))
	}
	return r, nil
}

// ScheduleFires returns a page of the ledger of schedule id of project,
// by due time, and whether more follow. It walks the (schedule, due time)
// index from the cursor on: a page costs the same however long the ledger.
func (s *Store) ScheduleFires(ctx context.Context, project string, id int64, f FireFilter) ([]model.ScheduleFire, bool, error) {
	db := s.db.WithContext(ctx)
	if _, err := scheduleIn(db, project, id); err != nil {
		return nil, false, err
	}
	q := db.Where("schedule_id = ?", id)
	if f.From != nil {
		q = q.Where("due_time >= ?", f.From.UTC())
	}
	if f.To != nil {
		q = q.Where("due_time <= ?", f.To.UTC())
	}
	order := "due_time"
	switch {
	case f.Desc && !f.After.IsZero():
		q = q.Where("due_time < ?", f.After.UTC())
	case !f.After.IsZero():
		q = q.Where("due_time > ?", f.After.UTC())
	}
	if f.Desc {
		order = "due_time DESC"
	}
	if f.Outcome != "" {
		q = q.Where("outcome = ?", string(f.Outcome))
	}
	var rows []fireRow
	if err := q.Order(order).Limit(f.Limit + 1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("read the fires of schedule %d: %w", id, err)
	}
	more := len(rows) > f.Limit
	if more {
		rows = rows[:f.Limit]
	}
	out := make([]model.ScheduleFire, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, more, nil
}

// Compensation is one missed fire a compensation runs: its due time and
// the run it made (0 in a preview).
type Compensation struct {
	DueTime    time.Time `json:"due_time"`
	InstanceID int64     `json:"workflow_instance_id,omitempty"`
}

// CompensateRequest names the missed fires to run: Times, or every missed
// one (AllMissed, the oldest MaxCompensate); DryRun only says which.
type CompensateRequest struct {
	Times     []time.Time
	AllMissed bool
	DryRun    bool
}

// ScheduleCompensate runs the missed fires of schedule id of project that
// req names, each as the schedule would have fired it (its params,
// priority, worker group and schedule time), and turns their ledger rows
// compensated with the run, in one transaction. Each missed time runs
// once: the row turns only from missed (a second compensation finds it
// compensated and makes nothing), and a run of a (schedule, time) is
// unique. A named time that is not a missed fire is ErrNotMissed and
// nothing is written. A dry run answers the same list with no run made.
func (s *Store) ScheduleCompensate(ctx context.Context, project string, id int64, req CompensateRequest) ([]Compensation, error) {
	var out []Compensation
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		out = nil
		sr, err := scheduleIn(lockingRead(tx), project, id)
		if err != nil {
			return err
		}
		var rows []fireRow
		q := tx.Where("schedule_id = ? AND outcome = ?", id, string(model.FireMissed))
		if !req.AllMissed {
			times := make([]time.Time, len(req.Times))
			for i, t := range req.Times {
				times[i] = t.UTC()
			}
			q = q.Where("due_time IN ?", times)
		}
		if err := q.Order("due_time").Limit(MaxCompensate).Find(&rows).Error; err != nil {
			return fmt.Errorf("read the missed fires of schedule %d: %w", id, err)
		}
		if !req.AllMissed {
			if bad := notIn(req.Times, rows); len(bad) > 0 {
				return fmt.Errorf("schedule %d has no missed fire at %s (list them: GET fires?outcome=missed): %w",
					id, strings.Join(bad, ", "), ErrNotMissed)
			}
		}
		for _, r := range rows {
			out = append(out, Compensation{DueTime: r.DueTime.UTC()})
		}
		if req.DryRun || len(rows) == 0 {
			return nil
		}
		sc := sr.model()
		base := RunRequest{Project: sc.Project, Workflow: sc.Workflow, Params: sc.Params, Priority: sc.Priority,
			WorkerGroup: sc.WorkerGroup, CommandType: model.CommandScheduled, ScheduleID: sc.ID, Timezone: sc.Timezone}
		p, def, err := runTarget(tx, base)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		for i, r := range rows {
			// The row first, conditional on missed: a compensation racing
			// this one waits on it and then finds nothing to do.
			res := tx.Model(&fireRow{}).Where("id = ? AND outcome = ?", r.ID, string(model.FireMissed)).
				UpdateColumns(map[string]any{"outcome": string(model.FireCompensated), "updated_at": now})
			if res.Error != nil {
				return fmt.Errorf("compensate the fire of schedule %d at %s: %w", id, r.DueTime.UTC().Format(time.RFC3339), res.Error)
			}
			if res.RowsAffected == 0 {
				continue
			}
			at := r.DueTime.UTC()
			run := base
			run.ScheduleTime = &at
			inst, err := insertRun(tx, s.box, p, def, run, now)
			if err != nil {
				return fmt.Errorf("schedule %d: run for %s: %w", id, at.Format(time.RFC3339), err)
			}
			if err := tx.Model(&fireRow{}).Where("id = ?", r.ID).UpdateColumn("workflow_instance_id", inst.ID).Error; err != nil {
				return fmt.Errorf("record the run of the fire of schedule %d at %s: %w", id, at.Format(time.RFC3339), err)
			}
			out[i].InstanceID = inst.ID
		}
		out = slices.DeleteFunc(out, func(c Compensation) bool { return c.InstanceID == 0 })
		return nil
	})
	return out, err
}

// notIn lists (RFC 3339) the times of ts that no row of rows is due at.
func notIn(ts []time.Time, rows []fireRow) []string {
	var bad []string
	for _, t := range ts {
		if !slices.ContainsFunc(rows, func(r fireRow) bool { return r.DueTime.Equal(t) }) {
			bad = append(bad, t.UTC().Format(time.RFC3339Nano))
		}
	}
	return bad
}
