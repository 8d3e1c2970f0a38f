package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// overlapFixture is a schedule under policy o and a fenced term view that
// fires it at t0, t0+1h, ... as the master would.
type overlapFixture struct {
	t    *testing.T
	ctx  context.Context
	s    *store.Store
	term *store.Store
	next time.Time
}

func newOverlap(t *testing.T, s *store.Store, o model.Overlap) *overlapFixture {
	t.Helper()
	ctx := context.Background()
	s.ProjectCreate(ctx, "demo", "")
	s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "diamond", Cron: "@hourly",
		Enabled: true, NextFireTime: &t0, Overlap: o}, nil)
	if err != nil || sc.Overlap != o {
		t.Fatalf("put schedule: %+v %v", sc, err)
	}
	if err := s.TermBegin(ctx, 1, "m1"); err != nil {
		t.Fatal(err)
	}
	return &overlapFixture{t: t, ctx: ctx, s: s, term: s.Term(1), next: t0}
}

// fire fires the schedule's next time from a fresh read.
func (f *overlapFixture) fire() []model.WorkflowInstance {
	f.t.Helper()
	sc, err := f.s.ScheduleGet(f.ctx, "demo", "diamond")
	if err != nil {
		f.t.Fatal(err)
	}
	at, next := f.next, f.next.Add(time.Hour)
	insts, err := f.term.ScheduleFireOne(f.ctx, sc, store.Firing{Times: []time.Time{at}, Next: &next})
	if err != nil {
		f.t.Fatalf("fire %s: %v", at, err)
	}
	f.next = next
	return insts
}

func (f *overlapFixture) claim() []int64 {
	f.t.Helper()
	insts, err := f.term.InstanceClaimCommands(f.ctx, "m1", 1, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return ids(insts)
}

func (f *overlapFixture) release() []int64 {
	f.t.Helper()
	insts, err := f.term.InstanceReleaseQueued(f.ctx, "m1", 1000)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, in := range insts {
		if in.State != model.WorkflowRunning || in.Queued || in.Host != "m1" || in.Epoch != 1 {
			f.t.Fatalf("released %+v", in)
		}
	}
	return ids(insts)
}

func (f *overlapFixture) finish(id int64, state model.WorkflowState) {
	f.t.Helper()
	if err := f.term.InstanceFinish(f.ctx, id, state, time.Now(), ""); err != nil {
		f.t.Fatal(err)
	}
}

func ids(insts []model.WorkflowInstance) []int64 {
	out := []int64{}
	for _, in := range insts {
		out = append(out, in.ID)
	}
	return out
}

func same(t *testing.T, what string, got []int64, want ...int64) {
	t.Helper()
	if want == nil {
		want = []int64{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// TestOverlapSkipInFireTransaction: a fire while a run of the schedule is
// unfinished writes nothing and is counted on the schedule.
func TestOverlapSkipInFireTransaction(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapSkip)
		first := f.fire()
		if len(first) != 1 || first[0].Queued {
			t.Fatalf("first fire: %+v", first)
		}
		skippedAt := f.next
		if got := f.fire(); len(got) != 0 {
			t.Fatalf("fire while the first is submitted: %+v", got)
		}
		same(t, "claim", f.claim(), first[0].ID)
		f.fire() // while running
		sc, _ := s.ScheduleGet(f.ctx, "demo", "diamond")
		if sc.SkippedFires != 2 || sc.LastSkippedTime == nil || !sc.LastSkippedTime.Equal(skippedAt.Add(time.Hour)) ||
			!strings.Contains(sc.Note, "overlap skip") || !strings.Contains(sc.Note, "unfinished") {
			t.Fatalf("schedule after two skips: %+v", sc)
		}
		f.finish(first[0].ID, model.WorkflowSucceeded)
		if got := f.fire(); len(got) != 1 {
			t.Fatalf("fire after the run ended: %+v", got)
		}
		// An edit keeps the count.
		sc, _ = s.ScheduleGet(f.ctx, "demo", "diamond")
		sc.Overlap = model.OverlapAllow
		if ed, _, err := s.SchedulePut(f.ctx, sc, nil); err != nil || ed.SkippedFires != 2 || ed.Overlap != model.OverlapAllow {
			t.Fatalf("edit: %+v %v", ed, err)
		}
	})
}

// TestOverlapWaitQueuesInOrder: fires while a run is unfinished are
// queued (no start command) and released one at a time, oldest first.
func TestOverlapWaitQueuesInOrder(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapWait)
		a := f.fire()[0]
		b, c := f.fire(), f.fire()
		if len(b) != 1 || len(c) != 1 || !b[0].Queued || !c[0].Queued || !strings.Contains(b[0].Reason, "queued") ||
			b[0].State != model.WorkflowSubmitted {
			t.Fatalf("fires behind a submitted run: %+v %+v", b, c)
		}
		same(t, "claim: only the first has a start command", f.claim(), a.ID)
		same(t, "release while the first runs", f.release())
		f.finish(a.ID, model.WorkflowFailed)
		same(t, "release after the first ended", f.release(), b[0].ID)
		same(t, "release while the second runs", f.release())
		f.finish(b[0].ID, model.WorkflowSucceeded)
		same(t, "release after the second ended", f.release(), c[0].ID)
		// A queued run stopped by an operator leaves the queue.
		d := f.fire()[0]
		if _, err := s.ActionRequest(f.ctx, model.ActionRequest{InstanceID: d.ID, Action: model.ActionStop, By: "ann"}); err != nil {
			t.Fatal(err)
		}
		f.finish(c[0].ID, model.WorkflowSucceeded)
		same(t, "release of a stopping run", f.release())
		f.finish(d.ID, model.WorkflowStopped)
		if got, _ := s.InstanceGet(f.ctx, d.ID); got.Queued || got.State != model.WorkflowStopped {
			t.Fatalf("stopped queued run: %+v", got)
		}
		sc, _ := s.ScheduleGet(f.ctx, "demo", "diamond")
		if sc.SkippedFires != 0 {
			t.Fatalf("wait skipped: %+v", sc)
		}
	})
}

