package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// InstanceAdoptUnfinished makes this term's master the owner of every unfinished
// workflow instance (running, or on its way to a pause or stop) and returns
// them. Used by a new leader before it runs anything.
func (s *Store) InstanceAdoptUnfinished(ctx context.Context, host string) ([]model.WorkflowInstance, error) {
	var rows []workflowInstanceRow
	states := []string{string(model.WorkflowRunning), string(model.WorkflowReadyPause), string(model.WorkflowReadyStop)}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("state IN ?", states).Order("id").Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.Model(&workflowInstanceRow{}).Where("state IN ?", states).
			Updates(map[string]any{"host": host, "epoch": s.epoch}).Error
	})
	if err != nil {
		return nil, fmt.Errorf("adopt unfinished instances: %w", err)
	}
	out := make([]model.WorkflowInstance, len(rows))
	for i, r := range rows {
		r.Host, r.Epoch = host, s.epoch
		out[i] = r.model()
	}
	return out, nil
}

// TaskOnHost returns the task instances that a worker holds: dispatched to
// it or running there.
func (s *Store) TaskOnHost(ctx context.Context, host string) ([]model.TaskInstance, error) {
	var rows []taskInstanceRow
	if err := s.db.WithContext(ctx).Where("host = ? AND state IN ?", host,
		[]string{string(model.TaskDispatched), string(model.TaskRunning)}).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("tasks on %s: %w", host, err)
	}
	out := make([]model.TaskInstance, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// TaskNeedFaultTolerance marks task instances whose worker is gone or never got
// them as need_fault_tolerance, if they are still dispatched or running (on
// host, when host is not empty). It returns the ids it changed.
func (s *Store) TaskNeedFaultTolerance(ctx context.Context, ids []int64, host string) ([]int64, error) {
	var changed []int64
	now := time.Now().UTC()
	err := s.tx(ctx, func(tx *gorm.DB) error {
		changed = changed[:0]
		for _, id := range ids {
			q := `UPDATE task_instance SET state = ?, end_time = ? WHERE id = ? AND state IN (?, ?)`
			args := []any{model.TaskNeedFaultTolerance, now, id, model.TaskDispatched, model.TaskRunning}
			if host != "" {
				q += ` AND host = ?`
				args = append(args, host)
			}
			res := tx.Exec(q, args...)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				changed = append(changed, id)
			}
		}
		return appendEvents(tx, taskChanges(changed...))
	})
	if err != nil {
		return nil, fmt.Errorf("mark need_fault_tolerance: %w", err)
	}
	return changed, nil
}

// TaskInsertAttempts flags the attempts in prev as superseded and writes the
// next attempts, in one transaction, setting their IDs.
func (s *Store) TaskInsertAttempts(ctx context.Context, prev []int64, next []*model.TaskInstance) error {
	if err := s.writeRunnerBatch(ctx, []AttemptWrite{{Prev: prev, Next: next}}, nil); err != nil {
		return fmt.Errorf("insert %d new attempts: %w", len(next), err)
	}
	return nil
}

// TaskInFlight returns the task instances dispatched or running anywhere, with
// their worker and task group (a new leader's starting counts).
func (s *Store) TaskInFlight(ctx context.Context) ([]model.TaskInstance, error) {
	var rows []taskInstanceRow
	if err := s.db.WithContext(ctx).Select("id, workflow_instance_id, host, task_group, state").
		Where("state IN ?", []string{string(model.TaskDispatched), string(model.TaskRunning)}).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("tasks in flight: %w", err)
	}
	out := make([]model.TaskInstance, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// InstanceReopen makes a finished instance running again under this term's
// master (resume, rerun, recover_failed, force_success): state running, no
// end time, no reason; rerun also counts a new run. It returns ErrConflict
// when the instance is not in one of from. A version other than 0 moves
// the instance to that version of its workflow first (the operator chose
// it, ActionRequest.Version), in the same transaction.
func (s *Store) InstanceReopen(ctx context.Context, id int64, from []model.WorkflowState, newRun bool, host string, version int) (model.WorkflowInstance, error) {
	fs := make([]string, len(from))
	for i, f := range from {
		fs[i] = string(f)
	}
	var r workflowInstanceRow
	err := s.tx(ctx, func(tx *gorm.DB) error {
		fields := map[string]any{"state": string(model.WorkflowRunning), "end_time": nil, "reason": "", "host": host, "epoch": s.epoch}
		if newRun {
			fields["run_times"] = gorm.Expr("run_times + 1")
		}
		if version != 0 {
			var cur workflowInstanceRow
			if err := tx.Select("id, project_id, workflow_name").Take(&cur, id).Error; err != nil {
				return notFound(err, fmt.Sprintf("workflow instance %d", id))
			}
			var def workflowDefinitionRow
			if err := lockingRead(tx).Select("id, version").Where("project_id = ? AND name = ? AND version = ?", cur.ProjectID, cur.WorkflowName, version).
				Take(&def).Error; err != nil {
				return notFound(err, fmt.Sprintf("version %d of workflow %q", version, cur.WorkflowName))
			}
			fields["workflow_definition_id"], fields["version"] = def.ID, def.Version
		}
		res := tx.Model(&workflowInstanceRow{}).Where("id = ? AND state IN ?", id, fs).Updates(fields)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("workflow instance %d is not in %v: %w", id, from, ErrConflict)
		}
		if err := appendEvents(tx, instanceChanges(id)); err != nil {
			return err
		}
		return tx.Take(&r, id).Error
	})
	if err != nil {
		return model.WorkflowInstance{}, fmt.Errorf("reopen instance %d: %w", id, err)
	}
	return r.model(), nil
}

// TaskSetStates moves task instances that are in one of from to state to
// (end time now for final states, unless one is recorded), returning the ids
// it changed.
func (s *Store) TaskSetStates(ctx context.Context, ids []int64, from []model.TaskState, to model.TaskState) ([]int64, error) {
	fs := make([]string, len(from))
	for i, f := range from {
		fs[i] = string(f)
	}
	var changed []int64
	now := time.Now().UTC()
	err := s.tx(ctx, func(tx *gorm.DB) error {
		changed = changed[:0]
		for _, id := range ids {
			fields := map[string]any{"state": string(to)}
			if to.Finished() {
				// An end already recorded stays: a task force-succeeded
				// after it failed keeps its own run's duration.
				fields["end_time"] = gorm.Expr("COALESCE(end_time, ?)", now)
			}
			res := tx.Model(&taskInstanceRow{}).Where("id = ? AND state IN ?", id, fs).Updates(fields)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				changed = append(changed, id)
			}
		}
		return appendEvents(tx, taskChanges(changed...))
	})
	if err != nil {
		return nil, fmt.Errorf("set tasks %s: %w", to, err)
	}
	return changed, nil
}

// InstanceSetState records a state of a running instance (ready_pause,
// ready_stop) without ending it.
func (s *Store) InstanceSetState(ctx context.Context, id int64, state model.WorkflowState) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`UPDATE workflow_instance SET state = ? WHERE id = ?`, state, id).Error; err != nil {
			return err
		}
		return appendEvents(tx, instanceChanges(id))
	})
}
