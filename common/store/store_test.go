package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
)

// each runs a conformance test against SQLite and a real MariaDB.
func each(t *testing.T, f func(t *testing.T, s *store.Store)) {
	t.Helper()
	drivers := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "b.db") },
		"mysql":  func(t *testing.T) string { return mariadbtest.URL(t) },
	}
	for name, url := range drivers {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := store.Open(ctx, url(t), zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if _, err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			applied, err := s.Migrate(ctx)
			if err != nil || len(applied) != 0 {
				t.Fatalf("second migrate applied %v, err %v", applied, err)
			}
			f(t, s)
		})
	}
}

func mustSpec(t *testing.T, y string) *spec.Workflow {
	t.Helper()
	w, err := spec.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

const diamond = `
name: diamond
tasks:
  - {name: a, command: "true"}
  - {name: b, command: "true", depends_on: [a]}
  - {name: c, command: "true", depends_on: [a]}
  - {name: d, command: "true", depends_on: [b, c]}
`

func TestProjectsAndVersions(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.CreateProject(ctx, "demo", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateProject(ctx, "demo", ""); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate project: got %v, want ErrConflict", err)
		}
		if _, _, err := s.PutWorkflow(ctx, "nope", mustSpec(t, diamond)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing project: got %v", err)
		}
		d1, created, err := s.PutWorkflow(ctx, "demo", mustSpec(t, diamond))
		if err != nil || !created || d1.Version != 1 {
			t.Fatalf("first put: %+v %v %v", d1, created, err)
		}
		d2, created, err := s.PutWorkflow(ctx, "demo", mustSpec(t, diamond))
		if err != nil || created || d2.Version != 1 {
			t.Fatalf("identical put made a version: %+v %v %v", d2, created, err)
		}
		changed := mustSpec(t, diamond)
		changed.Tasks[3].Command = "echo changed"
		d3, created, err := s.PutWorkflow(ctx, "demo", changed)
		if err != nil || !created || d3.Version != 2 {
			t.Fatalf("changed put: %+v %v %v", d3, created, err)
		}
		got, err := s.GetWorkflow(ctx, "demo", "diamond", 1)
		if err != nil || got.Version != 1 || len(got.SpecJSON) == 0 {
			t.Fatalf("get v1: %+v %v", got, err)
		}
		list, err := s.ListWorkflows(ctx, "demo")
		if err != nil || len(list) != 1 || list[0].Version != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		vs, err := s.ListWorkflowVersions(ctx, "demo", "diamond")
		if err != nil || len(vs) != 2 || vs[0].Version != 2 {
			t.Fatalf("versions: %+v %v", vs, err)
		}
		inst, err := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteWorkflow(ctx, "demo", "diamond"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("delete with a live instance: got %v", err)
		}
		if err := s.FinishWorkflowInstance(ctx, inst.ID, model.WorkflowSucceeded, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteWorkflow(ctx, "demo", "diamond"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetWorkflow(ctx, "demo", "diamond", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
	})
}

func TestCommandConsumedOnce(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.CreateProject(ctx, "demo", "")
		if _, _, err := s.PutWorkflow(ctx, "demo", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
		const runs = 20
		for i := 0; i < runs; i++ {
			inst, err := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond", Params: map[string]string{"i": "x"}})
			if err != nil || inst.State != model.WorkflowSubmitted {
				t.Fatalf("run: %+v %v", inst, err)
			}
		}
		// Two claimers race; every instance is claimed exactly once.
		var mu sync.Mutex
		seen := map[int64]string{}
		var wg sync.WaitGroup
		for _, host := range []string{"m1", "m2"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					got, err := s.ClaimCommands(ctx, host, 1, 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, g := range got {
						if prev, dup := seen[g.ID]; dup {
							t.Errorf("instance %d claimed by %s and %s", g.ID, prev, host)
						}
						seen[g.ID] = host
						if g.State != model.WorkflowRunning || g.Params["i"] != "x" || g.StartTime == nil {
							t.Errorf("claimed instance: %+v", g)
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != runs {
			t.Fatalf("claimed %d of %d", len(seen), runs)
		}
	})
}

func TestReportsMoveForwardOnly(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.CreateProject(ctx, "demo", "")
		s.PutWorkflow(ctx, "demo", mustSpec(t, diamond))
		inst, _ := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		now := time.Now().UTC()
		task := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now}
		if err := s.InsertTaskInstances(ctx, []*model.TaskInstance{task}); err != nil || task.ID == 0 {
			t.Fatalf("insert: %v id=%d", err, task.ID)
		}
		ok, err := s.MarkDispatched(ctx, []store.Dispatch{{ID: task.ID, Host: "w1", Time: now}})
		if err != nil || !ok[0] {
			t.Fatalf("dispatch: %v %v", ok, err)
		}
		start := now.Add(1500 * time.Microsecond)
		end := start.Add(2500 * time.Microsecond)
		out, err := s.ApplyReports(ctx, []store.Report{
			{ID: task.ID, Kind: store.ReportAck, Host: "w1", LogPath: "/l"},
			{ID: task.ID, Kind: store.ReportRunning, Host: "w1", PID: 42, StartTime: start},
			{ID: task.ID, Kind: store.ReportAck, Host: "w1", LogPath: "/l"},        // re-sent
			{ID: task.ID, Kind: store.ReportRunning, Host: "w2", StartTime: start}, // not its worker
			{ID: task.ID, Kind: store.ReportResult, Host: "w1", State: model.TaskSucceeded, StartTime: start, EndTime: end},
			{ID: task.ID, Kind: store.ReportResult, Host: "w1", State: model.TaskSucceeded, StartTime: start, EndTime: end},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.ReportOutcome{store.Applied, store.Applied, store.Duplicate, store.Foreign, store.Applied, store.Duplicate}
		for i := range want {
			if out[i] != want[i] {
				t.Fatalf("report %d: outcome %v, want %v (all %v)", i, out[i], want[i], out)
			}
		}
		got, err := s.GetTaskInstance(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != model.TaskSucceeded || got.PID != 42 || got.ExitCode == nil || *got.ExitCode != 0 || got.LogPath != "/l" {
			t.Fatalf("task after reports: %+v", got)
		}
		// Times keep at least millisecond precision.
		if got.StartTime.Sub(start).Abs() > time.Millisecond || got.EndTime.Sub(end).Abs() > time.Millisecond {
			t.Fatalf("times lost precision: start %v want %v, end %v want %v", got.StartTime, start, got.EndTime, end)
		}
		// A short task's running and result in one batch: one update, both applied.
		t3 := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "c", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		s.InsertTaskInstances(ctx, []*model.TaskInstance{t3})
		s.MarkDispatched(ctx, []store.Dispatch{{ID: t3.ID, Host: "w1", Time: now}})
		out, err = s.ApplyReports(ctx, []store.Report{
			{ID: t3.ID, Kind: store.ReportAck, Host: "w1", LogPath: "/c"},
			{ID: t3.ID, Kind: store.ReportRunning, Host: "w1", PID: 7, StartTime: start},
			{ID: t3.ID, Kind: store.ReportResult, Host: "w1", State: model.TaskFailed, ExitCode: 2, EndTime: end},
		})
		if err != nil || out[0] != store.Applied || out[1] != store.Applied || out[2] != store.Applied {
			t.Fatalf("merged batch: %v %v", out, err)
		}
		got, _ = s.GetTaskInstance(ctx, t3.ID)
		if got.State != model.TaskFailed || got.PID != 7 || *got.ExitCode != 2 || got.StartTime == nil || got.StartTime.Sub(start).Abs() > time.Millisecond {
			t.Fatalf("merged task: %+v", got)
		}
		// A failed send is taken back only while unacked.
		t2 := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "b", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		s.InsertTaskInstances(ctx, []*model.TaskInstance{t2})
		s.MarkDispatched(ctx, []store.Dispatch{{ID: t2.ID, Host: "w1", Time: now}})
		if ok, err := s.ResetDispatch(ctx, t2.ID, "w1"); err != nil || !ok {
			t.Fatalf("reset unacked: %v %v", ok, err)
		}
		s.MarkDispatched(ctx, []store.Dispatch{{ID: t2.ID, Host: "w2", Time: now}})
		if out, _ := s.ApplyReports(ctx, []store.Report{{ID: t2.ID, Kind: store.ReportAck, Host: "w1", LogPath: "/x"}}); out[0] != store.Foreign {
			t.Fatalf("late ack from the old worker: %v", out)
		}
		s.ApplyReports(ctx, []store.Report{{ID: t2.ID, Kind: store.ReportAck, Host: "w2", LogPath: "/y"}})
		if ok, _ := s.ResetDispatch(ctx, t2.ID, "w2"); ok {
			t.Fatal("reset an acked dispatch")
		}
	})
}

func TestFencing(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.CreateProject(ctx, "demo", "")
		s.PutWorkflow(ctx, "demo", mustSpec(t, diamond))
		for i := 0; i < 2; i++ {
			s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		}
		if err := s.BeginTerm(ctx, 5, "m1"); err != nil {
			t.Fatal(err)
		}
		old := s.Term(5)
		got, err := old.ClaimCommands(ctx, "m1", 5, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim in term 5: %v %v", got, err)
		}
		if err := s.BeginTerm(ctx, 5, "m2"); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("same epoch again: %v", err)
		}
		if err := s.BeginTerm(ctx, 7, "m2"); err != nil {
			t.Fatal(err)
		}
		// The old term can no longer claim, write tasks or end instances.
		if _, err := old.ClaimCommands(ctx, "m1", 5, 1); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale claim: %v", err)
		}
		task := &model.TaskInstance{WorkflowInstanceID: got[0].ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		if err := old.InsertTaskInstances(ctx, []*model.TaskInstance{task}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale insert: %v", err)
		}
		if err := old.FinishWorkflowInstance(ctx, got[0].ID, model.WorkflowFailed, time.Now(), ""); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale finish: %v", err)
		}
		cur := s.Term(7)
		adopted, err := cur.AdoptUnfinished(ctx, "m2")
		if err != nil || len(adopted) != 1 || adopted[0].Host != "m2" || adopted[0].Epoch != 7 {
			t.Fatalf("adopt: %+v %v", adopted, err)
		}
		if err := cur.InsertTaskInstances(ctx, []*model.TaskInstance{task}); err != nil {
			t.Fatal(err)
		}
		cur.MarkDispatched(ctx, []store.Dispatch{{ID: task.ID, Host: "w1", Time: time.Now()}})
		on, _ := cur.TasksOnHost(ctx, "w1")
		if len(on) != 1 {
			t.Fatalf("tasks on w1: %+v", on)
		}
		changed, err := cur.NeedFaultTolerance(ctx, []int64{task.ID}, "w1")
		if err != nil || len(changed) != 1 {
			t.Fatalf("nft: %v %v", changed, err)
		}
		next := &model.TaskInstance{WorkflowInstanceID: got[0].ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 2}
		if err := cur.InsertAttempts(ctx, []int64{task.ID}, []*model.TaskInstance{next}); err != nil || next.ID == 0 {
			t.Fatalf("attempts: %v", err)
		}
		prev, _ := s.GetTaskInstance(ctx, task.ID)
		if !prev.Superseded || prev.State != model.TaskNeedFaultTolerance {
			t.Fatalf("previous attempt: %+v", prev)
		}
	})
}
