package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
)

// ScheduleFire is one schedule's firing of a FireSchedules batch.
type ScheduleFire struct {
	Schedule model.Schedule
	Firing   Firing
	// NotBefore, when set, writes the firing ahead of its time: the runs'
	// start commands are not claimed before it (the cron scheduler passes
	// the fire time, so the runs start at their second though written
	// earlier). Only for schedules whose overlap policy is allow: the
	// other policies decide on the runs unfinished at the second itself.
	NotBefore time.Time
}

// FireResult is what FireSchedules wrote for one schedule: its runs, or
// Err (wrapping ErrScheduleMoved) when the schedule changed since it was
// read, and nothing of it was written.
type FireResult struct {
	Runs []model.WorkflowInstance
	Err  error
}

// ScheduleFireBatch writes the firings of many schedules due together in one
// transaction (each as FireSchedule would): a midnight batch of a thousand
// schedules costs one commit, not a thousand, and each run is written
// exactly once since the cursor moves in the same transaction. A schedule
// that moved is skipped (its write stops before writing anything); any
// other error undoes the whole batch, which the caller retries one by one.
//
// Schedules whose overlap policy lets every run start (allow) are written
// together, a few statements for the lot (fireMany); the others one by one
// in the same transaction, their policy reading their unfinished runs.
func (s *Store) ScheduleFireBatch(ctx context.Context, fires []ScheduleFire) ([]FireResult, error) {
	for _, f := range fires {
		if o := f.Schedule.Overlap; !f.NotBefore.IsZero() && o != "" && o != model.OverlapAllow {
			return nil, fmt.Errorf("schedule %d: overlap %s decides at the fire time; it cannot be fired ahead of it", f.Schedule.ID, o)
		}
	}
	out := make([]FireResult, len(fires))
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var many []int
		fired := newLedger() // the batch's ledger rows: one multi-row INSERT at its end
		for i, f := range fires {
			if o := f.Schedule.Overlap; o == "" || o == model.OverlapAllow {
				many = append(many, i)
				continue
			}
			w := s.fireWrite(f.Schedule, f.Firing)
			w.fires = fired
			runs, err := w.write(tx)
			if errors.Is(err, ErrScheduleMoved) {
				out[i] = FireResult{Err: err}
				continue
			}
			if err != nil {
				return err
			}
			out[i] = FireResult{Runs: runs}
		}
		if err := s.fireMany(tx, fires, many, out, fired); err != nil {
			return err
		}
		return fired.write(tx)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fireChunk bounds the schedules of one UPDATE of fireMany (6 variables
// each; see insertBatch).
const fireChunk = 200

// fireMany writes the firings fires[i] for i in idx as timedRuns.write
// would, each statement for all of them: read the projects, the latest
// definitions (locked first, the order every writer keeps) and the
// schedules' revisions; move the schedules still at their revision on, one
// UPDATE; insert their runs, the runs' events and start commands, one
// multi-row INSERT each. A schedule that moved is out[i].Err, nothing of it
// written. A run whose (schedule, time) exists fails the statement: the
// caller undoes the batch and fires one by one, where that time is passed.
// The ledger rows of the times go to fired.
func (s *Store) fireMany(tx *gorm.DB, fires []ScheduleFire, idx []int, out []FireResult, fired *ledger) error {
	if len(idx) == 0 {
		return nil
	}
	moved := func(i int, format string, args ...any) {
		out[i] = FireResult{Err: fmt.Errorf("schedule %d: %s: %w", fires[i].Schedule.ID, fmt.Sprintf(format, args...), ErrScheduleMoved)}
	}
	var names []string
	for _, i := range idx {
		names = append(names, fires[i].Schedule.Project)
	}
	var projects []projectRow
	if err := tx.Where("name IN ?", uniqStrings(names)).Find(&projects).Error; err != nil {
		return fmt.Errorf("read projects: %w", err)
	}
	projectOf := map[string]projectRow{}
	var pids []int64
	for _, p := range projects {
		projectOf[p.Name] = p
		pids = append(pids, p.ID)
	}
	var wfs []string
	for _, i := range idx {
		wfs = append(wfs, fires[i].Schedule.Workflow)
	}
	var defs []workflowDefinitionRow
	if len(pids) > 0 {
		if err := lockingRead(tx).Omit("spec_json").Where("project_id IN ? AND name IN ?", pids, uniqStrings(wfs)).
			Find(&defs).Error; err != nil {
			return fmt.Errorf("read workflow definitions: %w", err)
		}
	}
	type wfKey struct {
		project int64
		name    string
	}
	type versionKey struct {
		wf      wfKey
		version int
	}
	latest := map[wfKey]workflowDefinitionRow{}
	byVersion := map[versionKey]workflowDefinitionRow{} // a pinned schedule's
	for _, d := range defs {
		k := wfKey{d.ProjectID, d.Name}
		byVersion[versionKey{k, d.Version}] = d
		if cur, ok := latest[k]; !ok || d.Version > cur.Version {
			latest[k] = d
		}
	}
	ids := make([]int64, len(idx))
	for k, i := range idx {
		ids[k] = fires[i].Schedule.ID
	}
	var cur []scheduleRow
	for chunk := range slices.Chunk(ids, maxInIDs) {
		var rows []scheduleRow
		if err := lockingRead(tx).Select("id, revision, enabled").Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return fmt.Errorf("read schedules: %w", err)
		}
		cur = append(cur, rows...)
	}
	revOf := map[int64]scheduleRow{}
	for _, r := range cur {
		revOf[r.ID] = r
	}
	type target struct {
		i   int
		p   projectRow
		def workflowDefinitionRow
	}
	var ready []target
	for _, i := range idx {
		sc := fires[i].Schedule
		p, ok := projectOf[sc.Project]
		if !ok {
			moved(i, "project %q not found", sc.Project)
			continue
		}
		def, ok := latest[wfKey{p.ID, sc.Workflow}]
		if sc.PinVersion > 0 {
			def, ok = byVersion[versionKey{wfKey{p.ID, sc.Workflow}, sc.PinVersion}]
		}
		if !ok {
			moved(i, "workflow %q in project %q not found", sc.Workflow, sc.Project)
			continue
		}
		if r, ok := revOf[sc.ID]; !ok || r.Revision != sc.Revision || !r.Enabled {
			moved(i, "at revision %d", sc.Revision)
			continue
		}
		ready = append(ready, target{i, p, def})
	}
	for chunk := range slices.Chunk(ready, fireChunk) {
		if err := advanceSchedules(tx, fires, chunk, func(t target) int { return t.i }); err != nil {
			return err
		}
	}
	now := time.Now().UTC()
	var rows []workflowInstanceRow
	var owner []int // fires index of each row
	for _, t := range ready {
		f := fires[t.i]
		req := s.fireWrite(f.Schedule, f.Firing).run
		for _, at := range f.Firing.Times {
			at := at.UTC()
			req.ScheduleTime = &at
			r, err := runRow(tx, s.box, t.p, t.def, req, now)
			if err != nil {
				return fmt.Errorf("schedule %d: run for %s: %w", f.Schedule.ID, at.Format(time.RFC3339), err)
			}
			rows, owner = append(rows, r), append(owner, t.i)
		}
	}
	for _, t := range ready {
		out[t.i] = FireResult{Runs: []model.WorkflowInstance{}}
		fired.unrun(fires[t.i].Schedule.ID, fires[t.i].Firing)
	}
	if len(rows) == 0 {
		return nil
	}
	if err := insertRows(tx, rows); err != nil {
		return fmt.Errorf("insert %d scheduled runs: %w", len(rows), err)
	}
	runIDs := make([]int64, len(rows))
	cmds := make([]commandRow, len(rows))
	for k, r := range rows {
		runIDs[k] = r.ID
		cmds[k] = commandRow{Type: r.CommandType, WorkflowInstanceID: r.ID, CreatedAt: now, NotBefore: notBefore(fires[owner[k]].NotBefore)}
		out[owner[k]].Runs = append(out[owner[k]].Runs, r.model())
		fired.add(*r.ScheduleID, *r.ScheduleTime, model.FireFired, r.ID)
	}
	if err := appendEvents(tx, instanceChanges(runIDs...)); err != nil {
		return err
	}
	if err := insertRowsBy(tx, cmds, 3*insertBatch); err != nil { // 4 columns a row
		return fmt.Errorf("insert %d start commands: %w", len(cmds), err)
	}
	return nil
}

// advanceSchedules moves the schedules of chunk on as fireWrite's update
// would (next and last fire time, note, revision), in one UPDATE; their
// revisions were read in this transaction (locked on MySQL; SQLite's
// transaction holds the only write lock).
func advanceSchedules[T any](tx *gorm.DB, fires []ScheduleFire, chunk []T, index func(T) int) error {
	var next, last, note strings.Builder
	var nextArgs, lastArgs, noteArgs, ids []any
	for _, c := range chunk {
		f := fires[index(c)]
		id := f.Schedule.ID
		ids = append(ids, id)
		next.WriteString(" WHEN ? THEN ?")
		nextArgs = append(nextArgs, id, utc(f.Firing.Next))
		if n := len(f.Firing.Times); n > 0 {
			last.WriteString(" WHEN ? THEN ?")
			lastArgs = append(lastArgs, id, f.Firing.Times[n-1].UTC())
		}
		if f.Firing.Note != "" {
			note.WriteString(" WHEN ? THEN ?")
			noteArgs = append(noteArgs, id, f.Firing.Note)
		}
	}
	// ELSE: never taken, but it types the CASE (PostgreSQL reads parameters
	// alone as text).
	set := "next_fire_time = CASE id" + next.String() + " ELSE next_fire_time END"
	args := nextArgs
	if last.Len() > 0 {
		set += ", last_fire_time = CASE id" + last.String() + " ELSE last_fire_time END"
		args = append(args, lastArgs...)
	}
	if note.Len() > 0 {
		set += ", note = CASE id" + note.String() + " ELSE note END"
		args = append(args, noteArgs...)
	}
	args = append(args, ids)
	res := tx.Exec(`UPDATE schedule SET `+set+`, revision = revision + 1 WHERE id IN ?`, args...)
	if res.Error != nil {
		return fmt.Errorf("advance %d schedules: %w", len(chunk), res.Error)
	}
	if res.RowsAffected != int64(len(chunk)) {
		// Cannot happen with the rows locked; undo rather than guess.
		return fmt.Errorf("advance %d schedules: %d rows moved", len(chunk), res.RowsAffected)
	}
	return nil
}

// notBefore is the command's not_before column of a fire written ahead
// (nil: claimable at once).
func notBefore(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// insertRowsBy is insertRows in statements of n rows.
func insertRowsBy[T any](tx *gorm.DB, rows []T, n int) error {
	if m := orFail(tx); m != "" {
		tx = tx.Clauses(clause.Insert{Modifier: strings.TrimSpace(m)})
	}
	return tx.CreateInBatches(rows, n).Error
}

func uniqStrings(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}
