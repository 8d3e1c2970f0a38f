package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// waitClosed fails unless ch delivers or closes before a deadline.
func waitClosed[T any](t *testing.T, what string, ch <-chan T) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not signalled", what)
	}
}

// TestInstanceTermCalls runs the calls a new leader and the runners make on
// an instance on every dialect: adoption, waits' reasons, a stop before any
// runner, reopening, the end's signal and the event hint.
func TestInstanceTermCalls(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if s.WriteConcurrency() < 1 {
			t.Fatalf("write concurrency %d, want at least 1", s.WriteConcurrency())
		}
		inst := newInstance(t, s, model.WorkflowRunning)
		if def, err := s.WorkflowDefinition(ctx, inst.DefinitionID); err != nil || def.Name != "diamond" {
			t.Fatalf("definition: %+v, %v", def, err)
		}
		if un, err := s.InstanceUnfinished(ctx); err != nil || !slices.ContainsFunc(un, func(i model.WorkflowInstance) bool { return i.ID == inst.ID }) {
			t.Fatalf("unfinished: %+v, %v", un, err)
		}
		if err := s.TermBegin(ctx, 2, "m2"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(2)
		adopted, err := term.InstanceAdoptUnfinished(ctx, "m2")
		if err != nil || len(adopted) != 1 || adopted[0].ID != inst.ID || adopted[0].Host != "m2" {
			t.Fatalf("adopt: %+v, %v", adopted, err)
		}
		if queued, err := term.InstanceReleaseQueued(ctx, "m2", 1000); err != nil || len(queued) != 0 {
			t.Fatalf("release with nothing queued: %+v, %v", queued, err)
		}
		if err := term.InstanceSetReasons(ctx, map[int64]string{inst.ID: "waiting for a worker"}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.InstanceGet(ctx, inst.ID); err != nil || got.Reason != "waiting for a worker" {
			t.Fatalf("reason: %q, %v", got.Reason, err)
		}
		if err := term.InstanceSetState(ctx, inst.ID, model.WorkflowReadyStop); err != nil {
			t.Fatal(err)
		}
		hint := s.EventAppended()
		ended, ok, err := term.InstanceEndUnstarted(ctx, inst.ID, time.Now())
		if err != nil || !ok || ended.State != model.WorkflowStopped {
			t.Fatalf("end unstarted: %+v %v %v", ended, ok, err)
		}
		waitClosed(t, "events appended after a stop", hint)
		if _, ok, err := term.InstanceEndUnstarted(ctx, inst.ID, time.Now()); err != nil || ok {
			t.Fatalf("a second end: %v %v, want false", ok, err)
		}
		back, err := term.InstanceReopen(ctx, inst.ID, []model.WorkflowState{model.WorkflowStopped}, true, "m2", 0)
		if err != nil || back.State != model.WorkflowRunning || back.EndTime != nil {
			t.Fatalf("reopen: %+v, %v", back, err)
		}
		if _, err := term.InstanceReopen(ctx, inst.ID, []model.WorkflowState{model.WorkflowStopped}, true, "m2", 0); err == nil {
			t.Fatal("reopening a running instance: no error")
		}
		end, cancel := s.InstanceWaitEnd(inst.ID)
		defer cancel()
		if err := term.InstanceFinish(ctx, inst.ID, model.WorkflowSucceeded, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, "wait end", end)
	})
}

