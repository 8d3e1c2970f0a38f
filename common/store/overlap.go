package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// A schedule's overlap policy is applied in its fire transaction, so it
// holds across leader changes: the transaction reads the schedule's
// unfinished runs (locking them) and decides each due time. Queued runs
// (overlap wait and replace, and runs over their workflow's
// max_active_runs) are instances in state submitted with queued set and no
// start command; InstanceReleaseQueued, called by the active master whenever a run
// may have ended, starts those that have room, oldest first.

// fireAction is what a fire does with one due time.
type fireAction int

const (
	fireRun   fireAction = iota // write the run and its start command
	fireQueue                   // write the run queued: it starts when the schedule has room
	fireSkip                    // write nothing; count the time as skipped
)

// overlapPlan decides the n due times of one fire (oldest first) of a
// schedule under policy o; busy says a run of the schedule is unfinished.
// Each time after the first overlaps the one before it. Under replace only
// the newest time runs: the older ones would be stopped before they began.
func overlapPlan(o model.Overlap, busy bool, n int) []fireAction {
	out := make([]fireAction, n)
	for i := range out {
		switch o {
		case model.OverlapSkip:
			if busy || i > 0 {
				out[i] = fireSkip
			}
		case model.OverlapWait:
			if busy || i > 0 {
				out[i] = fireQueue
			}
		case model.OverlapReplace:
			switch {
			case i < n-1:
				out[i] = fireSkip
			case busy:
				out[i] = fireQueue
			}
		}
	}
	return out
}

// unfinishedStates are the states of a run that counts against overlap.
func unfinishedStates() []string {
	return []string{string(model.WorkflowSubmitted), string(model.WorkflowRunning),
		string(model.WorkflowReadyPause), string(model.WorkflowReadyStop)}
}

// activeStates are the states of a started run: what max_active_runs counts.
func activeStates() []string {
	return []string{string(model.WorkflowRunning), string(model.WorkflowReadyPause), string(model.WorkflowReadyStop)}
}

// overlapGate returns the timedRuns gate of a fire of sc: it applies the
// overlap policy in the fire transaction, stops what replace replaces
// (saying so: the run that follows is a replacement) and records skipped
// times on the schedule row.
func overlapGate(sc model.Schedule, now time.Time) func(tx *gorm.DB, times []time.Time) ([]fireAction, bool, error) {
	return func(tx *gorm.DB, times []time.Time) ([]fireAction, bool, error) {
		o := sc.Overlap
		if o == "" || o == model.OverlapAllow || len(times) == 0 {
			return make([]fireAction, len(times)), false, nil
		}
		var busy []workflowInstanceRow
		if err := lockingRead(tx).Select("id, state").Where("schedule_id = ? AND state IN ?", sc.ID, unfinishedStates()).
			Order("id").Find(&busy).Error; err != nil {
			return nil, false, fmt.Errorf("read unfinished runs of schedule %d: %w", sc.ID, err)
		}
		held := len(busy) > 0
		if o == model.OverlapReplace && len(busy) > 0 {
			if err := stopForReplace(tx, sc, busy, now); err != nil {
				return nil, false, err
			}
			// The runs that never started ended here: only a started
			// one, still stopping, holds the new run back.
			held = slices.ContainsFunc(busy, func(b workflowInstanceRow) bool { return b.State != string(model.WorkflowSubmitted) })
		}
		plan := overlapPlan(o, held, len(times))
		ids := make([]string, len(busy))
		for i, b := range busy {
			ids[i] = fmt.Sprint(b.ID)
		}
		var skipped []time.Time
		for i, a := range plan {
			if a == fireSkip {
				skipped = append(skipped, times[i])
			}
		}
		replaced := o == model.OverlapReplace && len(busy) > 0
		if len(skipped) == 0 {
			return plan, replaced, nil
		}
		last := skipped[len(skipped)-1].UTC()
		why := "run(s) " + strings.Join(ids, ", ") + " unfinished"
		if len(busy) == 0 {
			why = "it overlaps the next time of the same fire"
		}
		note := fmt.Sprintf("%s: skipped %d fire(s), the last for %s (overlap %s: %s)", now.Format(time.RFC3339),
			len(skipped), last.Format(time.RFC3339), o, why)
		if err := tx.Model(&scheduleRow{}).Where("id = ?", sc.ID).UpdateColumns(map[string]any{
			"skipped_fires": gorm.Expr("skipped_fires + ?", len(skipped)), "last_skipped_time": last,
			"note": clip(note, 1024)}).Error; err != nil {
			return nil, false, fmt.Errorf("record skipped fires of schedule %d: %w", sc.ID, err)
		}
		return plan, replaced, nil
	}
}

