package store_test

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// A file written by the driver the store used before (glebarez/go-sqlite
// over modernc.org/sqlite, testdata/written-by-modernc.db.gz, made at
// migration 0036) reads the same with the store's driver, times included,
// and new rows are written with the same text: each is an ordered text in
// the older driver's layout, so comparisons in SQL stay right across the
// two.
func TestSQLiteFileReadableAcrossDrivers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	unzip(t, "testdata/written-by-modernc.db.gz", path)
	s, err := store.Open(ctx, "sqlite://"+path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate a file of the old driver: %v", err)
	}
	read := func() map[string]model.TaskInstance {
		t.Helper()
		out := map[string]model.TaskInstance{}
		for _, id := range mustRaw(t, s, "task_instance", "id") {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			ti, err := s.TaskGet(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			out[ti.Name] = ti
		}
		return out
	}
	at := time.Date(2026, 12, 2, 1, 2, 3, 456789000, time.UTC)
	if got := read()["by-old"]; got.DispatchTime == nil || !got.DispatchTime.Equal(at) || got.Host != "w" || got.State != model.TaskDispatched {
		t.Fatalf("old row read by the store's driver: %+v, want dispatched to w at %v", got, at)
	}
	inst := newInstance(t, s, model.WorkflowRunning)
	tk := addTask(t, s, inst.ID, "by-new", model.TaskSubmitted, "")
	if ok, err := s.TaskMarkDispatched(ctx, []model.Dispatch{{ID: tk.ID, Host: "w", Time: at}}); err != nil || !ok[0] {
		t.Fatalf("dispatch by-new: %v %v", ok, err)
	}
	if got := read()["by-new"]; got.DispatchTime == nil || !got.DispatchTime.Equal(at) {
		t.Fatalf("new row: %+v, want dispatched at %v", got, at)
	}
	times, err := store.RawText(s, "task_instance", "dispatch_time")
	if err != nil {
		t.Fatal(err)
	}
	shape := regexp.MustCompile(`^2026-12-02 01:02:03\.456789\+00:00$`)
	if len(times) != 2 {
		t.Fatalf("dispatch times %q, want 2", times)
	}
	for _, v := range times {
		if !shape.MatchString(v) {
			t.Errorf("dispatch_time stored as %q, want the old driver's text %s", v, shape)
		}
	}
}

// unzip writes the gzipped file src to dst.
func unzip(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustRaw(t *testing.T, s *store.Store, table, col string) []string {
	t.Helper()
	v, err := store.RawColumn(s, table, col)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
