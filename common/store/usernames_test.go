package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestUserNamesAreNormal: a user name is stored trimmed and lower-cased,
// every spelling of it finds that one user, and nothing else does, on
// MariaDB too, whose collation would match "ädmin" to "admin".
func TestUserNamesAreNormal(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, err := s.UserCreate(ctx, " Admin ", model.RoleAdmin, "x")
		if err != nil || u.Name != "admin" {
			t.Fatalf("created %+v, %v", u, err)
		}
		for _, n := range []string{"admin", "Admin", "ADMIN ", "admin   ", " aDmIn"} {
			if got, err := s.UserGet(ctx, n); err != nil || got.ID != u.ID {
				t.Errorf("GetUser(%q) = %+v, %v", n, got, err)
			}
		}
		for _, n := range []string{"ädmin", "admın", "adm in"} {
			if got, err := s.UserGet(ctx, n); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetUser(%q) = %+v, %v; want not found", n, got, err)
			}
		}
		if _, err := s.UserCreate(ctx, "ADMIN", model.RoleUser, "x"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second spelling of admin: %v, want a conflict", err)
		}
	})
}

// TestUserNamesFoldedAtUpgrade: migration 0028 stores the names users had
// before it in their normal form; on SQLite and PostgreSQL, where "Carol"
// and "carol" could both exist (MySQL's collation kept them apart), the one
// that would collide is left as it was.
func TestUserNamesFoldedAtUpgrade(t *testing.T) {
	for _, d := range testDialects {
		name := d.name
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := store.Open(ctx, d.url(t), zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if _, err := store.MigrateUpTo(s, ctx, 27); err != nil {
				t.Fatal(err)
			}
			old := []string{"Alice", "BOB", "dave"}
			if name != "mysql" {
				old = append(old, "carol", "Carol")
			}
			now := time.Now().UTC()
			for _, n := range old {
				if err := store.ExecRaw(s, `INSERT INTO app_user (name, role, password_hash, disabled, created_at, updated_at) VALUES (?, 'user', 'x', ?, ?, ?)`, n, false, now, now); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := store.RawColumn(s, "app_user", "name")
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			want := []string{"alice", "bob", "dave"}
			if name != "mysql" {
				want = []string{"Carol", "alice", "bob", "carol", "dave"}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("names after 0028: %q, want %q", got, want)
			}
		})
	}
}
