package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
)

// A relative SQLite path (the default data dir's "beluga-data/beluga.db")
// is a file under the working directory: the driver's URI once took its
// first element for a host and `beluga standalone` failed to start.
func TestRelativeSQLitePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("beluga-data", 0o755); err != nil {
		t.Fatal(err)
	}
	_, dsn, err := store.ParseURL("sqlite://beluga-data/beluga.db")
	if err != nil || !strings.Contains(dsn, filepath.Join(dir, "beluga-data", "beluga.db")) {
		t.Fatalf("dsn %q, %v: want the file under %s", dsn, err, dir)
	}
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite://beluga-data/beluga.db", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "beluga-data", "beluga.db")); err != nil {
		t.Fatalf("the database is not under the working directory: %v", err)
	}
}
