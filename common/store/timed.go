package store

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
)

// timedRuns is what schedules and backfills write in one transaction: move
// their row on from the revision it was read at, then one run per time.
type timedRuns struct {
	table    any    // row type: &scheduleRow{} or &backfillRow{}
	what     string // "schedule 3", for errors
	where    string // extra condition on the row ("enabled = ?")
	whereArg any
	id, rev  int64
	up       map[string]any // columns to set; the revision is added
	moved    error          // ErrScheduleMoved or ErrBackfillMoved
	run      RunRequest     // every field but ScheduleTime
	box      *secret.Box    // seals the runs' secret params
	times    []time.Time
	// gate decides each time in the transaction, after the row moved on
	// (a schedule's overlap policy); nil runs them all.
	// It also says whether it stopped unfinished runs (replace).
	gate func(tx *gorm.DB, times []time.Time) ([]fireAction, bool, error)
	// queueReason is the reason of a time the gate queues.
	queueReason string
	// fires, for a schedule, gathers the ledger row of each time (the
	// caller writes them in the same transaction), and of the missed and
	// refused times; nil for a backfill.
	fires           *ledger
	missed, refused []time.Time
}

// write applies w in tx. A row no longer at its revision is w.moved with
// nothing written. A time that already has its run (the unique index) is
// left as it is, so the row still moves past it: whatever let it be asked
// for again, it runs once and the cursor cannot get stuck on it.
func (w timedRuns) write(tx *gorm.DB) ([]model.WorkflowInstance, error) {
	// The workflow's definitions are locked before the row, the order every
	// writer keeps (see DeleteWorkflow); all the times run that version.
	p, def, err := runTarget(tx, w.run)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%s: %v: %w", w.what, err, w.moved)
	} else if err != nil {
		return nil, err
	}
	w.up["revision"] = w.rev + 1
	// UpdateColumns: moving a cursor is not an edit, updated_at stays.
	res := tx.Model(w.table).Where("id = ? AND revision = ? AND "+w.where, w.id, w.rev, w.whereArg).UpdateColumns(w.up)
	if res.Error != nil {
		return nil, fmt.Errorf("advance %s: %w", w.what, res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("%s at revision %d: %w", w.what, w.rev, w.moved)
	}
	plan := make([]fireAction, len(w.times))
	replaced := false
	if w.gate != nil {
		if plan, replaced, err = w.gate(tx, w.times); err != nil {
			return nil, err
		}
	}
	if w.fires != nil {
		w.fires.unrun(w.id, Firing{Missed: w.missed, Refused: w.refused})
	}
	now := time.Now().UTC()
	out := make([]model.WorkflowInstance, 0, len(w.times))
	for i, t := range w.times {
		if plan[i] == fireSkip {
			if w.fires != nil {
				w.fires.add(w.id, t, model.FireSkippedOverlap, 0)
			}
			continue
		}
		at := t.UTC()
		req := w.run
		req.ScheduleTime = &at
		if plan[i] == fireQueue {
			req.Queued, req.QueueReason = true, w.queueReason
		}
		var inst model.WorkflowInstance
		err := mayFail(tx, func(tx *gorm.DB) (err error) {
			inst, err = insertRun(tx, w.box, p, def, req, now)
			return err
		})
		if isUniqueViolation(err) {
			// The failed statement is undone (or its savepoint): nothing of
			// this time was written (the instance insert comes first), the
			// transaction goes on.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: run for %s: %w", w.what, at.Format(time.RFC3339), err)
		}
		out = append(out, inst)
		if w.fires != nil {
			w.fires.add(w.id, t, fireOutcome(plan[i], replaced), inst.ID)
		}
	}
	return out, nil
}

// fireOutcome is the ledger outcome of a time that made a run: queued
// behind unfinished runs, or after stopping them (replaced), else fired.
func fireOutcome(a fireAction, replaced bool) model.FireOutcome {
	switch {
	case replaced:
		return model.FireReplaced
	case a == fireQueue:
		return model.FireQueued
	}
	return model.FireFired
}
