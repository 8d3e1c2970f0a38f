package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TaskInsert writes new task instances in one transaction and sets
// their IDs.
func (s *Store) TaskInsert(ctx context.Context, tasks []*model.TaskInstance) error {
	if len(tasks) == 0 {
		return nil
	}
	rows := make([]taskInstanceRow, len(tasks))
	for i, t := range tasks {
		rows[i] = taskRowFrom(t)
	}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := insertRows(tx, rows); err != nil {
			return err
		}
		return appendEvents(tx, taskChanges(taskRowIDs(rows)...))
	})
	if err != nil {
		return fmt.Errorf("insert %d task instances: %w", len(tasks), err)
	}
	for i := range tasks {
		tasks[i].ID = rows[i].ID
	}
	return nil
}

// insertRows writes new rows in multi-row INSERTs of insertBatch rows (OR FAIL on SQLite, see
// orFail) and sets their IDs.
func insertRows[T any](tx *gorm.DB, rows []T) error {
	return insertRowsBy(tx, rows, insertBatch)
}

// insertBatch is the rows of one multi-row INSERT: the pure-Go SQLite
// driver binds each variable by a search of all of a statement's
// variables, so 200 rows of ~25 columns spent ~35 % of a 100,000-task
// insert in that search; 50 rows cost a quarter per row, for 4 statements.
const insertBatch = 50

// TaskMarkDispatched records the chosen worker of submitted task instances in one
// transaction, before anything is sent. ok[i] is false when row i was no
// longer submitted (it must not be sent). From prepareFrom rows on, two
// statements for the batch however many rows (plus one per further worker
// or time): the submitted rows are read first (locked on MySQL; SQLite's
// transaction holds the only write lock), then each worker's rows are
// updated together.
func (s *Store) TaskMarkDispatched(ctx context.Context, ds []model.Dispatch) (ok []bool, err error) {
	ok = make([]bool, len(ds))
	if len(ds) == 0 {
		return ok, nil
	}
	err = s.foldedTx(ctx, func(tx *gorm.DB, f *fold) error {
		if len(ds) < prepareFrom {
			// A few rows: one update each costs fewer statements.
			for i, d := range ds {
				q, args := f.add(`UPDATE task_instance SET state = ?, host = ?, dispatch_time = ? WHERE id = ? AND state = ?`,
					[]any{string(model.TaskDispatched), d.Host, d.Time.UTC(), d.ID, string(model.TaskSubmitted)})
				res := tx.Exec(q, args...)
				if res.Error != nil {
					return fmt.Errorf("mark task %d dispatched: %w", d.ID, res.Error)
				}
				if err := f.settle(tx, res.RowsAffected); err != nil {
					return err
				}
				ok[i] = res.RowsAffected == 1
			}
			return appendEvents(tx, taskChanges(dispatchedIDs(ds, ok)...))
		}
		ids := make([]int64, len(ds))
		for i, d := range ds {
			ids[i] = d.ID
		}
		q := `SELECT id FROM task_instance WHERE id IN ? AND state = ?`
		if !s.d.serialWrites {
			q += ` FOR UPDATE`
		}
		q, args := f.add(q, []any{ids, string(model.TaskSubmitted)})
		var sub []int64
		if err := tx.Raw(q, args...).Scan(&sub).Error; err != nil {
			return fmt.Errorf("read %d tasks to dispatch: %w", len(ds), err)
		}
		if err := f.settle(tx, int64(len(sub))); err != nil {
			return err
		}
		for _, g := range dispatchGroups(ds, sub, ok) {
			res := tx.Exec(`UPDATE`+orFail(tx)+` task_instance SET state = ?, host = ?, dispatch_time = ? WHERE id IN ? AND state = ?`,
				string(model.TaskDispatched), g.host, g.at, g.ids, string(model.TaskSubmitted))
			if res.Error != nil {
				return fmt.Errorf("mark %d tasks dispatched to %s: %w", len(g.ids), g.host, res.Error)
			}
			if res.RowsAffected != int64(len(g.ids)) { // the rows are locked: cannot happen
				return fmt.Errorf("mark %d tasks dispatched to %s: %d changed", len(g.ids), g.host, res.RowsAffected)
			}
		}
		return appendEvents(tx, taskChanges(dispatchedIDs(ds, ok)...))
	})
	if err != nil {
		clear(ok)
	}
	return ok, err
}

