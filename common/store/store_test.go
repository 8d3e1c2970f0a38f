package store_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// each runs a conformance test against every dialect of testDialects
// (SQLite, a real MariaDB, a real PostgreSQL), on a freshly migrated store.
func each(t *testing.T, f func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, d := range testDialects {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := store.Open(ctx, d.url(t), zap.NewNop())
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

func mustSpec(t testing.TB, y string) *spec.Workflow {
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
		if _, err := s.ProjectCreate(ctx, "demo", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ProjectCreate(ctx, "demo", ""); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate project: got %v, want ErrConflict", err)
		}
		if _, _, err := s.WorkflowPut(ctx, "nope", mustSpec(t, diamond)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing project: got %v", err)
		}
		d1, created, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		if err != nil || !created || d1.Version != 1 {
			t.Fatalf("first put: %+v %v %v", d1, created, err)
		}
		d2, created, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		if err != nil || created || d2.Version != 1 {
			t.Fatalf("identical put made a version: %+v %v %v", d2, created, err)
		}
		changed := mustSpec(t, diamond)
		changed.Tasks[3].Command = "echo changed"
		d3, created, err := s.WorkflowPut(ctx, "demo", changed)
		if err != nil || !created || d3.Version != 2 {
			t.Fatalf("changed put: %+v %v %v", d3, created, err)
		}
		got, err := s.WorkflowGet(ctx, "demo", "diamond", 1)
		if err != nil || got.Version != 1 || len(got.SpecJSON) == 0 {
			t.Fatalf("get v1: %+v %v", got, err)
		}
		list, err := s.WorkflowList(ctx, "demo")
		if err != nil || len(list) != 1 || list[0].Version != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		vs, err := s.WorkflowVersions(ctx, "demo", "diamond")
		if err != nil || len(vs) != 2 || vs[0].Version != 2 {
			t.Fatalf("versions: %+v %v", vs, err)
		}
		inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WorkflowDelete(ctx, "demo", "diamond"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("delete with a live instance: got %v", err)
		}
		if err := s.InstanceFinish(ctx, inst.ID, model.WorkflowSucceeded, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
		if err := s.WorkflowDelete(ctx, "demo", "diamond"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WorkflowGet(ctx, "demo", "diamond", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
	})
}

func TestCommandConsumedOnce(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
		const runs = 20
		for i := 0; i < runs; i++ {
			inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond", Params: map[string]string{"i": "x"}})
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
					got, err := s.InstanceClaimCommands(ctx, host, 1, 3)
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
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		inst, _ := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		now := time.Now().UTC()
		task := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now}
		if err := s.TaskInsert(ctx, []*model.TaskInstance{task}); err != nil || task.ID == 0 {
			t.Fatalf("insert: %v id=%d", err, task.ID)
		}
		ok, err := s.TaskMarkDispatched(ctx, []model.Dispatch{{ID: task.ID, Host: "w1", Time: now}})
		if err != nil || !ok[0] {
			t.Fatalf("dispatch: %v %v", ok, err)
		}
		start := now.Add(1500 * time.Microsecond)
		end := start.Add(2500 * time.Microsecond)
		out, err := s.TaskApplyReports(ctx, []model.Report{
			{ID: task.ID, Kind: model.ReportAck, Host: "w1", LogPath: "/l"},
			{ID: task.ID, Kind: model.ReportAck, Host: "w1", LogPath: "/l"}, // re-sent at once (a new leader)
		})
		// The re-send matches the row again: applied (the same values), never refused.
		if err != nil || out[0] != model.ReportApplied || out[1] != model.ReportApplied {
			t.Fatalf("ack and its re-send in one batch: %v %v", out, err)
		}
		out, err = s.TaskApplyReports(ctx, []model.Report{
			{ID: task.ID, Kind: model.ReportAck, Host: "w1", LogPath: "/l"},
			{ID: task.ID, Kind: model.ReportRunning, Host: "w1", PID: 42, StartTime: start},
			{ID: task.ID, Kind: model.ReportAck, Host: "w1", LogPath: "/l"},        // re-sent
			{ID: task.ID, Kind: model.ReportRunning, Host: "w2", StartTime: start}, // not its worker
			{ID: task.ID, Kind: model.ReportResult, Host: "w1", State: model.TaskSucceeded, StartTime: start, EndTime: end},
			{ID: task.ID, Kind: model.ReportResult, Host: "w1", State: model.TaskSucceeded, StartTime: start, EndTime: end},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []model.ReportOutcome{model.ReportApplied, model.ReportApplied, model.ReportDuplicate, model.ReportForeign, model.ReportApplied, model.ReportDuplicate}
		for i := range want {
			if out[i] != want[i] {
				t.Fatalf("report %d: outcome %v, want %v (all %v)", i, out[i], want[i], out)
			}
		}
		got, err := s.TaskGet(ctx, task.ID)
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
		s.TaskInsert(ctx, []*model.TaskInstance{t3})
		s.TaskMarkDispatched(ctx, []model.Dispatch{{ID: t3.ID, Host: "w1", Time: now}})
		out, err = s.TaskApplyReports(ctx, []model.Report{
			{ID: t3.ID, Kind: model.ReportAck, Host: "w1", LogPath: "/c"},
			{ID: t3.ID, Kind: model.ReportRunning, Host: "w1", PID: 7, StartTime: start},
			{ID: t3.ID, Kind: model.ReportResult, Host: "w1", State: model.TaskFailed, ExitCode: 2, EndTime: end},
		})
		if err != nil || out[0] != model.ReportApplied || out[1] != model.ReportApplied || out[2] != model.ReportApplied {
			t.Fatalf("merged batch: %v %v", out, err)
		}
		got, _ = s.TaskGet(ctx, t3.ID)
		if got.State != model.TaskFailed || got.PID != 7 || *got.ExitCode != 2 || got.StartTime == nil || got.StartTime.Sub(start).Abs() > time.Millisecond {
			t.Fatalf("merged task: %+v", got)
		}
		// A failed send is taken back only while unacked.
		t2 := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "b", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		s.TaskInsert(ctx, []*model.TaskInstance{t2})
		s.TaskMarkDispatched(ctx, []model.Dispatch{{ID: t2.ID, Host: "w1", Time: now}})
		if ok, err := s.TaskResetDispatch(ctx, t2.ID, "w1"); err != nil || !ok {
			t.Fatalf("reset unacked: %v %v", ok, err)
		}
		s.TaskMarkDispatched(ctx, []model.Dispatch{{ID: t2.ID, Host: "w2", Time: now}})
		if out, _ := s.TaskApplyReports(ctx, []model.Report{{ID: t2.ID, Kind: model.ReportAck, Host: "w1", LogPath: "/x"}}); out[0] != model.ReportForeign {
			t.Fatalf("late ack from the old worker: %v", out)
		}
		s.TaskApplyReports(ctx, []model.Report{{ID: t2.ID, Kind: model.ReportAck, Host: "w2", LogPath: "/y"}})
		if ok, _ := s.TaskResetDispatch(ctx, t2.ID, "w2"); ok {
			t.Fatal("reset an acked dispatch")
		}
	})
}

func TestFencing(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		for i := 0; i < 2; i++ {
			s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		}
		if err := s.TermBegin(ctx, 5, "m1"); err != nil {
			t.Fatal(err)
		}
		var signals atomic.Int32
		old := s.TermFenced(5, func() { signals.Add(1) }) // Term(5).OnFenced, as a term makes its view
		got, err := old.InstanceClaimCommands(ctx, "m1", 5, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim in term 5: %v %v", got, err)
		}
		if err := s.TermBegin(ctx, 5, "m2"); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("same epoch again: %v", err)
		}
		if err := s.TermBegin(ctx, 7, "m2"); err != nil {
			t.Fatal(err)
		}
		// A stale election (an older epoch) never takes the fence back.
		if err := s.TermBegin(ctx, 6, "m1"); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("older epoch: %v", err)
		}
		if err := s.TermBegin(ctx, 0, "m1"); err == nil || errors.Is(err, store.ErrFenced) {
			t.Fatalf("epoch 0: %v, want a refusal naming the epoch", err)
		}
		if ti, err := s.TermCurrentInfo(ctx); err != nil || ti.Epoch != 7 || ti.Host != "m2" {
			t.Fatalf("fence after refused writes: %+v %v", ti, err)
		}
		// The old term can no longer claim, write tasks or end instances.
		if _, err := old.InstanceClaimCommands(ctx, "m1", 5, 1); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale claim: %v", err)
		}
		task := &model.TaskInstance{WorkflowInstanceID: got[0].ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		if err := old.TaskInsert(ctx, []*model.TaskInstance{task}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale insert: %v", err)
		}
		if err := old.InstanceFinish(ctx, got[0].ID, model.WorkflowFailed, time.Now(), ""); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale finish: %v", err)
		}
		// The view told its owner of each refusal itself (OnFenced), and
		// nothing while its term was current.
		if n := signals.Load(); n != 3 {
			t.Fatalf("fence signals from the stale view: %d, want one per refused write (3)", n)
		}
		cur := s.Term(7)
		adopted, err := cur.InstanceAdoptUnfinished(ctx, "m2")
		if err != nil || len(adopted) != 1 || adopted[0].Host != "m2" || adopted[0].Epoch != 7 {
			t.Fatalf("adopt: %+v %v", adopted, err)
		}
		if err := cur.TaskInsert(ctx, []*model.TaskInstance{task}); err != nil {
			t.Fatal(err)
		}
		cur.TaskMarkDispatched(ctx, []model.Dispatch{{ID: task.ID, Host: "w1", Time: time.Now()}})
		on, _ := cur.TaskOnHost(ctx, "w1")
		if len(on) != 1 {
			t.Fatalf("tasks on w1: %+v", on)
		}
		changed, err := cur.TaskNeedFaultTolerance(ctx, []int64{task.ID}, "w1")
		if err != nil || len(changed) != 1 {
			t.Fatalf("nft: %v %v", changed, err)
		}
		next := &model.TaskInstance{WorkflowInstanceID: got[0].ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 2}
		if err := cur.TaskInsertAttempts(ctx, []int64{task.ID}, []*model.TaskInstance{next}); err != nil || next.ID == 0 {
			t.Fatalf("attempts: %v", err)
		}
		prev, _ := s.TaskGet(ctx, task.ID)
		if !prev.Superseded || prev.State != model.TaskNeedFaultTolerance {
			t.Fatalf("previous attempt: %+v", prev)
		}
	})
}

