package store

import (
	"context"
	"fmt"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

type taskSampleRow struct {
	WorkflowInstanceID int64
	Name               string
	WorkerGroup        string
	SubmitTime         *time.Time
	DispatchTime       *time.Time
	StartTime          *time.Time
	EndTime            *time.Time
}

// TaskHistory returns the succeeded attempts of the last runs (at most
// runs) of project/workflow before instance before, newest first: what a
// finish-time forecast learns from. One query: the runs by index 0027
// (project_name, workflow_name, id), their tasks by idx_taskinst_wf_state;
// dry runs (nothing ran) are left out.
func (s *Store) TaskHistory(ctx context.Context, project, workflow string, before int64, runs int) ([]model.TaskSample, error) {
	if runs <= 0 {
		return nil, nil
	}
	var rows []taskSampleRow
	// A derived table, not IN (... LIMIT): MariaDB refuses LIMIT in an IN
	// subquery.
	err := s.read(ctx).Raw(`SELECT ti.workflow_instance_id, ti.name, ti.worker_group, ti.submit_time, ti.dispatch_time, ti.start_time, ti.end_time
FROM (SELECT id FROM workflow_instance WHERE project_name = ? AND workflow_name = ? AND id < ? AND dry_run = ? ORDER BY id DESC LIMIT ?) w
JOIN task_instance ti ON ti.workflow_instance_id = w.id
WHERE ti.state = ? AND ti.dry_run = ?
ORDER BY ti.id DESC`, project, workflow, before, false, runs, string(model.TaskSucceeded), false).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read task history of %s/%s: %w", project, workflow, err)
	}
	out := make([]model.TaskSample, len(rows))
	for i, r := range rows {
		out[i] = model.TaskSample{InstanceID: r.WorkflowInstanceID, Name: r.Name, WorkerGroup: r.WorkerGroup,
			SubmitTime: utc(r.SubmitTime), DispatchTime: utc(r.DispatchTime), StartTime: utc(r.StartTime), EndTime: utc(r.EndTime)}
	}
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
