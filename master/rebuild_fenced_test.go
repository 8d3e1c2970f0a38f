package master

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// fencedRunner builds, on a SQLite store, a runner of term 1 for an
// instance whose one task is paused, after term 2 has begun: every write of
// term 1 is refused.
func fencedRunner(t *testing.T, mode model.ActionKind) (*runner, *term, *observer.ObservedLogs) {
	t.Helper()
	ctx := context.Background()
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(zapcore.NewTee(core, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).Core()))
	st := oneTaskStore(t, log)
	inst, err := st.InstanceCreateRun(ctx, store.RunRequest{Project: "p", Workflow: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.TermBegin(ctx, 1, "old"); err != nil {
		t.Fatal(err)
	}
	old := st.Term(1)
	now := time.Now().UTC()
	paused := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskPaused,
		Attempt: 1, WorkerGroup: model.DefaultWorkerGroup, SubmitTime: &now}
	if err := old.TaskInsertAttempts(ctx, nil, []*model.TaskInstance{paused}); err != nil {
		t.Fatal(err)
	}
	if err := st.TermBegin(ctx, 2, "new"); err != nil { // the newer leader
		t.Fatal(err)
	}
	wd, err := st.WorkflowDefinition(ctx, inst.DefinitionID)
	if err != nil {
		t.Fatal(err)
	}
	def, err := newDefinition(wd.SpecJSON)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.NewMemory()
	tm := &term{host: "old", reg: reg, epoch: 1, log: log, runners: map[int64]*runner{}, fencedCh: make(chan struct{})}
	tm.store = old.OnFenced(tm.fenced) // as lead makes it: the view tells the term
	tm.ctx, tm.cancel = context.WithCancel(ctx)
	t.Cleanup(tm.cancel)
	tm.writes = newRunnerWrites(tm.store, log)
	go tm.writes.run(tm.ctx)
	tm.wheel = newWheel(nil, tm.fire)
	tm.disp = newDispatcher(log, tm.store, reg, nil)
	r := newRunner(tm, log, inst, def, mode)
	r.graph = def.graph
	return r, tm, logs
}

// TestRebuildResumeFenced: a runner resuming a paused instance for a term
// that a newer one has fenced out (the recover.go "resume paused tasks"
// site) reports the term fenced and gives up at once, instead of retrying
// the refused write until its context ends.
func TestRebuildResumeFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, tm, _ := fencedRunner(t, model.ActionResume)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	began := time.Now()
	ok := r.rebuild(rctx)
	took := time.Since(began)
	select {
	case <-tm.fencedCh:
	default:
		t.Fatalf("the term was not told it is fenced (rebuild returned %v after %s)", ok, took.Round(time.Millisecond))
	}
	if ok {
		t.Fatal("rebuild went on for a fenced term")
	}
	if took > 2*time.Second {
		t.Fatalf("rebuild retried a fenced write for %s", took)
	}
}

// TestFinishFencedLogsLostTerm: an instance end refused for a newer term is
// not logged as finished; the term logs once that it lost its term.
func TestFinishFencedLogsLostTerm(t *testing.T) {
	t.Parallel()
	r, tm, logs := fencedRunner(t, "start")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.finish(ctx)
	r.finish(ctx) // a second refused write of the same term logs no more
	select {
	case <-tm.fencedCh:
	default:
		t.Fatal("the term was not told it is fenced")
	}
	if n := logs.FilterMessage("workflow instance finished").Len(); n != 0 {
		t.Fatalf("a fenced-out master logged %d instance(s) finished", n)
	}
	if n := logs.FilterMessageSnippet("lost the leader term").Len(); n != 1 {
		t.Fatalf("lost-term logged %d times, want once", n)
	}
}

// oneTaskStore is a migrated SQLite store of a test's own with project p
// and its workflow w of one task a.
func oneTaskStore(t *testing.T, log *zap.Logger) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "b.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ProjectCreate(ctx, "p", ""); err != nil {
		t.Fatal(err)
	}
	wf, err := spec.Parse([]byte("name: w\ntasks:\n  - {name: a, command: \"true\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.WorkflowPut(ctx, "p", wf); err != nil {
		t.Fatal(err)
	}
	return st
}