// newInstance starts a run of diamond in project demo (made once per store)
// and moves it to state: submitted as created, running by claiming it, any
// other state by finishing it.
func newInstance(t *testing.T, s *store.Store, state model.WorkflowState) model.WorkflowInstance {
	t.Helper()
	ctx := context.Background()
	if _, err := s.ProjectGet(ctx, "demo"); errors.Is(err, store.ErrNotFound) {
		s.ProjectCreate(ctx, "demo", "")
		if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
	}
	inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
	if err != nil {
		t.Fatal(err)
	}
	switch state {
	case model.WorkflowSubmitted:
	case model.WorkflowRunning:
		// Claim everything waiting; this instance is the newest.
		if _, err := s.InstanceClaimCommands(ctx, "m1", 1, 1000); err != nil {
			t.Fatal(err)
		}
	default:
		if err := s.InstanceFinish(ctx, inst.ID, state, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.InstanceGet(ctx, inst.ID)
	if err != nil || got.State != state {
		t.Fatalf("instance in state %s: %+v %v", state, got, err)
	}
	return got
}

func addTask(t *testing.T, s *store.Store, inst int64, name string, state model.TaskState, group string) model.TaskInstance {
	t.Helper()
	ti := &model.TaskInstance{WorkflowInstanceID: inst, Name: name, Type: "shell", State: state, Attempt: 1, TaskGroup: group}
	if err := s.TaskInsert(context.Background(), []*model.TaskInstance{ti}); err != nil {
		t.Fatal(err)
	}
	return *ti
}

// drainActions claims every waiting action.
func drainActions(t *testing.T, s *store.Store) []model.Action {
	t.Helper()
	got, err := s.ActionClaim(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestInstanceActionValidity(t *testing.T) {
	allowed := map[model.ActionKind][]model.WorkflowState{
		model.ActionStop:          {model.WorkflowRunning, model.WorkflowSubmitted},
		model.ActionPause:         {model.WorkflowRunning, model.WorkflowSubmitted},
		model.ActionResume:        {model.WorkflowPaused, model.WorkflowStopped},
		model.ActionRerun:         {model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped},
		model.ActionRecoverFailed: {model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped, model.WorkflowPaused},
	}
	states := []model.WorkflowState{model.WorkflowSubmitted, model.WorkflowRunning, model.WorkflowReadyPause, model.WorkflowPaused,
		model.WorkflowReadyStop, model.WorkflowStopped, model.WorkflowFailed, model.WorkflowSucceeded}
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, action := range model.InstanceActions() {
			for _, st := range states {
				inst := newInstance(t, s, st)
				res, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: action, By: "alice"})
				hist, herr := s.InstanceHistory(ctx, inst.ID)
				if herr != nil {
					t.Fatal(herr)
				}
				after, _ := s.InstanceGet(ctx, inst.ID)
				if !slices.Contains(allowed[action], st) {
					if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "it is "+string(st)) {
						t.Fatalf("%s on %s: got %v, want a conflict naming the state", action, st, err)
					}
					if len(hist) != 0 || after.State != st || len(drainActions(t, s)) != 0 {
						t.Fatalf("refused %s on %s changed something: history %+v, state %s", action, st, hist, after.State)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s on %s: %v", action, st, err)
				}
				want := st
				switch action {
				case model.ActionStop:
					want = model.WorkflowReadyStop
				case model.ActionPause:
					want = model.WorkflowReadyPause
				}
				if res.CommandID == 0 || res.InstanceID != inst.ID || res.Action != action || res.State != want || after.State != want {
					t.Fatalf("%s on %s: result %+v, state after %s", action, st, res, after.State)
				}
				if len(hist) != 1 || hist[0].Action != action || hist[0].By != "alice" || hist[0].TaskInstanceID != 0 ||
					!strings.Contains(hist[0].Detail, string(st)) || time.Since(hist[0].At) > time.Minute {
					t.Fatalf("%s on %s: history %+v", action, st, hist)
				}
				got := drainActions(t, s)
				if len(got) != 1 || got[0].ID != res.CommandID || got[0].InstanceID != inst.ID || got[0].Action != action ||
					got[0].By != "alice" || got[0].TaskInstanceID != 0 || got[0].CreatedAt.IsZero() {
					t.Fatalf("%s on %s: claimed %+v", action, st, got)
				}
			}
		}
		// A stop or pause changes the state at once, so a second request
		// sees it.
		inst := newInstance(t, s, model.WorkflowRunning)
		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionPause}); err != nil {
			t.Fatal(err)
		}
		_, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionStop})
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "ready_pause") {
			t.Fatalf("stop after pause: %v", err)
		}
		// A rerun waiting for the master blocks another restart.
		inst = newInstance(t, s, model.WorkflowFailed)
		first, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionRerun})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []model.ActionKind{model.ActionRerun, model.ActionRecoverFailed} {
			_, err = s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: a})
			if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "waiting") || !strings.Contains(err.Error(), strconv.FormatInt(first.CommandID, 10)) {
				t.Fatalf("%s while a rerun waits: %v", a, err)
			}
		}
		drainActions(t, s)
		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionRecoverFailed}); err != nil {
			t.Fatalf("recover_failed once the rerun was claimed: %v", err)
		}
		drainActions(t, s)

		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: 999999, Action: model.ActionStop}); !errors.Is(err, store.ErrNotFound) ||
			!strings.Contains(err.Error(), "999999") {
			t.Fatalf("missing instance: %v", err)
		}
		for _, bad := range []model.ActionRequest{
			{InstanceID: inst.ID, Action: "explode"},
			{InstanceID: inst.ID, Action: model.ActionKill},
			{InstanceID: inst.ID, TaskInstanceID: 1, Action: model.ActionStop},
			{Action: model.ActionStop},
			{InstanceID: inst.ID, Action: model.ActionRerun, By: strings.Repeat("x", model.MaxActionBy+1)},
		} {
			if _, err := s.ActionRequest(ctx, bad); err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
				t.Fatalf("bad request %+v: %v", bad, err)
			}
		}
		if got := drainActions(t, s); len(got) != 0 {
			t.Fatalf("refused requests queued %+v", got)
		}
	})
}