// dispatchGroup is the rows of a batch dispatched to one host at one time.
type dispatchGroup struct {
	host string
	at   time.Time
	ids  []int64
}

// dispatchGroups sets ok[i] for the dispatches whose row is still submitted
// and groups those by host and time, in first-seen order.
func dispatchGroups(ds []model.Dispatch, submitted []int64, ok []bool) []dispatchGroup {
	open := make(map[int64]bool, len(submitted))
	for _, id := range submitted {
		open[id] = true
	}
	var gs []dispatchGroup
	at := map[string]int{}
	for i, d := range ds {
		if !open[d.ID] {
			continue
		}
		open[d.ID] = false // a repeat in the batch is dispatched once
		ok[i] = true
		t := d.Time.UTC()
		key := d.Host + "\x00" + t.Format(time.RFC3339Nano)
		j, seen := at[key]
		if !seen {
			j = len(gs)
			at[key] = j
			gs = append(gs, dispatchGroup{host: d.Host, at: t})
		}
		gs[j].ids = append(gs[j].ids, d.ID)
	}
	return gs
}

// TaskApplyReports persists worker reports in one transaction, in order. Each
// update only moves a task forward from the states it may come from, so a
// re-sent report is harmless. A running report followed by the result of the
// same task in one batch (a short task) is written as one update.
func (s *Store) TaskApplyReports(ctx context.Context, rs []model.Report) (out []model.ReportOutcome, err error) {
	out = make([]model.ReportOutcome, len(rs))
	merged := mergeRunning(rs)
	err = s.foldedTx(ctx, func(tx *gorm.DB, f *fold) error {
		b := newBatch(ctx, tx, len(rs))
		defer b.close()
		exec := func(q string, args ...any) (int64, error) {
			q, args = f.add(q, args)
			n, err := b.exec(q, args...)
			if err == nil {
				err = f.settle(tx, n)
			}
			return n, err
		}
		var succeeded []int64
		var produced map[int64]string // task -> its produces output
		for i, r := range rs {
			if _, ok := merged[i]; ok {
				continue // written with its result, outcome copied below
			}
			var n int64
			var err error
			submitted, dispatched, running := string(model.TaskSubmitted), string(model.TaskDispatched), string(model.TaskRunning)
			switch r.Kind {
			case model.ReportAck:
				n, err = exec(`UPDATE task_instance SET state = ?, log_path = ? WHERE id = ? AND host = ? AND state IN (?, ?)`,
					dispatched, r.LogPath, r.ID, r.Host, submitted, dispatched)
			case model.ReportRunning:
				n, err = exec(`UPDATE task_instance SET state = ?, pid = ?, start_time = ? WHERE id = ? AND host = ? AND state IN (?, ?)`,
					running, r.PID, r.StartTime.UTC(), r.ID, r.Host, submitted, dispatched)
			case model.ReportResult:
				var pid, start any
				if !r.StartTime.IsZero() {
					start = r.StartTime.UTC()
				}
				if r.PID != 0 { // merged with its running report
					pid = r.PID
				}
				n, err = exec(`UPDATE task_instance SET state = ?, exit_code = ?, end_time = ?, `+
					`start_time = COALESCE(start_time, ?), pid = COALESCE(?, pid), outputs_json = ? `+
					`WHERE id = ? AND host = ? AND state IN (?, ?, ?)`,
					string(r.State), r.ExitCode, r.EndTime.UTC(), start, pid, jsonText(r.Outputs, len(r.Outputs)), r.ID, r.Host, submitted, dispatched, running)
			default:
				return fmt.Errorf("report for task %d: unknown kind %q", r.ID, r.Kind)
			}
			if err != nil {
				return fmt.Errorf("apply %s of task %d: %w", r.Kind, r.ID, err)
			}
			if n == 1 {
				out[i] = model.ReportApplied
				if r.Kind == model.ReportResult && r.State == model.TaskSucceeded {
					succeeded = append(succeeded, r.ID)
					if o := r.Outputs[ProducesOutput]; o != "" {
						if produced == nil {
							produced = map[int64]string{}
						}
						produced[r.ID] = o
					}
				}
				continue
			}
			var cur taskInstanceRow
			if err := tx.Select("id, state, host").Take(&cur, r.ID).Error; err != nil {
				if errors.Is(err, gorm.ErrRecordNotFound) {
					out[i] = model.ReportForeign
					continue
				}
				return fmt.Errorf("read task %d: %w", r.ID, err)
			}
			out[i] = classify(r, cur)
		}
		for run, res := range merged {
			out[run] = out[res]
		}
		// What the successes produce is written with them: exactly when
		// a success is recorded (common/store/datasets.go).
		if err := produceTx(tx, succeeded, produced); err != nil {
			return err
		}
		return appendEvents(tx, taskChanges(appliedIDs(rs, out)...))
	})
	return out, err
}