// TestTaskTermCalls runs the task-level calls of recovery, the master-run
// types and the run pages on every dialect.
func TestTaskTermCalls(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		inst := newInstance(t, s, model.WorkflowRunning)
		now := time.Now().UTC().Truncate(time.Second)
		held := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskRunning, Attempt: 1, Host: "w1"}
		master := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "b", Type: "sub_workflow", State: model.TaskSubmitted, Attempt: 1}
		first := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "c", Type: "shell", State: model.TaskFailed, Attempt: 1,
			StartTime: &now, EndTime: &now}
		done := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "d", Type: "shell", State: model.TaskSucceeded, Attempt: 1,
			Outputs: map[string]string{"rows": "7"}, EndTime: &now}
		if err := s.TaskInsert(ctx, []*model.TaskInstance{held, master, first, done}); err != nil {
			t.Fatal(err)
		}
		if err := s.TermBegin(ctx, 2, "m2"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(2)
		retry := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "c", Type: "shell", State: model.TaskSubmitted, Attempt: 2}
		if err := term.TaskInsertAttempts(ctx, []int64{first.ID}, []*model.TaskInstance{retry}); err != nil {
			t.Fatal(err)
		}
		if prev, err := s.InstancePreviousEnds(ctx, inst.ID, map[string]int{"c": 2}); err != nil || !prev["c"].Equal(now) {
			t.Fatalf("previous ends: %v, %v, want c at %v", prev, err, now)
		}
		if on, err := term.TaskOnHost(ctx, "w1"); err != nil || len(on) != 1 || on[0].ID != held.ID {
			t.Fatalf("tasks on w1: %+v, %v", on, err)
		}
		if fl, err := term.TaskInFlight(ctx); err != nil || len(fl) != 1 || fl[0].Host != "w1" {
			t.Fatalf("in flight: %+v, %v", fl, err)
		}
		if ids, err := term.TaskNeedFaultTolerance(ctx, []int64{held.ID}, "w1"); err != nil || len(ids) != 1 {
			t.Fatalf("fault tolerance: %v, %v", ids, err)
		}
		if on, err := term.TaskOnHost(ctx, "w1"); err != nil || len(on) != 0 {
			t.Fatalf("tasks on w1 after its loss: %+v, %v", on, err)
		}
		if ok, err := term.TaskStartOnMaster(ctx, master.ID, "starting", now); err != nil || !ok {
			t.Fatalf("start master task: %v %v", ok, err)
		}
		if ok, err := term.TaskStartOnMaster(ctx, master.ID, "again", now); err != nil || !ok {
			t.Fatalf("a second start (a new leader's): %v %v, want true", ok, err)
		}
		if err := term.TaskSetMessage(ctx, master.ID, "child run 9"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.TaskGet(ctx, master.ID); err != nil || got.State != model.TaskRunning || got.Message != "child run 9" {
			t.Fatalf("master task: %+v, %v", got, err)
		}
		if ok, err := term.TaskEndOnMaster(ctx, master.ID, model.TaskSucceeded, nil, "done", now); err != nil || !ok {
			t.Fatalf("end master task: %v %v", ok, err)
		}
		if ok, err := term.TaskStartOnMaster(ctx, master.ID, "late", now); err != nil || ok {
			t.Fatalf("a start after the end: %v %v, want false", ok, err)
		}
		// A master-run attempt's start and end are events as a worker's
		// task's are: one each (the second start resumed it: no event).
		evs := allEvents(t, s, term)
		var states []string
		for _, e := range evs {
			if e.TaskInstanceID == master.ID {
				states = append(states, e.State)
			}
		}
		if want := []string{"running", "succeeded"}; !slices.Equal(states, want) && !slices.Equal(states, append([]string{"submitted"}, want...)) {
			t.Fatalf("events of the master-run attempt: %v, want %v (after its submitted one)", states, want)
		}
		if out, err := s.InstanceOutputs(ctx, inst.ID); err != nil || out["rows"] != "7" {
			t.Fatalf("outputs: %v, %v", out, err)
		}
		if ts, err := s.InstanceOutputTasks(ctx, inst.ID); err != nil || len(ts) != 1 || ts[0].Name != "d" {
			t.Fatalf("output tasks: %+v, %v", ts, err)
		}
		found, total, err := s.TaskFind(ctx, store.TaskFilter{Project: "demo", Name: "c", Latest: true})
		if err != nil || total != 1 || len(found) != 1 || found[0].Attempt != 2 {
			t.Fatalf("find tasks: %+v %d %v", found, total, err)
		}
	})
}