func TestTaskActionValidity(t *testing.T) {
	taskStates := []model.TaskState{model.TaskSubmitted, model.TaskDispatched, model.TaskRunning, model.TaskSucceeded,
		model.TaskFailed, model.TaskKilled, model.TaskPaused, model.TaskNeedFaultTolerance, model.TaskDelayed, model.TaskForcedSuccess}
	allowed := map[model.ActionKind][]model.TaskState{
		model.ActionKill:         {model.TaskSubmitted, model.TaskDispatched, model.TaskRunning, model.TaskDelayed},
		model.ActionForceSuccess: {model.TaskFailed, model.TaskKilled},
		model.ActionForceStart:   {model.TaskSubmitted},
	}
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		inst := newInstance(t, s, model.WorkflowRunning)
		if _, err := s.ActionRequest(ctx, model.ActionRequest{TaskInstanceID: addTask(t, s, inst.ID, "a", model.TaskSubmitted, "").ID,
			Action: model.ActionForceStart}); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "no task group") {
			t.Fatalf("force_start of a task without a task group: %v", err)
		}
		for _, action := range model.TaskActions() {
			for _, ts := range taskStates {
				task := addTask(t, s, inst.ID, "a", ts, "db")
				res, err := s.ActionRequest(ctx, model.ActionRequest{TaskInstanceID: task.ID, Action: action, By: "bob"})
				if !slices.Contains(allowed[action], ts) {
					if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "it is "+string(ts)) {
						t.Fatalf("%s on a %s task: got %v, want a conflict naming the state", action, ts, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s on a %s task: %v", action, ts, err)
				}
				if res.InstanceID != inst.ID || res.TaskInstanceID != task.ID || res.State != model.WorkflowRunning || res.TaskState != ts {
					t.Fatalf("%s on a %s task: %+v", action, ts, res)
				}
				// The same action again waits behind the first.
				if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, TaskInstanceID: task.ID, Action: action}); !errors.Is(err, store.ErrConflict) ||
					!strings.Contains(err.Error(), "waiting") {
					t.Fatalf("second %s: %v", action, err)
				}
				got := drainActions(t, s)
				if len(got) != 1 || got[0].TaskInstanceID != task.ID || got[0].InstanceID != inst.ID || got[0].Action != action || got[0].By != "bob" {
					t.Fatalf("claimed %+v", got)
				}
			}
		}
		hist, err := s.InstanceHistory(ctx, inst.ID)
		if err != nil || len(hist) != 7 || hist[0].TaskInstanceID == 0 || hist[0].Action != model.ActionKill || hist[5].Action != model.ActionForceSuccess || hist[6].Action != model.ActionForceStart {
			t.Fatalf("history %+v %v", hist, err)
		}

		// force_success needs a running or finished instance.
		for st, ok := range map[model.WorkflowState]bool{model.WorkflowFailed: true, model.WorkflowStopped: true,
			model.WorkflowPaused: true, model.WorkflowSucceeded: true, model.WorkflowSubmitted: false} {
			other := newInstance(t, s, st)
			task := addTask(t, s, other.ID, "b", model.TaskFailed, "")
			_, err := s.ActionRequest(ctx, model.ActionRequest{TaskInstanceID: task.ID, Action: model.ActionForceSuccess})
			if ok && err != nil || !ok && (!errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), string(st))) {
				t.Fatalf("force_success in a %s instance: %v", st, err)
			}
		}
		ready := newInstance(t, s, model.WorkflowRunning)
		task := addTask(t, s, ready.ID, "b", model.TaskKilled, "")
		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: ready.ID, Action: model.ActionStop}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ActionRequest(ctx, model.ActionRequest{TaskInstanceID: task.ID, Action: model.ActionForceSuccess}); !errors.Is(err, store.ErrConflict) ||
			!strings.Contains(err.Error(), "ready_stop") {
			t.Fatalf("force_success while stopping: %v", err)
		}

		// A superseded attempt cannot be acted on.
		old := addTask(t, s, inst.ID, "c", model.TaskFailed, "")
		next := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "c", Type: "shell", State: model.TaskSubmitted, Attempt: 2}
		if err := s.TaskInsertAttempts(ctx, []int64{old.ID}, []*model.TaskInstance{next}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ActionRequest(ctx, model.ActionRequest{TaskInstanceID: old.ID, Action: model.ActionForceSuccess}); !errors.Is(err, store.ErrConflict) ||
			!strings.Contains(err.Error(), "later attempt") {
			t.Fatalf("force_success of a superseded attempt: %v", err)
		}

		if _, err := s.ActionRequest(ctx, model.ActionRequest{TaskInstanceID: 999999, Action: model.ActionKill}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing task: %v", err)
		}
		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: ready.ID, TaskInstanceID: next.ID, Action: model.ActionKill}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("task of another instance: %v", err)
		}
		drainActions(t, s)
		if _, err := s.ActionRequest(ctx, model.ActionRequest{TaskInstanceID: next.ID, Action: model.ActionKill}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestActionRaces(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// Concurrent stops and pauses of one instance: exactly one wins;
		// concurrent reruns of a finished one: exactly one is queued.
		for _, tc := range []struct {
			state   model.WorkflowState
			actions []model.ActionKind
		}{
			{model.WorkflowRunning, []model.ActionKind{model.ActionStop, model.ActionPause, model.ActionStop, model.ActionPause, model.ActionStop, model.ActionPause}},
			{model.WorkflowFailed, []model.ActionKind{model.ActionRerun, model.ActionRecoverFailed, model.ActionRerun, model.ActionRerun, model.ActionRecoverFailed, model.ActionRerun}},
		} {
			inst := newInstance(t, s, tc.state)
			var wg sync.WaitGroup
			errs := make([]error, len(tc.actions))
			for i, a := range tc.actions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: a})
				}()
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, store.ErrConflict):
					t.Fatalf("race on %s: %v", tc.state, err)
				}
			}
			got := drainActions(t, s)
			hist, _ := s.InstanceHistory(ctx, inst.ID)
			if won != 1 || len(got) != 1 || len(hist) != 1 {
				t.Fatalf("race on %s: %d won, %d queued, %d history rows (%v)", tc.state, won, len(got), len(hist), errs)
			}
		}
	})
}

