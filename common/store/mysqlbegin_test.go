package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
)

// On MySQL a transaction begins with its first statement: one that sends
// nothing costs the server nothing (no START TRANSACTION, no COMMIT), and
// one that does is still one transaction, its statements undone together
// by a rollback, plain or prepared, first or not.
func TestMySQLTransactionBeginsWithItsFirstStatement(t *testing.T) {
	ctx := context.Background()
	s := openMySQL(t, mariadbtest.URL(t))
	store.SingleConn(s)
	if _, err := s.CreateProject(ctx, "demo", "before"); err != nil {
		t.Fatal(err)
	}
	q0, err := store.SessionStatements(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.InTx(s, func(func(bool, string, ...any) error) error { return nil }); err != nil {
		t.Fatal(err)
	}
	q1, err := store.SessionStatements(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := q1 - q0 - 1; n != 0 {
		t.Errorf("an empty transaction sent %d statements, want none", n)
	}
	undone := errors.New("undo")
	for _, tc := range []struct {
		name    string
		prepare []bool // per statement
	}{{"plain", []bool{false, false}}, {"prepared first", []bool{true, false}}, {"prepared second", []bool{false, true}}} {
		err := store.InTx(s, func(exec func(bool, string, ...any) error) error {
			for i, p := range tc.prepare {
				if err := exec(p, `UPDATE project SET description = ? WHERE name = ?`, tc.name+string(rune('0'+i)), "demo"); err != nil {
					return err
				}
			}
			return undone
		})
		if !errors.Is(err, undone) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		p, err := s.GetProject(ctx, "demo")
		if err != nil {
			t.Fatal(err)
		}
		if p.Description != "before" {
			t.Errorf("%s: a rolled-back transaction left description %q", tc.name, p.Description)
		}
	}
	if err := store.InTx(s, func(exec func(bool, string, ...any) error) error {
		return exec(false, `UPDATE project SET description = ? WHERE name = ?`, "after", "demo")
	}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.GetProject(ctx, "demo"); err != nil || p.Description != "after" {
		t.Fatalf("committed transaction: %+v %v", p, err)
	}
}
