package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// AttemptWrite is one TaskInsertAttempts: the attempts prev are superseded and
// next written (their IDs set).
type AttemptWrite struct {
	Prev []int64
	Next []*model.TaskInstance
}

// InstanceEnd is one InstanceFinish.
type InstanceEnd struct {
	ID     int64
	State  model.WorkflowState
	End    time.Time
	Reason string
}

// TaskWriteRunnerBatch writes the attempts and ends of several instances in one
// transaction: what TaskInsertAttempts and InstanceFinish each write,
// all or none. A thousand concurrent small runs make that many tiny
// transactions a second, each its own commit (and on SQLite its own turn
// at the one write lock); the master gathers those found waiting at once.
func (s *Store) TaskWriteRunnerBatch(ctx context.Context, attempts []AttemptWrite, ends []InstanceEnd) error {
	if err := s.writeRunnerBatch(ctx, attempts, ends); err != nil {
		n := 0
		for _, a := range attempts {
			n += len(a.Next)
		}
		return fmt.Errorf("write %d attempts and %d instance ends: %w", n, len(ends), err)
	}
	return nil
}

func (s *Store) writeRunnerBatch(ctx context.Context, attempts []AttemptWrite, ends []InstanceEnd) error {
	var prev []int64
	var rows []taskInstanceRow
	for _, a := range attempts {
		prev = append(prev, a.Prev...)
		for _, t := range a.Next {
			rows = append(rows, taskRowFrom(t))
		}
	}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		for ids := range slices.Chunk(prev, maxInIDs) {
			if err := tx.Exec(`UPDATE`+orFail(tx)+` task_instance SET superseded = TRUE WHERE id IN ?`, ids).Error; err != nil {
				return err
			}
		}
		if len(rows) > 0 {
			if err := insertRows(tx, rows); err != nil {
				return err
			}
		}
		ids := make([]int64, len(ends))
		for i, e := range ends {
			ids[i] = e.ID
			if err := tx.Exec(`UPDATE workflow_instance SET state = ?, end_time = ?, reason = ?, queued = ? WHERE id = ?`,
				string(e.State), e.End.UTC(), e.Reason, false, e.ID).Error; err != nil {
				return fmt.Errorf("end of instance %d: %w", e.ID, err)
			}
		}
		if len(rows) == 0 && len(ids) == 0 {
			return nil
		}
		return appendEvents(tx, changed{tasks: taskRowIDs(rows), instances: ids})
	})
	if err != nil {
		return err
	}
	i := 0
	for _, a := range attempts {
		for _, t := range a.Next {
			t.ID = rows[i].ID
			i++
		}
	}
	for _, e := range ends {
		s.ended(e.ID)
	}
	return nil
}