func TestClaimActions(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// Start commands and action commands share the table; each claim
		// takes only its own kind.
		running := newInstance(t, s, model.WorkflowRunning)
		waiting := newInstance(t, s, model.WorkflowSubmitted)
		stop, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: running.ID, Action: model.ActionStop})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := s.InstanceClaimCommands(ctx, "m1", 1, 10)
		if err != nil || len(claimed) != 1 || claimed[0].ID != waiting.ID {
			t.Fatalf("claim commands with an action queued: %+v %v", claimed, err)
		}
		got := drainActions(t, s)
		if len(got) != 1 || got[0].ID != stop.CommandID || got[0].Action != model.ActionStop {
			t.Fatalf("claim actions: %+v", got)
		}
		if claimed, _ := s.InstanceClaimCommands(ctx, "m1", 1, 10); len(claimed) != 0 {
			t.Fatalf("claimed again %+v", claimed)
		}

		// Many actions, two claimers: each handed out once, oldest first.
		var want []int64
		for range 12 {
			inst := newInstance(t, s, model.WorkflowFailed)
			res, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionRerun})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, res.CommandID)
		}
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					got, err := s.ActionClaim(ctx, 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					if !slices.IsSortedFunc(got, func(a, b model.Action) int { return int(a.ID - b.ID) }) {
						t.Errorf("not oldest first: %+v", got)
					}
					mu.Lock()
					for _, a := range got {
						seen[a.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, id := range want {
			if seen[id] != 1 {
				t.Fatalf("command %d claimed %d times (all %v)", id, seen[id], seen)
			}
		}

		// A stale term can neither claim actions nor write history.
		inst := newInstance(t, s, model.WorkflowRunning)
		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionPause}); err != nil {
			t.Fatal(err)
		}
		if err := s.TermBegin(ctx, 3, "m1"); err != nil {
			t.Fatal(err)
		}
		old := s.Term(3)
		if err := s.TermBegin(ctx, 4, "m2"); err != nil {
			t.Fatal(err)
		}
		if _, err := old.ActionClaim(ctx, 10); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale claim: %v", err)
		}
		if _, err := old.InstanceHistoryAdd(ctx, model.HistoryEntry{InstanceID: inst.ID, Action: model.ActionPause}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale history: %v", err)
		}
		got, err = s.Term(4).ActionClaim(ctx, 10)
		if err != nil || len(got) != 1 || got[0].Action != model.ActionPause {
			t.Fatalf("current term claim: %+v %v", got, err)
		}
	})
}

