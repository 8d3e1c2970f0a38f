package api

import (
	"errors"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// The constant dummy hash is a real bcrypt hash at the cost HashPassword
// uses, so a login for an unknown name does the same work as a wrong
// password; a malformed or cheaper one would answer faster.
func TestDummyHashIsRealAtDefaultCost(t *testing.T) {
	cost, err := bcrypt.Cost(dummyHash)
	if err != nil {
		t.Fatalf("dummy hash is not a bcrypt hash: %v", err)
	}
	if cost != bcrypt.DefaultCost {
		t.Fatalf("dummy hash cost %d, HashPassword uses %d", cost, bcrypt.DefaultCost)
	}
	if err := bcrypt.CompareHashAndPassword(dummyHash, []byte("some password")); !errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
		t.Fatalf("compare against the dummy hash: %v, want a mismatch", err)
	}
}