// stopForReplace stops the unfinished runs of sc. A started run is
// stopped as an operator's stop would: it moves to ready_stop with a stop
// command for the master whose runner holds it, and a history line. A run
// that never started (queued, or its start command not yet claimed) has
// no runner anywhere: it ends stopped here, in the fire's transaction, so
// that no master has to act on it (a stop command for it was lost when the
// master that claimed it failed to end it, leaving it ready_stop and the
// schedule's next run queued behind it for good).
func stopForReplace(tx *gorm.DB, sc model.Schedule, busy []workflowInstanceRow, now time.Time) error {
	by := fmt.Sprintf("schedule %d", sc.ID)
	for _, b := range busy {
		if b.State == string(model.WorkflowReadyStop) {
			continue // already stopping
		}
		if b.State == string(model.WorkflowSubmitted) {
			if err := stopUnstarted(tx, b.ID, by, now); err != nil {
				return fmt.Errorf("stop run %d of schedule %d: %w", b.ID, sc.ID, err)
			}
			continue
		}
		res := tx.Model(&workflowInstanceRow{}).Where("id = ? AND state = ?", b.ID, b.State).
			UpdateColumns(map[string]any{"state": string(model.WorkflowReadyStop), "queued": false})
		if res.Error != nil {
			return fmt.Errorf("stop run %d of schedule %d: %w", b.ID, sc.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			continue
		}
		if err := appendEvents(tx, instanceChanges(b.ID)); err != nil {
			return err
		}
		cmd := actionCommandRow{Type: commandTypeAction, WorkflowInstanceID: b.ID, Action: string(model.ActionStop), RequestedBy: by, CreatedAt: now}
		if err := tx.Create(&cmd).Error; err != nil {
			return fmt.Errorf("insert stop command: %w", err)
		}
		h := historyRow{WorkflowInstanceID: b.ID, Action: string(model.ActionStop), RequestedBy: by, At: now,
			Detail: "requested: a newer fire replaces it (overlap replace); instance " + b.State + " -> ready_stop"}
		if err := tx.Create(&h).Error; err != nil {
			return fmt.Errorf("insert history: %w", err)
		}
	}
	return nil
}

// stopUnstarted ends a run that never started (submitted: queued, or its
// start command not claimed) as stopped, drops its start command and
// records why.
func stopUnstarted(tx *gorm.DB, id int64, by string, now time.Time) error {
	const why = "stopped before it started: a newer fire replaces it (overlap replace)"
	res := tx.Model(&workflowInstanceRow{}).Where("id = ? AND state = ?", id, model.WorkflowSubmitted).
		UpdateColumns(map[string]any{"state": string(model.WorkflowStopped), "queued": false, "end_time": now.UTC(), "reason": why})
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	if err := tx.Where("workflow_instance_id = ? AND type <> ?", id, commandTypeAction).Delete(&commandRow{}).Error; err != nil {
		return fmt.Errorf("drop start command: %w", err)
	}
	if err := appendEvents(tx, instanceChanges(id)); err != nil {
		return err
	}
	h := historyRow{WorkflowInstanceID: id, Action: string(model.ActionStop), RequestedBy: by, At: now, Detail: why}
	if err := tx.Create(&h).Error; err != nil {
		return fmt.Errorf("insert history: %w", err)
	}
	return nil
}

// wfKey names a workflow by its project id and name.
type wfKey struct {
	project int64
	name    string
}

// queuedRun is a queued instance as release sees it.
type queuedRun struct {
	id       int64
	schedule int64 // 0: not a schedule's
	wf       wfKey
}

// room is what release reads: which serial schedules have a run that is
// not queued and unfinished, the started runs of each workflow and each
// workflow's max_active_runs (0: none).
type room struct {
	serial map[int64]bool // schedules under overlap wait or replace
	busy   map[int64]bool
	active map[wfKey]int
	limit  map[wfKey]int
}

// releasable picks the queued runs (oldest first) that may start now: a
// serial schedule runs one at a time in order, and a workflow keeps within
// its max_active_runs. It updates r as it goes.
func releasable(q []queuedRun, r room) []int64 {
	var out []int64
	for _, run := range q {
		serial := run.schedule != 0 && r.serial[run.schedule]
		if serial && r.busy[run.schedule] {
			continue
		}
		if n := r.limit[run.wf]; n > 0 && r.active[run.wf] >= n {
			if serial {
				r.busy[run.schedule] = true // a later time of the schedule waits behind this one
			}
			continue
		}
		out = append(out, run.id)
		r.active[run.wf]++
		if serial {
			r.busy[run.schedule] = true
		}
	}
	return out
}

// maxReleaseScan bounds the queued runs one release looks at.
const maxReleaseScan = 1000

// InstanceReleaseQueued starts the queued runs that have room, oldest first, in
// one fenced transaction: each moves to running, owned by host at this
// view's epoch, like a claimed command, up to most of them (the leader's
// admission room; 0 releases none). It returns them for the master to run.
func (s *Store) InstanceReleaseQueued(ctx context.Context, host string, most int) ([]model.WorkflowInstance, error) {
	if most <= 0 {
		return nil, nil
	}
	// Most looks find nothing queued: a read says so without a write
	// transaction (the consumer looks after every run's end). A run
	// queued after this read wakes the consumer again.
	var queued []int64
	if err := s.db.WithContext(ctx).Model(&workflowInstanceRow{}).Where("queued = ? AND state = ?", true, model.WorkflowSubmitted).
		Limit(1).Pluck("id", &queued).Error; err != nil {
		return nil, fmt.Errorf("read queued runs: %w", err)
	}
	if len(queued) == 0 {
		return nil, s.checkTerm(s.db.WithContext(ctx)) // a fenced term still hears it
	}
	var out []model.WorkflowInstance
	err := s.tx(ctx, func(tx *gorm.DB) error {
		out = nil
		var rows []workflowInstanceRow
		if err := tx.Where("queued = ? AND state = ?", true, model.WorkflowSubmitted).Order("id").Limit(maxReleaseScan).
			Find(&rows).Error; err != nil {
			return fmt.Errorf("read queued runs: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		r := room{serial: map[int64]bool{}, busy: map[int64]bool{}, active: map[wfKey]int{}, limit: map[wfKey]int{}}
		q := make([]queuedRun, len(rows))
		var scheds []int64
		for i, row := range rows {
			q[i] = queuedRun{id: row.ID, schedule: deref(row.ScheduleID), wf: wfKey{row.ProjectID, row.WorkflowName}}
			if q[i].schedule != 0 {
				scheds = append(scheds, q[i].schedule)
			}
			if _, seen := r.limit[q[i].wf]; !seen {
				n, err := workflowLimit(tx, q[i].wf)
				if err != nil {
					return err
				}
				r.limit[q[i].wf] = n
				if n > 0 {
					if r.active[q[i].wf], err = activeRuns(tx, q[i].wf); err != nil {
						return err
					}
				}
			}
		}
		if len(scheds) > 0 {
			var ss []scheduleRow
			if err := tx.Select("id, overlap").Where("id IN ? AND overlap IN ?", scheds,
				[]string{string(model.OverlapWait), string(model.OverlapReplace)}).Find(&ss).Error; err != nil {
				return fmt.Errorf("read overlap of schedules: %w", err)
			}
			var serial []int64
			for _, sc := range ss {
				r.serial[sc.ID] = true
				serial = append(serial, sc.ID)
			}
			if len(serial) > 0 {
				var busy []int64
				if err := tx.Model(&workflowInstanceRow{}).Distinct("schedule_id").
					Where("schedule_id IN ? AND state IN ? AND queued = ?", serial, unfinishedStates(), false).
					Pluck("schedule_id", &busy).Error; err != nil {
					return fmt.Errorf("read unfinished runs of schedules: %w", err)
				}
				for _, id := range busy {
					r.busy[id] = true
				}
			}
		}
		now := time.Now().UTC()
		ids := releasable(q, r)
		ids = ids[:min(len(ids), most)]
		for _, id := range ids {
			up := tx.Model(&workflowInstanceRow{}).Where("id = ? AND queued = ? AND state = ?", id, true, model.WorkflowSubmitted).
				Updates(map[string]any{"state": string(model.WorkflowRunning), "queued": false, "reason": "",
					"host": host, "epoch": s.epoch, "start_time": now})
			if up.Error != nil {
				return fmt.Errorf("release run %d: %w", id, up.Error)
			}
			if up.RowsAffected == 0 {
				continue
			}
			var inst workflowInstanceRow
			if err := tx.Take(&inst, id).Error; err != nil {
				return fmt.Errorf("read run %d: %w", id, err)
			}
			out = append(out, inst.model())
		}
		return appendEvents(tx, instanceChanges(instanceIDs(out)...))
	})
	return out, err
}

// workflowLimit is the max_active_runs of a workflow's latest version (0: none).
func workflowLimit(tx *gorm.DB, wf wfKey) (int, error) {
	var n []int
	if err := tx.Model(&workflowDefinitionRow{}).Where("project_id = ? AND name = ?", wf.project, wf.name).
		Order("version DESC").Limit(1).Pluck("max_active_runs", &n).Error; err != nil {
		return 0, fmt.Errorf("read max_active_runs of %q: %w", wf.name, err)
	}
	if len(n) == 0 {
		return 0, nil
	}
	return n[0], nil
}

// activeRuns counts the started, unfinished runs of a workflow.
func activeRuns(tx *gorm.DB, wf wfKey) (int, error) {
	var n int64
	if err := tx.Model(&workflowInstanceRow{}).Where("project_id = ? AND workflow_name = ? AND state IN ?",
		wf.project, wf.name, activeStates()).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count active runs of %q: %w", wf.name, err)
	}
	return int(n), nil
}

// holdForLimit reports whether a run of wf about to start must queue
// instead: its workflow is at max_active_runs, or runs queued before it
// wait (they go first). The reason says which.
func holdForLimit(tx *gorm.DB, wf wfKey) (bool, string, error) {
	n, err := workflowLimit(tx, wf)
	if err != nil || n == 0 {
		return false, "", err
	}
	active, err := activeRuns(tx, wf)
	if err != nil {
		return false, "", err
	}
	var queued int64
	if err := tx.Model(&workflowInstanceRow{}).Where("project_id = ? AND workflow_name = ? AND queued = ? AND state = ?",
		wf.project, wf.name, true, model.WorkflowSubmitted).Count(&queued).Error; err != nil {
		return false, "", fmt.Errorf("count queued runs of %q: %w", wf.name, err)
	}
	if active < n && queued == 0 {
		return false, "", nil
	}
	return true, fmt.Sprintf("queued: workflow %s has %d of max_active_runs %d running, %d queued before", wf.name, active, n, queued), nil
}
