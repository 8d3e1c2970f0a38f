package store

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// ScheduleFire is one schedule's firing of a FireSchedules batch.
type ScheduleFire struct {
	Schedule model.Schedule
	Firing   Firing
}

// FireResult is what FireSchedules wrote for one schedule: its runs, or
// Err (wrapping ErrScheduleMoved) when the schedule changed since it was
// read, and nothing of it was written.
type FireResult struct {
	Runs []model.WorkflowInstance
	Err  error
}

// FireSchedules writes the firings of many schedules due together in one
// transaction (each as FireSchedule would): a midnight batch of a thousand
// schedules costs one commit, not a thousand, and each run is written
// exactly once since the cursor moves in the same transaction. A schedule
// that moved is skipped (its write stops before writing anything); any
// other error undoes the whole batch, which the caller retries one by one.
func (s *Store) FireSchedules(ctx context.Context, fires []ScheduleFire) ([]FireResult, error) {
	out := make([]FireResult, len(fires))
	err := s.tx(ctx, func(tx *gorm.DB) error {
		for i, f := range fires {
			runs, err := s.fireWrite(f.Schedule, f.Firing).write(tx)
			if errors.Is(err, ErrScheduleMoved) {
				out[i] = FireResult{Err: err}
				continue
			}
			if err != nil {
				return err
			}
			out[i] = FireResult{Runs: runs}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
