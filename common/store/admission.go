package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// The leader's admission (docs/architecture.md, Admission): the reads that
// measure its queues, and the writes that say why runs wait.

// Admission is the leader's admission state as it recorded it.
type Admission struct {
	// Reason says which limit stops new runs ("" while it admits).
	Reason string
	Since  *time.Time
}

// AdmissionPut records reason ("" : admitting) as this term's admission
// state, in a fenced transaction.
func (s *Store) AdmissionPut(ctx context.Context, reason string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		var since *time.Time
		if reason != "" {
			now := now6()
			since = &now
		}
		if err := tx.Exec(`UPDATE admission SET epoch = ?, reason = ?, since = ? WHERE id = 1`,
			s.epoch, clip(reason, 1024), since).Error; err != nil {
			return fmt.Errorf("record admission: %w", err)
		}
		return nil
	})
}

// AdmissionCurrent is the admission state the current leader term
// recorded; what an earlier term left is not (a new leader admits until it
// says otherwise).
func (s *Store) AdmissionCurrent(ctx context.Context) (Admission, error) {
	var r struct {
		Reason string
		Since  *time.Time
	}
	err := s.read(ctx).Raw(`SELECT a.reason, a.since FROM admission a JOIN fence f ON f.id = 1 AND f.epoch = a.epoch WHERE a.id = 1`).
		Scan(&r).Error
	if err != nil {
		return Admission{}, fmt.Errorf("read admission: %w", err)
	}
	return Admission{Reason: r.Reason, Since: utc(r.Since)}, nil
}

// EventBacklog is the outbox rows not yet published, up to most: the
// ids above afterID, the publisher's EventCursor.ID (below 0: unknown,
// counted as none). Two index reads whatever the backlog (a count of a
// million rows would cost the most when the master is busiest); ids left
// unused by rolled-back transactions count too, an overestimate the next
// batch corrects.
func (s *Store) EventBacklog(ctx context.Context, afterID int64, most int) (int64, error) {
	if afterID < 0 {
		return 0, nil
	}
	var top int64
	if err := s.db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(id), 0) FROM event`).Scan(&top).Error; err != nil {
		return 0, fmt.Errorf("read the newest event: %w", err)
	}
	return min(max(top-afterID, 0), int64(most)), nil
}

// InstanceNoteWaiting gives reason to the runs asked for that wait for the
// leader's admission (submitted, not queued for max_active_runs or a
// schedule, with a start command) and do not say it yet, in a fenced
// transaction; claiming a run clears it. It returns how many it marked.
func (s *Store) InstanceNoteWaiting(ctx context.Context, reason string) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&workflowInstanceRow{}).
			Where("state = ? AND queued = ? AND reason <> ?", model.WorkflowSubmitted, false, reason).
			Where("id IN (?)", tx.Model(&commandRow{}).Select("workflow_instance_id").Where("type <> ?", commandTypeAction)).
			UpdateColumn("reason", clip(reason, 1024))
		if res.Error != nil {
			return fmt.Errorf("note waiting runs: %w", res.Error)
		}
		n = res.RowsAffected
		return nil
	})
	return n, err
}

// InstanceClaimChildCommands is InstanceClaimCommands of sub_workflow
// runs only (a parent task waits for each): claimed while the leader
// admits nothing else, so parents that fill it never wait on children it
// does not start. quota.instances_per_run bounds them per root run.
func (s *Store) InstanceClaimChildCommands(ctx context.Context, host string, epoch int64, limit int) ([]model.WorkflowInstance, error) {
	db := s.db.WithContext(ctx)
	var cmds []commandRow
	err := claimable(db, time.Now()).Where("type <> ?", commandTypeAction).
		Where("workflow_instance_id IN (?)", db.Model(&workflowInstanceRow{}).Select("id").
			Where("parent_instance_id IS NOT NULL AND state = ?", model.WorkflowSubmitted)).
		Order("id").Limit(limit).Find(&cmds).Error
	if err != nil {
		return nil, fmt.Errorf("read commands of child runs: %w", err)
	}
	return s.claimCommands(ctx, host, epoch, cmds)
}
