package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TaskHistory returns the succeeded attempts of the last runs (at most
// runs) of project/workflow before instance before, newest first: what a
// finish-time forecast learns from. One query: the runs by index 0039
// (project_name, workflow_name, id), their tasks by idx_taskinst_wf_state;
// dry runs (nothing ran) are left out. Durations are computed by the
// database: a row is two names and two numbers, not four times to parse.
func (s *Store) TaskHistory(ctx context.Context, project, workflow string, before int64, runs int) ([]model.TaskSample, error) {
	if runs <= 0 {
		return nil, nil
	}
	// A derived table, not IN (... LIMIT): MariaDB refuses LIMIT in an IN
	// subquery.
	q := `SELECT ti.workflow_instance_id, ti.name, ti.worker_group, ` + s.d.msBetween("ti.start_time", "ti.end_time") + `, ` +
		s.d.msBetween("ti.submit_time", "ti.dispatch_time") + `
FROM (SELECT id FROM workflow_instance WHERE project_name = ? AND workflow_name = ? AND id < ? AND dry_run = ? ORDER BY id DESC LIMIT ?) w
JOIN task_instance ti ON ti.workflow_instance_id = w.id
WHERE ti.state = ? AND ti.dry_run = ? AND ti.start_time IS NOT NULL AND ti.end_time IS NOT NULL`
	rows, err := s.read(ctx).Raw(q, project, workflow, before, false, runs, string(model.TaskSucceeded), false).Rows()
	if err != nil {
		return nil, fmt.Errorf("read task history of %s/%s: %w", project, workflow, err)
	}
	defer rows.Close()
	var out []model.TaskSample
	for rows.Next() {
		var t model.TaskSample
		var run int64
		var queue sql.NullInt64
		if err := rows.Scan(&t.InstanceID, &t.Name, &t.WorkerGroup, &run, &queue); err != nil {
			return nil, fmt.Errorf("read task history of %s/%s: %w", project, workflow, err)
		}
		t.Run = time.Duration(run) * time.Millisecond
		if queue.Valid {
			t.Queue, t.HasQueue = time.Duration(queue.Int64)*time.Millisecond, true
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read task history of %s/%s: %w", project, workflow, err)
	}
	countRows(ctx, len(out)) // read by hand, not by gorm's scan
	// Newest first, sorted here: an ORDER BY in the query sorts the rows
	// in a temporary b-tree, most of its time on SQLite.
	slices.SortStableFunc(out, func(a, b model.TaskSample) int { return cmp.Compare(b.InstanceID, a.InstanceID) })
	return out, nil
}

type taskNowRow struct {
	Name        string
	State       string
	Attempt     int
	WorkerGroup string
	StartTime   *time.Time
}

// InstanceTasksNow returns the latest attempt of each task of instance id
// that has one (name, state, start): a forecast's view of a running
// instance, a few columns of its rows, not their params and outputs.
func (s *Store) InstanceTasksNow(ctx context.Context, id int64) ([]model.TaskNow, error) {
	var rows []taskNowRow
	if err := s.read(ctx).Raw(`SELECT name, state, attempt, worker_group, start_time FROM task_instance WHERE workflow_instance_id = ?`, id).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read tasks of instance %d: %w", id, err)
	}
	countRows(ctx, len(rows))
	latest := make(map[string]int, len(rows))
	out := make([]model.TaskNow, 0, len(rows))
	for _, r := range rows {
		t := model.TaskNow{Name: r.Name, State: model.TaskState(r.State), Attempt: r.Attempt, WorkerGroup: r.WorkerGroup, StartTime: utc(r.StartTime)}
		if i, ok := latest[r.Name]; ok {
			if out[i].Attempt < t.Attempt {
				out[i] = t
			}
			continue
		}
		latest[r.Name] = len(out)
		out = append(out, t)
	}
	return out, nil
}
