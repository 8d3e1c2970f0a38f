package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TaskPage is one page of an instance's task instances in id order, and
// how many there are in each state: what the instance API answers without
// reading every task of a 100,000-task instance.
type TaskPage struct {
	Tasks  []model.TaskInstance
	Counts map[model.TaskState]int
	Total  int
}

// InstanceTasks returns the tasks of instance id from offset (limit of
// them; 0: none) and the state counts, each one query on the
// (workflow_instance_id, state) index.
func (s *Store) InstanceTasks(ctx context.Context, id int64, limit, offset int) (TaskPage, error) {
	page := TaskPage{Counts: map[model.TaskState]int{}}
	var counts []struct {
		State string
		N     int
	}
	if err := s.read(ctx).Raw(`SELECT state, COUNT(*) AS n FROM task_instance WHERE workflow_instance_id = ? GROUP BY state`, id).
		Scan(&counts).Error; err != nil {
		return page, fmt.Errorf("count tasks of instance %d: %w", id, err)
	}
	for _, c := range counts {
		page.Counts[model.TaskState(c.State)] = c.N
		page.Total += c.N
	}
	if limit <= 0 || offset >= page.Total {
		return page, nil
	}
	rows, err := s.pageRows(ctx, id, limit, offset)
	if err != nil {
		return page, fmt.Errorf("list tasks of instance %d: %w", id, err)
	}
	page.Tasks = make([]model.TaskInstance, len(rows))
	for i, r := range rows {
		page.Tasks[i] = r.model()
	}
	return page, nil
}

// taskCols are the columns pageRows scans, in taskInstanceRow's order.
const taskCols = `id, workflow_instance_id, name, type, state, attempt, retry_base, superseded, dry_run, host, pid, log_path, ` +
	`exit_code, priority, worker_group, task_group, submit_time, dispatch_time, start_time, end_time, params_json, ` +
	`outputs_json, wait_cause, wait_reason, child_instance_id, message`

// fields are the destinations of taskCols, in order, for rows.Scan.
func (r *taskInstanceRow) fields(more ...any) []any {
	return append([]any{&r.ID, &r.WorkflowInstanceID, &r.Name, &r.Type, &r.State, &r.Attempt, &r.RetryBase, &r.Superseded,
		&r.DryRun, &r.Host, &r.PID, &r.LogPath, &r.ExitCode, &r.Priority, &r.WorkerGroup, &r.TaskGroup, &r.SubmitTime,
		&r.DispatchTime, &r.StartTime, &r.EndTime, &r.ParamsJSON, &r.OutputsJSON, &r.WaitCause, &r.WaitReason,
		&r.ChildInstanceID, &r.Message}, more...)
}

