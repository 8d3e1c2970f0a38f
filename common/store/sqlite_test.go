package store_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// A file written by the driver the store used before reads the same with
// the store's driver, times included, and the other way round: both write
// times as the same text.
func TestSQLiteFileReadableAcrossDrivers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := store.OpenWithOldDriver(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	write := func(s *store.Store, name string) {
		t.Helper()
		inst := newInstance(t, s, model.WorkflowRunning)
		tk := addTask(t, s, inst.ID, name, model.TaskSubmitted, "")
		at := time.Date(2026, 12, 2, 1, 2, 3, 456789000, time.UTC)
		if ok, err := s.MarkDispatched(ctx, []store.Dispatch{{ID: tk.ID, Host: "w", Time: at}}); err != nil || !ok[0] {
			t.Fatalf("dispatch %s: %v %v", name, ok, err)
		}
	}
	read := func(s *store.Store) map[string]model.TaskInstance {
		t.Helper()
		var ids []int64
		for _, id := range mustRaw(t, s, "task_instance", "id") {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, n)
		}
		out := map[string]model.TaskInstance{}
		for _, id := range ids {
			ti, err := s.GetTaskInstance(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			out[ti.Name] = ti
		}
		return out
	}
	write(old, "by-old")
	before := read(old)
	old.Close()

	s, err := store.Open(ctx, "sqlite://"+path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if applied, err := s.Migrate(ctx); err != nil || len(applied) != 0 {
		t.Fatalf("migrate an existing file: applied %v, err %v", applied, err)
	}
	if got := read(s)["by-old"]; !got.DispatchTime.Equal(*before["by-old"].DispatchTime) || got.Host != "w" || got.State != model.TaskDispatched {
		t.Fatalf("old row read by the new driver: %+v, want %+v", got, before["by-old"])
	}
	write(s, "by-new")
	now := read(s)
	s.Close()

	times, err := store.RawText(oldAgain(t, path), "task_instance", "dispatch_time")
	if err != nil {
		t.Fatal(err)
	}
	shape := regexp.MustCompile(`^2026-12-02 01:02:03\.456789\+00:00$`)
	for _, v := range times {
		if !shape.MatchString(v) {
			t.Errorf("dispatch_time stored as %q, want the old driver's text %s", v, shape)
		}
	}
	again := read(oldAgain(t, path))
	for name, want := range now {
		got := again[name]
		if !got.DispatchTime.Equal(*want.DispatchTime) {
			t.Errorf("%s read by the old driver: %+v, want %+v", name, got, want)
		}
	}
}

func oldAgain(t *testing.T, path string) *store.Store {
	t.Helper()
	s, err := store.OpenWithOldDriver(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustRaw(t *testing.T, s *store.Store, table, col string) []string {
	t.Helper()
	v, err := store.RawColumn(s, table, col)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