func TestHistory(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		inst := newInstance(t, s, model.WorkflowRunning)
		task := addTask(t, s, inst.ID, "a", model.TaskRunning, "")
		if _, err := s.ActionRequest(ctx, model.ActionRequest{TaskInstanceID: task.ID, Action: model.ActionKill, By: "ops"}); err != nil {
			t.Fatal(err)
		}
		at := time.Now().UTC().Add(-time.Second).Truncate(time.Microsecond)
		long := strings.Repeat("é", model.MaxActionDetail+10)
		e, err := s.InstanceHistoryAdd(ctx, model.HistoryEntry{InstanceID: inst.ID, TaskInstanceID: task.ID, Action: model.ActionKill,
			By: "m1:5678", At: at, Detail: long})
		if err != nil || e.ID == 0 {
			t.Fatalf("add: %+v %v", e, err)
		}
		if _, err := s.InstanceHistoryAdd(ctx, model.HistoryEntry{InstanceID: inst.ID, Action: "failover", Detail: "adopted by m2"}); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []model.HistoryEntry{{Action: "x"}, {InstanceID: inst.ID}, {InstanceID: inst.ID, Action: model.ActionKind(strings.Repeat("a", 33))}} {
			if _, err := s.InstanceHistoryAdd(ctx, bad); err == nil {
				t.Fatalf("bad entry %+v accepted", bad)
			}
		}
		hist, err := s.InstanceHistory(ctx, inst.ID)
		if err != nil || len(hist) != 3 {
			t.Fatalf("history %+v %v", hist, err)
		}
		if h := hist[0]; h.Action != model.ActionKill || h.By != "ops" || h.TaskInstanceID != task.ID || !strings.Contains(h.Detail, "running") {
			t.Fatalf("request entry %+v", h)
		}
		if h := hist[1]; h.ID != e.ID || !h.At.Equal(at) || h.Detail != strings.Repeat("é", model.MaxActionDetail) || h.By != "m1:5678" {
			t.Fatalf("outcome entry %+v (at %v)", h, at)
		}
		if h := hist[2]; h.Action != "failover" || h.TaskInstanceID != 0 || h.At.IsZero() {
			t.Fatalf("third entry %+v", h)
		}
		if none, err := s.InstanceHistory(ctx, 999999); err != nil || len(none) != 0 {
			t.Fatalf("unknown instance: %+v %v", none, err)
		}
	})
}