// pageRows reads a page of instance id's rows, scanned by hand: gorm's
// reflection per column was a third of a page's CPU.
func (s *Store) pageRows(ctx context.Context, id int64, limit, offset int) ([]taskInstanceRow, error) {
	rows, err := s.read(ctx).Raw(`SELECT `+taskCols+` FROM task_instance WHERE workflow_instance_id = ? ORDER BY id LIMIT ? OFFSET ?`,
		id, limit, offset).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]taskInstanceRow, 0, limit)
	for rows.Next() {
		var r taskInstanceRow
		if err := rows.Scan(r.fields()...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	countRows(ctx, len(out))
	return out, nil
}

// Unsettled is what a running instance's pending tasks are derived from
// without reading its succeeded tasks: the rows that did not succeed
// (queued, dispatched, running, delayed, failed, killed, skipped, ...),
// superseded ones included, and how many latest (not superseded) rows
// succeeded.
type Unsettled struct {
	Tasks     []AttemptState
	Succeeded int
}

// AttemptState is what one row says of which tasks have an attempt: its
// task, attempt number and state. A running fan-out of 100,000 has that
// many unsettled rows, so they are read as these, not as TaskInstances
// (a tenth of the memory, and of the GC's work).
type AttemptState struct {
	Name       string
	State      model.TaskState
	Attempt    int
	Superseded bool
}

// InstanceOutputTasks returns the tasks of instance id that exported
// values: the instance's outputs without reading its other tasks (index
// 0020 holds only the tasks with outputs; a task without any has NULL).
func (s *Store) InstanceOutputTasks(ctx context.Context, id int64) ([]model.TaskInstance, error) {
	var rows []taskInstanceRow
	if err := s.read(ctx).Where("workflow_instance_id = ? AND outputs_json IS NOT NULL", id).
		Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list outputs of instance %d: %w", id, err)
	}
	out := make([]model.TaskInstance, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// finishes wakes the in-process waiters of instance ends (InstanceWaitEnd): the
// API of a standalone answers a waiting GET as soon as the master in the
// same process wrote the end. Shared by every view of a Store (Term,
// WithSecrets copy the pointer).
type finishes struct {
	mu      sync.Mutex
	waiters map[int64][]chan struct{}
}

// InstanceWaitEnd returns a channel closed when this process (through any view of
// this Store) records instance id's end, and a cancel to call when no
// longer waiting. An end written by another process is not signalled: the
// caller also re-reads the instance now and then.
func (s *Store) InstanceWaitEnd(id int64) (<-chan struct{}, func()) {
	f := s.ends
	ch := make(chan struct{})
	f.mu.Lock()
	if f.waiters == nil {
		f.waiters = map[int64][]chan struct{}{}
	}
	f.waiters[id] = append(f.waiters[id], ch)
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		ws := f.waiters[id]
		for i, w := range ws {
			if w == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(f.waiters, id)
		} else {
			f.waiters[id] = ws
		}
	}
}

// ended wakes the waiters of instance id.
func (s *Store) ended(id int64) {
	f := s.ends
	f.mu.Lock()
	ws := f.waiters[id]
	delete(f.waiters, id)
	f.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// InstanceQueueRanks returns, for each task of page (a page of instance id's tasks
// from InstanceTasks: every row with an id in its range) that is the
// latest attempt and queued, how many of the instance's latest queued
// tasks go before it in queue order (task priority, then id). One count
// per task priority on the page, read from the index of migration 0024:
// the page's ranks cost the same in an instance of 100 queued tasks as in
// one of 100,000, whose rows are not read.
func (s *Store) InstanceQueueRanks(ctx context.Context, id int64, page []model.TaskInstance) (map[int64]int, error) {
	byPrio := map[model.Priority][]model.TaskInstance{}
	for _, t := range page {
		if t.State == model.TaskSubmitted && !t.Superseded {
			byPrio[t.Priority] = append(byPrio[t.Priority], t)
		}
	}
	out := make(map[int64]int, len(page))
	for p, ts := range byPrio {
		slices.SortFunc(ts, func(a, b model.TaskInstance) int { return cmp.Compare(a.ID, b.ID) })
		var before int64
		if err := s.read(ctx).Table("task_instance").
			Where("workflow_instance_id = ? AND state = ? AND superseded = ? AND (priority < ? OR (priority = ? AND id < ?))",
				id, string(model.TaskSubmitted), false, int(p), int(p), ts[0].ID).Count(&before).Error; err != nil {
			return nil, fmt.Errorf("queue ranks of instance %d: %w", id, err)
		}
		// The rest of this priority before each is on the page: it holds
		// every row of the instance from its first id to its last.
		for i, t := range ts {
			out[t.ID] = int(before) + i
		}
	}
	return out, nil
}

// InstanceLatestRows counts instance id's latest attempts (rows not superseded),
// from the index alone: the tasks that have one.
func (s *Store) InstanceLatestRows(ctx context.Context, id int64) (int, error) {
	var n int64
	if err := s.read(ctx).Table("task_instance").Where("workflow_instance_id = ? AND superseded = ?", id, false).
		Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count the latest attempts of instance %d: %w", id, err)
	}
	return int(n), nil
}

// InstancePreviousEnds returns, for each task named in attempts (name -> its
// latest attempt number), when the attempt before it ended (tasks whose
// earlier attempt has no end are left out): a delayed retry's time.
func (s *Store) InstancePreviousEnds(ctx context.Context, id int64, attempts map[string]int) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(attempts) == 0 {
		return out, nil
	}
	var rows []taskInstanceRow
	if err := s.read(ctx).Select("id, name, attempt, end_time").
		Where("workflow_instance_id = ? AND name IN ?", id, slices.Collect(maps.Keys(attempts))).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("earlier attempts of instance %d: %w", id, err)
	}
	for _, r := range rows {
		if a, ok := attempts[r.Name]; ok && r.Attempt == a-1 && r.EndTime != nil {
			out[r.Name] = r.EndTime.UTC()
		}
	}
	return out, nil
}

// InstanceUnsettled reads instance id's Unsettled: the succeeded latest
// rows counted, the others' names, states, attempts and superseded flags
// (two ranges of the (workflow_instance_id, state, ...) index, migration
// 0024): in a large running instance most rows have succeeded and are not
// read, and the rest are read without decoding the rest of each row.
func (s *Store) InstanceUnsettled(ctx context.Context, id int64) (Unsettled, error) {
	var u Unsettled
	success := []string{string(model.TaskSucceeded), string(model.TaskForcedSuccess)}
	var n int64
	if err := s.read(ctx).Table("task_instance").
		Where("workflow_instance_id = ? AND state IN ? AND superseded = ?", id, success, false).Count(&n).Error; err != nil {
		return u, fmt.Errorf("count succeeded tasks of instance %d: %w", id, err)
	}
	u.Succeeded = int(n)
	rows, err := s.read(ctx).Raw(`SELECT name, state, attempt, superseded FROM task_instance WHERE workflow_instance_id = ? AND state NOT IN ?`,
		id, success).Rows()
	if err != nil {
		return u, fmt.Errorf("list unsettled tasks of instance %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var t AttemptState
		var state string
		if err := rows.Scan(&t.Name, &state, &t.Attempt, &t.Superseded); err != nil {
			return u, fmt.Errorf("list unsettled tasks of instance %d: %w", id, err)
		}
		t.State = model.TaskState(state)
		u.Tasks = append(u.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return u, fmt.Errorf("list unsettled tasks of instance %d: %w", id, err)
	}
	countRows(ctx, len(u.Tasks)) // scanned here, not by gorm's callbacks
	return u, nil
}
