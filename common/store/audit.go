package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// PendingAudit is the audit entry of one API change, carried in the
// request's context (WithAudit). The first write the change makes inside a
// transaction inserts the entry in that same transaction, so the change
// and its entry commit (or roll back) together; FinishAudit then records
// the answer's status and outcome, or inserts the entry when no
// transaction wrote it (a single-statement change, a refusal).
type PendingAudit struct {
	mu    sync.Mutex
	entry AuditEntry
	id    int64 // the row inserted in a transaction; 0: none yet
	busy  bool  // inserting: the insert's own callback must not recurse
}

type auditKey struct{}

// auditUser is the user of ctx's pending audit entry: who makes the change
// ("" when no request made it).
func auditUser(ctx context.Context) string {
	if p, _ := ctx.Value(auditKey{}).(*PendingAudit); p != nil {
		return p.entry.User
	}
	return ""
}

// WithAudit returns ctx carrying p for the store's writes.
func WithAudit(ctx context.Context, e AuditEntry) (context.Context, *PendingAudit) {
	if e.At.IsZero() {
		e.At = now6()
	}
	p := &PendingAudit{entry: e}
	return context.WithValue(ctx, auditKey{}, p), p
}

// registerAuditCallback makes every create, update, delete and exec inside
// a transaction write the context's pending audit entry first time round.
func registerAuditCallback(db *gorm.DB) error {
	cb := db.Callback()
	for _, r := range []struct {
		name string
		reg  func() error
	}{
		{"create", func() error { return cb.Create().After("gorm:create").Register("beluga:audit", auditInTx) }},
		{"update", func() error { return cb.Update().After("gorm:update").Register("beluga:audit", auditInTx) }},
		{"delete", func() error { return cb.Delete().After("gorm:delete").Register("beluga:audit", auditInTx) }},
		{"raw", func() error { return cb.Raw().After("gorm:raw").Register("beluga:audit", auditInTx) }},
	} {
		if err := r.reg(); err != nil {
			return fmt.Errorf("register the audit callback on %s: %w", r.name, err)
		}
	}
	return nil
}

func auditInTx(db *gorm.DB) {
	if db.Error != nil || db.Statement.Context == nil {
		return
	}
	p, _ := db.Statement.Context.Value(auditKey{}).(*PendingAudit)
	if p == nil {
		return
	}
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); !inTx || db.Statement.Table == "audit_log" {
		return
	}
	p.mu.Lock()
	if p.id != 0 || p.busy {
		p.mu.Unlock()
		return
	}
	p.busy = true
	e := p.entry
	p.mu.Unlock()
	e.ID = 0
	err := db.Session(&gorm.Session{NewDB: true}).Create(&e).Error
	p.mu.Lock()
	p.busy = false
	if err == nil {
		p.id = e.ID
	}
	p.mu.Unlock()
	if err != nil {
		_ = db.AddError(fmt.Errorf("write the audit entry: %w", err)) // the change must not commit without it
	}
}

// AuditFinish records how the change ended: the status and outcome on the
// entry a transaction wrote, or a new entry when none did (or its
// transaction rolled back).
func (s *Store) AuditFinish(ctx context.Context, p *PendingAudit, status int, outcome string) error {
	p.mu.Lock()
	e, id := p.entry, p.id
	p.mu.Unlock()
	e.Status, e.Outcome = status, outcome
	db := s.db.WithContext(context.WithoutCancel(ctx))
	db = db.WithContext(context.WithValue(db.Statement.Context, auditKey{}, (*PendingAudit)(nil)))
	if id != 0 {
		res := db.Model(&AuditEntry{}).Where("id = ?", id).Updates(map[string]any{"status": status, "outcome": outcome})
		if res.Error != nil {
			return fmt.Errorf("finish audit entry %d: %w", id, res.Error)
		}
		if res.RowsAffected > 0 {
			return nil
		}
	}
	e.ID = 0
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	if err := db.Create(&e).Error; err != nil {
		return fmt.Errorf("write audit entry: %w", err)
	}
	return nil
}