// TestOverlapReplaceStopsTheRunning: a fire while a run is unfinished asks
// the master to stop it (ready_stop and a stop command) and queues the new
// run until the stopped one has ended.
func TestOverlapReplaceStopsTheRunning(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapReplace)
		a := f.fire()[0]
		same(t, "claim", f.claim(), a.ID)
		b := f.fire()
		if len(b) != 1 || !b[0].Queued {
			t.Fatalf("replacing fire: %+v", b)
		}
		cur, _ := s.InstanceGet(f.ctx, a.ID)
		if cur.State != model.WorkflowReadyStop {
			t.Fatalf("replaced run is %s", cur.State)
		}
		acts, err := f.term.ActionClaim(f.ctx, 10)
		if err != nil || len(acts) != 1 || acts[0].InstanceID != a.ID || acts[0].Action != model.ActionStop {
			t.Fatalf("stop command: %+v %v", acts, err)
		}
		same(t, "release while the replaced run stops", f.release())
		f.finish(a.ID, model.WorkflowStopped)
		same(t, "release after it stopped", f.release(), b[0].ID)
	})
}

// TestOverlapReplaceEndsUnstartedRuns: a run that never started (queued,
// or its start command not claimed) is stopped by the replacing fire
// itself, in its transaction: stopped with a reason and a history line,
// no stop command for a master to act on, its start command gone. A run
// already stopping is left to its runner.
func TestOverlapReplaceEndsUnstartedRuns(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapReplace)
		a := f.fire()[0] // not claimed: its start command waits
		b := f.fire()[0]
		unstarted := func(id int64, what string) {
			t.Helper()
			cur, _ := s.InstanceGet(f.ctx, id)
			if cur.State != model.WorkflowStopped || cur.Queued || cur.EndTime == nil || cur.StartTime != nil ||
				!strings.Contains(cur.Reason, "before it started") {
				t.Fatalf("%s run %d after the replacing fire: %+v", what, id, cur)
			}
			h, err := s.InstanceHistory(f.ctx, id)
			if err != nil || len(h) == 0 || h[len(h)-1].Action != model.ActionStop || !strings.Contains(h[len(h)-1].Detail, "replaces it") {
				t.Fatalf("history of %d: %+v %v", id, h, err)
			}
		}
		unstarted(a.ID, "unclaimed")
		if b.Queued {
			t.Fatalf("the replacing run is queued, but nothing started holds the schedule: %+v", b)
		}
		same(t, "claim: the stopped run's start command is gone", f.claim(), b.ID)
		c := f.fire()[0] // b started: it is stopped by its runner
		if cur, _ := s.InstanceGet(f.ctx, b.ID); cur.State != model.WorkflowReadyStop || !c.Queued {
			t.Fatalf("started run after the replacing fire: %s; the new run %+v", cur.State, c)
		}
		f.finish(b.ID, model.WorkflowStopped)
		d := f.fire()[0] // c was queued
		unstarted(c.ID, "queued")
		same(t, "claim: nothing holds the schedule", f.claim(), d.ID)
		e := f.fire()[0] // d started: it is stopped by its runner
		if cur, _ := s.InstanceGet(f.ctx, d.ID); cur.State != model.WorkflowReadyStop {
			t.Fatalf("started run after the replacing fire: %s", cur.State)
		}
		if g := f.fire()[0]; !g.Queued { // e queued behind the stopping d: stopped at once; d is already stopping
			t.Fatalf("a run started while run %d stops: %+v", d.ID, g)
		}
		unstarted(e.ID, "queued")
		acts, err := f.term.ActionClaim(f.ctx, 10)
		if err != nil || len(acts) != 2 || acts[0].InstanceID != b.ID || acts[1].InstanceID != d.ID {
			t.Fatalf("stop commands: %+v %v, want runs %d and %d (the started ones)", acts, err, b.ID, d.ID)
		}
	})
}

