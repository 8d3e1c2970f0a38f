package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ErrFenced means a newer leader term exists: the caller's writes are
// refused and it must stop acting as leader.
var ErrFenced = errors.New("fenced: a newer leader term has begun")

// Term returns a view of the store whose master writes (claiming commands,
// task instances, reports, instance ends) run only while epoch is the
// current leader term. Epoch 0 means unfenced.
func (s *Store) Term(epoch int64) *Store {
	c := *s
	c.epoch = epoch
	return &c
}

// Epoch is the term this view writes for (0: unfenced).
func (s *Store) Epoch() int64 { return s.epoch }

// BeginTerm records epoch as the current leader term. It fails with
// ErrFenced when the recorded term is not older: an epoch comes from the
// election only, and one not above the recorded term is a stale election's.
// On MySQL it waits for
// fenced transactions of the old term in flight (they hold a shared lock
// on the row), so none of them commits after this returns.
func (s *Store) BeginTerm(ctx context.Context, epoch int64, host string) error {
	if epoch <= 0 {
		return fmt.Errorf("begin term %d: a leader term's epoch must be positive", epoch)
	}
	res := s.db.WithContext(ctx).Exec(`UPDATE fence SET epoch = ?, host = ?, started_at = ? WHERE id = 1 AND epoch < ?`,
		epoch, host, time.Now().UTC(), epoch)
	if res.Error != nil {
		return fmt.Errorf("begin term %d: %w", epoch, res.Error)
	}
	if res.RowsAffected == 0 {
		cur, _ := s.CurrentTerm(ctx)
		return fmt.Errorf("begin term %d: the recorded term is %d: %w", epoch, cur, ErrFenced)
	}
	return nil
}

// CurrentTerm returns the recorded leader epoch.
func (s *Store) CurrentTerm(ctx context.Context) (int64, error) {
	ti, err := s.CurrentTermInfo(ctx)
	return ti.Epoch, err
}

// tx runs fn in a transaction that first checks the fence when this view
// has an epoch. SQLite transactions are serialized (BEGIN IMMEDIATE), and
// on MySQL the shared row lock orders them against BeginTerm.
func (s *Store) tx(ctx context.Context, fn func(tx *gorm.DB) error) (err error) {
	defer observeTx(time.Now(), &err)
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.epoch != 0 {
			q := `SELECT epoch FROM fence WHERE id = 1`
			if s.dialect == "mysql" {
				q += ` LOCK IN SHARE MODE`
			}
			var cur int64
			if err := tx.Raw(q).Scan(&cur).Error; err != nil {
				return fmt.Errorf("check term: %w", err)
			}
			if cur != s.epoch {
				return fmt.Errorf("term %d is over (current %d): %w", s.epoch, cur, ErrFenced)
			}
		}
		return fn(tx)
	})
}

// TermInfo is the recorded leader term.
type TermInfo struct {
	Epoch     int64
	Host      string
	StartedAt *time.Time
}

// CurrentTermInfo returns the recorded leader term with its host and start.
func (s *Store) CurrentTermInfo(ctx context.Context) (TermInfo, error) {
	var r struct {
		Epoch     int64
		Host      string
		StartedAt *time.Time
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT epoch, host, started_at FROM fence WHERE id = 1`).Scan(&r).Error; err != nil {
		return TermInfo{}, fmt.Errorf("read term: %w", err)
	}
	return TermInfo{Epoch: r.Epoch, Host: r.Host, StartedAt: utc(r.StartedAt)}, nil
}
