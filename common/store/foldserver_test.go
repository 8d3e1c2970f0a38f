package store_test

import (
	"context"
	"errors"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
)

// openServerDB opens and migrates the server database at url.
func openServerDB(t *testing.T, url string) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, url, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// On MySQL the hot writes of a term check the fence inside their first
// statement: a termed dispatch or report batch costs the server as many
// statements (prepares and closes of prepared ones included) as the same
// write unfenced (epoch 0), in the small and the batched shapes.
func TestFoldedTermCheckCostsNoStatementOnMySQL(t *testing.T) {
	ctx := context.Background()
	s := openServerDB(t, mariadbtest.URL(t))
	store.SingleConn(s)
	s.ProjectCreate(ctx, "demo", "")
	s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
	inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TermBegin(ctx, 3, "m1"); err != nil {
		t.Fatal(err)
	}
	var tasks []*model.TaskInstance
	for range 12 {
		tasks = append(tasks, &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1})
	}
	if err := s.Term(3).TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	count := func(what string, f func() error) int64 {
		t.Helper()
		q0, err := store.SessionStatements(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		q1, err := store.SessionStatements(s)
		if err != nil {
			t.Fatal(err)
		}
		return q1 - q0 - 1 // the second SHOW
	}
	now := time.Now()
	// statements[view][shape]; view 0 is unfenced, 1 the term's.
	var statements [2]map[string]int64
	for v, view := range []*store.Store{s, s.Term(3)} {
		ts := tasks[6*v : 6*v+6]
		var many []model.Dispatch
		var acks []model.Report
		for _, tk := range ts[1:] {
			many = append(many, model.Dispatch{ID: tk.ID, Host: "w", Time: now})
			acks = append(acks, model.Report{ID: tk.ID, Kind: model.ReportAck, Host: "w", LogPath: "/l"})
		}
		dispatched := func(ds []model.Dispatch) func() error {
			return func() error {
				ok, err := view.TaskMarkDispatched(ctx, ds)
				for i := range ok {
					if !ok[i] && err == nil {
						err = errors.New("a task was not dispatched")
					}
				}
				return err
			}
		}
		applied := func(rs []model.Report) func() error {
			return func() error {
				out, err := view.TaskApplyReports(ctx, rs)
				for i := range out {
					if out[i] != model.ReportApplied && err == nil {
						err = errors.New("a report was not applied")
					}
				}
				return err
			}
		}
		statements[v] = map[string]int64{
			"dispatch one":  count("dispatch one", dispatched([]model.Dispatch{{ID: ts[0].ID, Host: "w", Time: now}})),
			"dispatch many": count("dispatch many", dispatched(many)),
			"ack one":       count("ack one", applied([]model.Report{{ID: ts[0].ID, Kind: model.ReportAck, Host: "w", LogPath: "/l"}})),
			"ack many":      count("ack many", applied(acks)),
		}
	}
	t.Logf("statements (unfenced, in a term): %v", statements)
	for shape, n := range statements[0] {
		if statements[1][shape] != n {
			t.Errorf("%s: %d statements in a term, %d unfenced: the term check costs a statement of its own", shape, statements[1][shape], n)
		}
	}
}

// The folded check holds the fence row until the commit, even under READ
// COMMITTED (where a plain subquery of an UPDATE does not lock): a new
// term's fence write waits for the old term's hot write in flight, which
// then commits under the old term. On each server dialect, the fence write
// is seen waiting in the server's list of sessions.
func TestFoldedTermCheckHoldsTheFence(t *testing.T) {
	for _, tc := range []struct {
		dialect string
		setup   func(t *testing.T, writer *store.Store)
		waiting string // counts the fence writes in flight
		list    string // the sessions, for a failure
	}{
		{dialect: "mysql",
			setup: func(t *testing.T, writer *store.Store) {
				store.SingleConn(writer)
				if err := store.ExecRaw(writer, `SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED`); err != nil {
					t.Fatal(err)
				}
			},
			waiting: `SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND info LIKE 'UPDATE fence SET%'`,
			list:    `SELECT GROUP_CONCAT(CONCAT(id, ' ', COALESCE(db, '-'), ' ', COALESCE(state, '-'), ' ', COALESCE(info, '-')) SEPARATOR '; ') FROM information_schema.processlist`},
		{dialect: "postgres",
			setup: func(*testing.T, *store.Store) {}, // READ COMMITTED is the default
			waiting: `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'UPDATE fence SET%'
				AND wait_event_type = 'Lock'`,
			list: `SELECT COALESCE(string_agg(pid || ' ' || state || ' ' || COALESCE(wait_event_type, '-') || ' ' || query, '; '), '')
				FROM pg_stat_activity WHERE datname = current_database()`},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			ctx := context.Background()
			url := testDialectNamed(t, tc.dialect).url(t)
			writer, other := openServerDB(t, url), openServerDB(t, url)
			tc.setup(t, writer)
			if _, err := other.ProjectCreate(ctx, "demo", "before"); err != nil {
				t.Fatal(err)
			}
			if err := other.TermBegin(ctx, 3, "m1"); err != nil {
				t.Fatal(err)
			}
			held, release, wrote := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			t.Cleanup(free) // a failed test must not leave the write holding the database
			go func() {
				wrote <- store.FoldedExec(writer.Term(3), ctx, `UPDATE project SET description = ? WHERE name = ?`, []any{"term 3", "demo"},
					func() { close(held); <-release })
			}()
			select {
			case <-held:
			case err := <-wrote:
				t.Fatalf("folded write: %v", err)
			}
			begun := make(chan error, 1)
			go func() { begun <- other.TermBegin(ctx, 4, "m2") }()
			// The fence write is seen running while the folded write holds
			// its lock: a lone-row update does not run for long otherwise.
			if wait.Poll(30*time.Second, "the fence write waiting on the server", func() bool {
				n, err := store.QueryInt(other, tc.waiting)
				if err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-begun:
					t.Fatalf("the new term was recorded (%v) while the old term's write was in flight", err)
				default:
				}
				return n > 0
			}) != nil {
				list, _ := store.QueryString(other, tc.list)
				t.Fatalf("the fence write neither waited nor finished; sessions: %s", list)
			}
			free()
			if err := <-wrote; err != nil {
				t.Fatalf("the old term's write in flight: %v", err)
			}
			if err := <-begun; err != nil {
				t.Fatalf("begin term 4: %v", err)
			}
			if err := store.FoldedExec(writer.Term(3), ctx, `UPDATE project SET description = ? WHERE name = ?`, []any{"late", "demo"}, func() {}); !errors.Is(err, store.ErrFenced) {
				t.Fatalf("a write of term 3 after term 4 began: %v", err)
			}
		})
	}
}
