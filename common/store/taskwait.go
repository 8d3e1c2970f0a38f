package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TaskSetWait records why task instance id waits (cause, a sentence); ""
// and "" clear it. For the causes only the code holding the task knows
// (a dependent task waiting on another workflow): the API reads it as the
// task's wait. Fenced like every leader write when the view has an epoch.
func (s *Store) TaskSetWait(ctx context.Context, id int64, cause, reason string) error {
	if len(cause) > 32 || len(reason) > 512 {
		return fmt.Errorf("task %d wait: cause over 32 or reason over 512 bytes", id)
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		// No RowsAffected check: MySQL counts a row set to what it held as unaffected.
		if err := tx.Table("task_instance").Where("id = ?", id).UpdateColumns(map[string]any{"wait_cause": cause, "wait_reason": reason}).Error; err != nil {
			return fmt.Errorf("task %d wait: %w", id, err)
		}
		return nil
	})
}

// TaskQueuedAhead counts the submitted tasks of other instances that go before
// the tasks of instance id (of workflow priority p) in the leader's queue
// order (docs/architecture.md, "Lifecycle of a run", step 4): a higher
// workflow priority, or the same and an older instance. Within the
// instance, task priority and id order the rest.
func (s *Store) TaskQueuedAhead(ctx context.Context, id int64, p int) (int, error) {
	// By the instances ahead, each one's count read from the index of
	// migration 0024: a join from every submitted row read each one (a
	// queued fan-out of 100,000 is that many rows, its own included). A
	// succeeded instance has no submitted task; any other state may
	// (a failed run's leftovers), as before.
	var maybe []string
	for _, st := range []model.WorkflowState{model.WorkflowSubmitted, model.WorkflowRunning, model.WorkflowReadyPause,
		model.WorkflowPaused, model.WorkflowReadyStop, model.WorkflowStopped, model.WorkflowFailed} {
		maybe = append(maybe, string(st))
	}
	var n int64
	err := s.read(ctx).Table("task_instance").
		Where("state = ? AND workflow_instance_id IN (?)", string(model.TaskSubmitted),
			s.read(ctx).Table("workflow_instance").Select("id").
				Where("state IN ? AND (priority < ? OR (priority = ? AND id < ?))", maybe, p, p, id)).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("tasks queued ahead of instance %d: %w", id, err)
	}
	return int(n), nil
}
