package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// OnFenced returns a copy of the view that calls fenced each time one of
// its writes is refused because its term is over (before the ErrFenced
// error returns): the term's owner hears of the fence from the store
// itself, instead of every caller inspecting its errors. fenced must not
// block, and may be called more than once.
func (s *Store) OnFenced(fenced func()) *Store {
	c := *s
	c.fenced = fenced
	return &c
}

// TermFenced is Term(epoch).OnFenced(fenced): the view a term writes
// through, which tells the term when a write was refused for a newer one.
func (s *Store) TermFenced(epoch int64, fenced func()) *Store {
	return s.Term(epoch).OnFenced(fenced)
}

// Epoch is the term this view writes for (0: unfenced).
func (s *Store) Epoch() int64 { return s.epoch }

// TermBegin records epoch as the current leader term. It fails with
// ErrFenced when the recorded term is not older: an epoch comes from the
// election only, and one not above the recorded term is a stale election's.
// On MySQL it waits for
// fenced transactions of the old term in flight (they hold a shared lock
// on the row), so none of them commits after this returns.
func (s *Store) TermBegin(ctx context.Context, epoch int64, host string) error {
	if epoch <= 0 {
		return fmt.Errorf("begin term %d: a leader term's epoch must be positive", epoch)
	}
	res := s.db.WithContext(ctx).Exec(`UPDATE fence SET epoch = ?, host = ?, started_at = ? WHERE id = 1 AND epoch < ?`,
		epoch, host, time.Now().UTC(), epoch)
	if res.Error != nil {
		return fmt.Errorf("begin term %d: %w", epoch, res.Error)
	}
	if res.RowsAffected == 0 {
		cur, _ := s.TermCurrent(ctx)
		return fmt.Errorf("begin term %d: the recorded term is %d: %w", epoch, cur, ErrFenced)
	}
	return nil
}

// TermCurrent returns the recorded leader epoch.
func (s *Store) TermCurrent(ctx context.Context) (int64, error) {
	ti, err := s.TermCurrentInfo(ctx)
	return ti.Epoch, err
}

// tx runs fn in a transaction that first checks the fence when this view
// has an epoch. SQLite transactions are serialized (BEGIN IMMEDIATE), and
// on MySQL and PostgreSQL the shared row lock orders them against TermBegin.
func (s *Store) tx(ctx context.Context, fn func(tx *gorm.DB) error) (err error) {
	defer observeTx(time.Now(), &err)
	countTx(ctx)
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := s.checkTerm(tx); err != nil {
			return err
		}
		return fn(tx)
	})
}

// checkTerm fails with ErrFenced when the view has an epoch that is no
// longer the recorded one.
func (s *Store) checkTerm(tx *gorm.DB) error {
	if s.epoch == 0 {
		return nil
	}
	q := `SELECT epoch FROM fence WHERE id = 1` + s.d.shareLock
	var cur int64
	if err := tx.Raw(q).Scan(&cur).Error; err != nil {
		return fmt.Errorf("check term: %w", err)
	}
	if cur != s.epoch {
		if s.fenced != nil {
			s.fenced()
		}
		return fmt.Errorf("term %d is over (current %d): %w", s.epoch, cur, ErrFenced)
	}
	return nil
}

// foldedTx is tx for the hottest writes, which check the term in their first
// statement (fold.add) instead of a statement of their own: one round trip
// less per transaction on MySQL. SQLite's BEGIN IMMEDIATE holds the only
// write lock from the start, so the fence cannot change within the
// transaction and a check anywhere in it is as good as one at the start. On
// MySQL the folded check is a locking read (fold.add) whose shared lock on
// the fence row lasts until the commit, as the separate read's did: a
// transaction of the old term either commits before TermBegin's write or
// reads the new term. Its rows may now be locked before the fence row, so a
// term change can meet a deadlock with two old-term writes on the same rows;
// InnoDB breaks it by failing one, and TermBegin's write is retried by the
// master (leaderWrite). When the folded statement changed nothing
// (fold.settle), the term is read as tx would.
func (s *Store) foldedTx(ctx context.Context, fn func(tx *gorm.DB, f *fold) error) (err error) {
	if s.epoch == 0 {
		return s.tx(ctx, func(tx *gorm.DB) error { return fn(tx, &fold{}) })
	}
	defer observeTx(time.Now(), &err)
	countTx(ctx)
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		f := &fold{s: s, pending: true}
		if err := fn(tx, f); err != nil {
			return err
		}
		if f.pending { // no statement took the check
			return s.checkTerm(tx)
		}
		return nil
	})
}

// fold carries a term check not yet made into the next statement.
type fold struct {
	s       *Store
	pending bool // the check is still to be made
	added   bool // the last statement from add carries it
}

// add appends the term check to q's WHERE (q must end in a WHERE clause,
// optionally followed by FOR UPDATE, and change or select only rows that
// pass it) when it is still to be made; settle must follow with the rows
// the statement matched. On MySQL the check locks the fence row in share
// mode explicitly: under READ COMMITTED a plain subquery of an UPDATE is a
// non-locking read, which would not order the transaction against
// TermBegin.
func (f *fold) add(q string, args []any) (string, []any) {
	if !f.pending {
		return q, args
	}
	f.pending, f.added = false, true
	return foldCheck(q, f.s.d.shareLock), append(args, f.s.epoch)
}

// foldedCheck starts the term check foldCheck appends.
const foldedCheck = ` AND (SELECT epoch FROM fence WHERE id = 1`

// folded reports whether q carries the term check (fold.add).
func folded(q string) bool { return strings.Contains(q, foldedCheck) }

// foldCheck is q with the term check (one more argument, the epoch) at the
// end of its WHERE clause; shareLock is the dialect's (dialect.shareLock).
func foldCheck(q, shareLock string) string {
	check := foldedCheck + shareLock + `) = ?`
	if base, ok := strings.CutSuffix(q, ` FOR UPDATE`); ok {
		return base + check + ` FOR UPDATE`
	}
	return q + check
}

// settle takes the rows matched by the statement add changed: none may
// mean the term is over, so then the term is read.
func (f *fold) settle(tx *gorm.DB, n int64) error {
	if !f.added {
		return nil
	}
	f.added = false
	if n > 0 {
		return nil
	}
	return f.s.checkTerm(tx)
}

// TermInfo is the recorded leader term.
type TermInfo struct {
	Epoch     int64
	Host      string
	StartedAt *time.Time
}

// TermCurrentInfo returns the recorded leader term with its host and start.
func (s *Store) TermCurrentInfo(ctx context.Context) (TermInfo, error) {
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