// mergeRunning folds each running report into a later result of the same
// task and host in the batch: the result then also sets the pid. It returns
// running index -> result index, and fills the results' PID and StartTime
// in rs.
func mergeRunning(rs []model.Report) map[int]int {
	var merged map[int]int
	running := map[int64]int{}
	for i := range rs {
		switch rs[i].Kind {
		case model.ReportRunning:
			running[rs[i].ID] = i
		case model.ReportResult:
			j, ok := running[rs[i].ID]
			if !ok || rs[j].Host != rs[i].Host {
				continue
			}
			if merged == nil {
				merged = map[int]int{}
			}
			merged[j] = i
			rs[i].PID = rs[j].PID
			if rs[i].StartTime.IsZero() {
				rs[i].StartTime = rs[j].StartTime
			}
			delete(running, rs[i].ID)
		}
	}
	return merged
}

// classify decides whether a report that changed nothing is a re-send of
// something already stored, or comes from a worker that no longer owns it.
func classify(r model.Report, cur taskInstanceRow) model.ReportOutcome {
	if cur.Host != r.Host {
		return model.ReportForeign
	}
	var seen []model.TaskState
	switch r.Kind {
	case model.ReportAck:
		// Not killed: a task the master killed before the worker acked it
		// must be dropped, never started.
		seen = []model.TaskState{model.TaskDispatched, model.TaskRunning, model.TaskSucceeded, model.TaskFailed}
	case model.ReportRunning:
		seen = []model.TaskState{model.TaskRunning, model.TaskSucceeded, model.TaskFailed, model.TaskKilled}
	case model.ReportResult:
		seen = []model.TaskState{r.State}
	}
	if slices.Contains(seen, model.TaskState(cur.State)) {
		return model.ReportDuplicate
	}
	return model.ReportForeign
}

// TaskList returns a workflow instance's task instances by id.
func (s *Store) TaskList(ctx context.Context, workflowInstanceID int64) ([]model.TaskInstance, error) {
	var rows []taskInstanceRow
	if err := s.read(ctx).Where("workflow_instance_id = ?", workflowInstanceID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list tasks of instance %d: %w", workflowInstanceID, err)
	}
	out := make([]model.TaskInstance, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// TaskGet returns one task instance.
func (s *Store) TaskGet(ctx context.Context, id int64) (model.TaskInstance, error) {
	var r taskInstanceRow
	if err := s.read(ctx).Take(&r, id).Error; err != nil {
		return model.TaskInstance{}, notFound(err, fmt.Sprintf("task instance %d", id))
	}
	return r.model(), nil
}

// TaskResetDispatch returns a dispatched task instance to submitted after a send
// to host failed, unless host has acked it meanwhile (then it is host's).
// A late ack from host afterwards no longer matches and is refused.
func (s *Store) TaskResetDispatch(ctx context.Context, id int64, host string) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE task_instance SET state = ?, host = '', dispatch_time = NULL WHERE id = ? AND state = ? AND host = ? AND log_path = ''`,
			model.TaskSubmitted, id, model.TaskDispatched, host)
		n = res.RowsAffected
		if res.Error != nil || n == 0 {
			return res.Error
		}
		return appendEvents(tx, taskChanges(id))
	})
	if err != nil {
		return false, fmt.Errorf("reset dispatch of task %d: %w", id, err)
	}
	return n == 1, nil
}