// TestGrantsAndTokenChecks runs who-may-see-and-use calls on every dialect:
// grants, live tokens, viewable projects, and the datasource and task group
// grants with the authors' use of them.
func TestGrantsAndTokenChecks(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		ann, err := s.UserCreate(ctx, "ann", model.RoleUser, "h")
		if err != nil {
			t.Fatal(err)
		}
		bob, err := s.UserCreate(ctx, "bob", model.RoleUser, "h")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ProjectCreateOwned(ctx, "mine", "", "", ann.ID, ann.Name); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ProjectCreate(ctx, "other", ""); err != nil {
			t.Fatal(err)
		}
		if err := s.GrantPut(ctx, "mine", "bob", model.GrantView, "ann"); err != nil {
			t.Fatal(err)
		}
		if gs, err := s.GrantList(ctx, "mine", 0); err != nil || len(gs) != 2 {
			t.Fatalf("grants: %+v, %v", gs, err)
		}
		if vp, err := s.ProjectViewable(ctx, []int64{ann.ID, bob.ID}); err != nil || !slices.Equal(vp[bob.ID], []string{"mine"}) {
			t.Fatalf("viewable: %v, %v", vp, err)
		}
		tok, err := s.TokenCreate(ctx, model.Token{UserID: bob.ID, Kind: model.TokenSession, Name: "web", Hash: "hb", ExpiresAt: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if live, err := s.TokenLive(ctx, []int64{tok.ID, tok.ID + 100}, now); err != nil || len(live) != 1 {
			t.Fatalf("live tokens: %v, %v", live, err)
		}
		if err := s.TokenDeleteByHash(ctx, "hb"); err != nil {
			t.Fatal(err)
		}
		if live, err := s.TokenLive(ctx, []int64{tok.ID}, now); err != nil || len(live) != 0 {
			t.Fatalf("live after logout: %v, %v", live, err)
		}

		if _, _, err := s.DatasourcePut(ctx, model.Datasource{Name: "wh", Type: "sqlite", Database: "/tmp/wh.db"}); err != nil {
			t.Fatal(err)
		}
		if err := s.DatasourceSetProjects(ctx, "wh", []string{"mine"}, "admin"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TaskGroupCreate(ctx, "gpu", 2, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.TaskGroupSetProjects(ctx, "gpu", []string{"mine"}, "admin"); err != nil {
			t.Fatal(err)
		}
		if tp, err := s.TaskGroupProjects(ctx); err != nil || len(tp) != 1 {
			t.Fatalf("task group projects: %v, %v", tp, err)
		}
		bobAuthor := model.Author{Name: "bob"}
		for _, c := range []struct {
			what    string
			f       func(string) (bool, error)
			in, out string
		}{
			{"datasource granted", func(p string) (bool, error) { return s.DatasourceGranted(ctx, "wh", p) }, "mine", "other"},
			{"task group granted", func(p string) (bool, error) { return s.TaskGroupGranted(ctx, "gpu", p) }, "mine", "other"},
			{"datasource usable", func(p string) (bool, error) { return s.DatasourceUsable(ctx, bobAuthor, "wh", p) }, "mine", "other"},
			{"task group usable", func(p string) (bool, error) { return s.TaskGroupUsable(ctx, bobAuthor, "gpu", p) }, "mine", "other"},
		} {
			if ok, err := c.f(c.in); err != nil || !ok {
				t.Fatalf("%s in %s: %v %v, want true", c.what, c.in, ok, err)
			}
			if ok, err := c.f(c.out); err != nil || ok {
				t.Fatalf("%s in %s: %v %v, want false", c.what, c.out, ok, err)
			}
		}
		if ok, err := s.DatasourceUsable(ctx, model.Author{Server: true}, "wh", "other"); err != nil || !ok {
			t.Fatalf("the server's use: %v %v, want true", ok, err)
		}
	})
}