func TestTaskGroups(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		g, err := s.TaskGroupCreate(ctx, "db", 2, "the warehouse")
		if err != nil || g.ID == 0 || g.Name != "db" || g.Capacity != 2 || g.Description != "the warehouse" || g.CreatedAt.IsZero() || g.InUse != 0 {
			t.Fatalf("create: %+v %v", g, err)
		}
		if _, err := s.TaskGroupCreate(ctx, "db", 5, ""); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate: %v", err)
		}
		for _, c := range []int{0, -1, model.MaxTaskGroupCapacity + 1} {
			if _, err := s.TaskGroupCreate(ctx, "x", c, ""); err == nil || !strings.Contains(err.Error(), "capacity") {
				t.Fatalf("capacity %d: %v", c, err)
			}
		}
		if _, err := s.TaskGroupCreate(ctx, "api", 1, ""); err != nil {
			t.Fatal(err)
		}

		// Dispatched and running tasks of a group hold its slots.
		inst := newInstance(t, s, model.WorkflowRunning)
		run := addTask(t, s, inst.ID, "a", model.TaskRunning, "db")
		addTask(t, s, inst.ID, "b", model.TaskDispatched, "db")
		addTask(t, s, inst.ID, "c", model.TaskSubmitted, "db")
		addTask(t, s, inst.ID, "d", model.TaskSucceeded, "db")
		addTask(t, s, inst.ID, "e", model.TaskRunning, "")
		addTask(t, s, inst.ID, "f", model.TaskRunning, "nope")
		if got, _ := s.TaskGet(ctx, run.ID); got.TaskGroup != "db" {
			t.Fatalf("task group not stored: %+v", got)
		}
		list, err := s.TaskGroupList(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "api" || list[0].InUse != 0 || list[1].Name != "db" || list[1].InUse != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		g, err = s.TaskGroupGet(ctx, "db")
		if err != nil || g.InUse != 2 || g.Capacity != 2 {
			t.Fatalf("get: %+v %v", g, err)
		}
		if _, err := s.TaskGroupGet(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get missing: %v", err)
		}

		// Resizing below the use is allowed; the same capacity again is
		// not a missing group.
		for range 2 {
			g, err = s.TaskGroupResize(ctx, "db", 1)
			if err != nil || g.Capacity != 1 || g.InUse != 2 || g.Description != "the warehouse" {
				t.Fatalf("resize: %+v %v", g, err)
			}
		}
		if _, err := s.TaskGroupResize(ctx, "nope", 3); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("resize missing: %v", err)
		}
		if _, err := s.TaskGroupResize(ctx, "db", 0); err == nil {
			t.Fatal("resize to 0 accepted")
		}

		err = s.TaskGroupDelete(ctx, "db")
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "2 task(s)") {
			t.Fatalf("delete in use: %v", err)
		}
		for _, ti := range []int64{run.ID, run.ID + 1} {
			if ok, err := s.TaskSetStates(ctx, []int64{ti}, []model.TaskState{model.TaskRunning, model.TaskDispatched}, model.TaskSucceeded); err != nil || len(ok) != 1 {
				t.Fatalf("finish task %d: %v %v", ti, ok, err)
			}
		}
		if err := s.TaskGroupDelete(ctx, "db"); err != nil {
			t.Fatal(err)
		}
		if err := s.TaskGroupDelete(ctx, "db"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
		if list, _ := s.TaskGroupList(ctx); len(list) != 1 || list[0].Name != "api" {
			t.Fatalf("after delete: %+v", list)
		}
	})
}
