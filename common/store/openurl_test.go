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

func TestParseURLDialects(t *testing.T) {
	for _, tc := range []struct {
		url, dialect string
		dsnHas       string // in the DSN when ok
		errHas       string // in the error, else ok
	}{
		{url: "mysql://root@127.0.0.1/beluga", dialect: "mysql", dsnHas: "tcp(127.0.0.1:3306)/beluga"},
		{url: "postgres://u:pw@127.0.0.1:5432/beluga?sslmode=disable", dialect: "postgres", dsnHas: "timezone=UTC"},
		{url: "postgresql://u@db/beluga", dialect: "postgres", dsnHas: "postgresql://u@db/beluga?timezone=UTC"},
		{url: "postgres://u@db/beluga?timezone=Europe%2FParis", dialect: "postgres", dsnHas: "timezone=Europe%2FParis"},
		{url: "postgres://u:secret@db:5432/", errHas: "postgres needs a database name"},
		{url: "mysql://u:secret@db:3306", errHas: "mysql needs a database name"},
		{url: "oracle://u:secret@db/x", errHas: "scheme must be mysql://, postgres:// or sqlite://"},
	} {
		d, dsn, err := store.ParseURL(tc.url)
		switch {
		case tc.errHas != "":
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("%s: error %v, want one with %q", tc.url, err, tc.errHas)
			} else if strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: the error shows the password: %v", tc.url, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case d != tc.dialect || !strings.Contains(dsn, tc.dsnHas):
			t.Errorf("%s: dialect %q dsn %q, want %q with %q", tc.url, d, dsn, tc.dialect, tc.dsnHas)
		}
	}
}
