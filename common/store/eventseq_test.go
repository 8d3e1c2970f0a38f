package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	schema "github.com/beluga-scheduler/beluga/sql"
)

// On SQLite an event's seq is its id from migration 0023 on. A file the
// old publisher left (rows numbered seq = id or above it, and rows not
// numbered yet) keeps every seq a reader may hold; the unnumbered rows are
// numbered after them, and new events follow above, so a reader resuming
// from a seq it read misses nothing and sees nothing twice. A crash part
// way through the migration (its first k statements applied, not
// recorded) ends the same when it runs again.
func TestEventSeqUpgrade(t *testing.T) {
	migs, err := schema.For("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, m := range migs {
		if m.Version == 23 {
			stmts = schema.Statements(m.SQL)
		}
	}
	if len(stmts) == 0 {
		t.Fatal("no sqlite migration 0023")
	}
	for k := range len(stmts) + 1 {
		t.Run(fmt.Sprintf("crashed after %d", k), func(t *testing.T) { upgradeEventSeq(t, stmts[:k]) })
	}
}

func upgradeEventSeq(t *testing.T, crashed []string) {
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "b.db"), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// The schema before 0023, with six rows as the old code left them.
	if _, err := store.MigrateUpTo(s, ctx, 22); err != nil {
		t.Fatal(err)
	}
	// The rows are made by today's code, which writes columns and tables
	// of later files (0029, 0042, 0049, 0052) and reads a table of 0051 (an
	// apply asks whether its project is promotion-gated): they are there only while
	// the rows are made.
	for _, q := range []string{
		`ALTER TABLE workflow_definition ADD COLUMN applied_by VARCHAR(64) NOT NULL DEFAULT ''`,
		`ALTER TABLE command ADD COLUMN not_before DATETIME`,
		`ALTER TABLE workflow_definition ADD COLUMN git_commit VARCHAR(64) NOT NULL DEFAULT ''`,
		`ALTER TABLE command ADD COLUMN version INT NOT NULL DEFAULT 0`,
		`CREATE TABLE dataset_ref (id INTEGER PRIMARY KEY AUTOINCREMENT, project_id BIGINT, workflow_name VARCHAR(255), dataset VARCHAR(200),
		  role VARCHAR(16), grain VARCHAR(16), late_data VARCHAR(16), run_grain VARCHAR(16), task_name VARCHAR(255))`,
		`CREATE TABLE project_promotion (project_id BIGINT NOT NULL PRIMARY KEY, source_project VARCHAR(255) NOT NULL DEFAULT '',
			require_review BOOLEAN NOT NULL DEFAULT FALSE, alert_channels TEXT, updated_by VARCHAR(255) NOT NULL DEFAULT '', updated_at DATETIME NOT NULL)`,
	} {
		if err := store.ExecRaw(s, q); err != nil {
			t.Fatal(err)
		}
	}
	s.ProjectCreate(ctx, "demo", "")
	s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
	var runs []int64
	for range 6 {
		inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, inst.ID)
	}
	for _, q := range []string{`ALTER TABLE workflow_definition DROP COLUMN applied_by`, `ALTER TABLE command DROP COLUMN not_before`,
		`ALTER TABLE workflow_definition DROP COLUMN git_commit`, `ALTER TABLE command DROP COLUMN version`, `DROP TABLE dataset_ref`,
		`DROP TABLE project_promotion`} {
		if err := store.ExecRaw(s, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`UPDATE event SET seq = id WHERE id <= 3`,
		`UPDATE event SET seq = id + 10 WHERE id IN (4, 5)`, // a numbering above the ids
		`UPDATE event SET seq = NULL WHERE id = 6`,          // committed, not numbered yet
	} {
		if err := store.ExecRaw(s, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range crashed {
		if err := store.ExecRaw(s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if applied, err := s.Migrate(ctx); err != nil || len(applied) == 0 || !strings.HasPrefix(applied[0], "0023_") {
		t.Fatalf("upgrade applied %v: %v", applied, err)
	}

	cur, err := s.EventCursorNew(ctx)
	if err != nil || cur.Last != 16 {
		t.Fatalf("publisher cursor after the upgrade: %+v %v, want Last 16", cur, err)
	}
	if err := s.InstanceFinish(ctx, runs[0], model.WorkflowStopped, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	seqs := func(evs []model.Event) string {
		out := ""
		for _, e := range evs {
			out += fmt.Sprintf(" %d:%d/%s", e.Seq, e.InstanceID, e.State)
		}
		return out
	}
	all, err := s.EventList(ctx, 0, model.EventFilter{}, 100)
	want := fmt.Sprintf(" 1:%d/submitted 2:%d/submitted 3:%d/submitted 14:%d/submitted 15:%d/submitted 16:%d/submitted 17:%d/stopped",
		runs[0], runs[1], runs[2], runs[3], runs[4], runs[5], runs[0])
	if err != nil || seqs(all) != want {
		t.Fatalf("events after the upgrade:\n got%s\nwant%s (%v)", seqs(all), want, err)
	}
	if after, _ := s.EventList(ctx, 14, model.EventFilter{}, 100); seqs(after) != seqs(all[4:]) {
		t.Fatalf("a reader at 14 resumes with%s, want%s", seqs(after), seqs(all[4:]))
	}
	if evs, err := s.EventPublishFrom(ctx, &cur, 100); err != nil || seqs(evs) != seqs(all[6:]) {
		t.Fatalf("the publisher hands over%s (%v), want%s", seqs(evs), err, seqs(all[6:]))
	}
	if last, _ := s.EventLastSeq(ctx); last != 17 {
		t.Fatalf("last seq %d, want 17", last)
	}
}