// TestMaxActiveRunsQueuesManualRuns: runs beyond a workflow's
// max_active_runs are queued when their command is claimed, then released
// in order as runs end.
func TestMaxActiveRunsQueuesManualRuns(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, "max_active_runs: 2\n"+diamond))
		s.TermBegin(ctx, 1, "m1")
		term := s.Term(1)
		var runs []int64
		for range 4 {
			in, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, in.ID)
		}
		claimed, err := term.InstanceClaimCommands(ctx, "m1", 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "claim", ids(claimed), runs[0], runs[1])
		third, _ := s.InstanceGet(ctx, runs[2])
		if !third.Queued || third.State != model.WorkflowSubmitted || !strings.Contains(third.Reason, "max_active_runs 2") {
			t.Fatalf("third run: %+v", third)
		}
		rel := func() []int64 {
			insts, err := term.InstanceReleaseQueued(ctx, "m1", 1000)
			if err != nil {
				t.Fatal(err)
			}
			return ids(insts)
		}
		same(t, "release at the limit", rel())
		term.InstanceFinish(ctx, runs[1], model.WorkflowSucceeded, time.Now(), "")
		same(t, "release after one ended", rel(), runs[2])
		// A new run queues behind the one still queued.
		late, _ := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		term.InstanceFinish(ctx, runs[0], model.WorkflowSucceeded, time.Now(), "")
		claimed, _ = term.InstanceClaimCommands(ctx, "m1", 1, 100)
		same(t, "claim behind a queued run", ids(claimed))
		same(t, "release in order", rel(), runs[3])
		term.InstanceFinish(ctx, runs[2], model.WorkflowSucceeded, time.Now(), "")
		same(t, "release the late run", rel(), late.ID)
		// A fenced term releases nothing.
		s.TermBegin(ctx, 2, "m2")
		if _, err := term.InstanceReleaseQueued(ctx, "m1", 1000); err == nil {
			t.Fatal("release from a fenced term succeeded")
		}
	})
}

// TestEndUnstarted: a run stopped or paused before it started ends as
// asked (stopped, paused), with a reason, once; a run in any other state
// is left alone; a fenced term ends nothing.
func TestEndUnstarted(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapAllow)
		a, b, c := f.fire()[0], f.fire()[0], f.fire()[0]
		for id, act := range map[int64]model.ActionKind{a.ID: model.ActionStop, b.ID: model.ActionPause} {
			if _, err := s.ActionRequest(f.ctx, model.ActionRequest{InstanceID: id, Action: act, By: "ann"}); err != nil {
				t.Fatal(err)
			}
		}
		for id, want := range map[int64]model.WorkflowState{a.ID: model.WorkflowStopped, b.ID: model.WorkflowPaused} {
			in, ended, err := f.term.InstanceEndUnstarted(f.ctx, id, time.Now())
			if err != nil || !ended || in.State != want || !strings.Contains(in.Reason, "before it started") {
				t.Fatalf("end run %d: %+v %v %v, want %s", id, in, ended, err, want)
			}
			if cur, _ := s.InstanceGet(f.ctx, id); cur.State != want || cur.EndTime == nil {
				t.Fatalf("run %d after the end: %+v", id, cur)
			}
			if _, ended, err := f.term.InstanceEndUnstarted(f.ctx, id, time.Now()); ended || err != nil {
				t.Fatalf("run %d ended twice: %v %v", id, ended, err)
			}
		}
		if _, ended, err := f.term.InstanceEndUnstarted(f.ctx, c.ID, time.Now()); ended || err != nil {
			t.Fatalf("a submitted run not asked to stop was ended: %v %v", ended, err)
		}
		if err := s.TermBegin(f.ctx, 2, "m2"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ActionRequest(f.ctx, model.ActionRequest{InstanceID: c.ID, Action: model.ActionStop, By: "ann"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.term.InstanceEndUnstarted(f.ctx, c.ID, time.Now()); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("a fenced term's end: %v, want ErrFenced", err)
		}
	})
}
