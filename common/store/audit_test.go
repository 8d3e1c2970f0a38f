package store_test

import (
	"context"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestAuditInTheChangesTransaction: a change made in a transaction writes
// its audit entry in that transaction (it is there before the answer is
// known); FinishAudit completes that same row. A change without a
// transaction gets its entry from FinishAudit.
func TestAuditInTheChangesTransaction(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.UserCreate(ctx, "ann", model.RoleUser, "x"); err != nil {
			t.Fatal(err)
		}
		actx, p := store.WithAudit(ctx, store.AuditEntry{User: "admin", Action: "PATCH /api/v1/users/{name}", Resource: "/api/v1/users/ann", Address: "10.0.0.1"})
		on := true
		if _, _, err := s.UserUpdate(actx, "ann", model.UserChange{Disabled: &on}); err != nil {
			t.Fatal(err)
		}
		es, err := s.AuditList(ctx, store.AuditFilter{})
		if err != nil || len(es) != 1 || es[0].Status != 0 || es[0].Resource != "/api/v1/users/ann" || es[0].User != "admin" {
			t.Fatalf("after the change's transaction: %+v %v", es, err)
		}
		if err := s.AuditFinish(ctx, p, 200, "ok"); err != nil {
			t.Fatal(err)
		}
		es, _ = s.AuditList(ctx, store.AuditFilter{})
		if len(es) != 1 || es[0].Status != 200 || es[0].Outcome != "ok" {
			t.Fatalf("finished: %+v", es)
		}

		// No transaction (one statement): FinishAudit writes the entry.
		actx, p = store.WithAudit(ctx, store.AuditEntry{User: "admin", Action: "POST /api/v1/users", Resource: "/api/v1/users"})
		if _, err := s.UserCreate(actx, "bo", model.RoleUser, "x"); err != nil {
			t.Fatal(err)
		}
		if es, _ = s.AuditList(ctx, store.AuditFilter{}); len(es) != 1 {
			t.Fatalf("a single statement wrote an entry: %+v", es)
		}
		if err := s.AuditFinish(ctx, p, 201, "ok"); err != nil {
			t.Fatal(err)
		}
		if es, _ = s.AuditList(ctx, store.AuditFilter{}); len(es) != 2 || es[0].Status != 201 {
			t.Fatalf("after FinishAudit: %+v", es)
		}
	})
}
