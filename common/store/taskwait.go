package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// SetTaskWait records why task instance id waits (cause, a sentence); ""
// and "" clear it. For the causes only the code holding the task knows
// (a dependent task waiting on another workflow): the API reads it as the
// task's wait. Fenced like every leader write when the view has an epoch.
func (s *Store) SetTaskWait(ctx context.Context, id int64, cause, reason string) error {
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

// QueuedAhead counts the submitted tasks of other instances that go before
// the tasks of instance id (of workflow priority p) in the leader's queue
// order (docs/architecture.md, "Lifecycle of a run", step 4): a higher
// workflow priority, or the same and an older instance. Within the
// instance, task priority and id order the rest.
func (s *Store) QueuedAhead(ctx context.Context, id int64, p int) (int, error) {
	var n int64
	err := s.db.WithContext(ctx).Table("task_instance t").Joins("JOIN workflow_instance w ON w.id = t.workflow_instance_id").
		Where("t.state = ? AND (w.priority < ? OR (w.priority = ? AND w.id < ?))", "submitted", p, p, id).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("tasks queued ahead of instance %d: %w", id, err)
	}
	return int(n), nil
}
