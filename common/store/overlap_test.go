package store_test

import (
	"context"
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
	s.CreateProject(ctx, "demo", "")
	s.PutWorkflow(ctx, "demo", mustSpec(t, diamond))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sc, _, err := s.PutSchedule(ctx, model.Schedule{Project: "demo", Workflow: "diamond", Cron: "@hourly",
		Enabled: true, NextFireTime: &t0, Overlap: o}, nil)
	if err != nil || sc.Overlap != o {
		t.Fatalf("put schedule: %+v %v", sc, err)
	}
	if err := s.BeginTerm(ctx, 1, "m1"); err != nil {
		t.Fatal(err)
	}
	return &overlapFixture{t: t, ctx: ctx, s: s, term: s.Term(1), next: t0}
}

// fire fires the schedule's next time from a fresh read.
func (f *overlapFixture) fire() []model.WorkflowInstance {
	f.t.Helper()
	sc, err := f.s.GetSchedule(f.ctx, "demo", "diamond")
	if err != nil {
		f.t.Fatal(err)
	}
	at, next := f.next, f.next.Add(time.Hour)
	insts, err := f.term.FireSchedule(f.ctx, sc, store.Firing{Times: []time.Time{at}, Next: &next})
	if err != nil {
		f.t.Fatalf("fire %s: %v", at, err)
	}
	f.next = next
	return insts
}

func (f *overlapFixture) claim() []int64 {
	f.t.Helper()
	insts, err := f.term.ClaimCommands(f.ctx, "m1", 1, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return ids(insts)
}

func (f *overlapFixture) release() []int64 {
	f.t.Helper()
	insts, err := f.term.ReleaseQueued(f.ctx, "m1")
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
	if err := f.term.FinishWorkflowInstance(f.ctx, id, state, time.Now(), ""); err != nil {
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
		sc, _ := s.GetSchedule(f.ctx, "demo", "diamond")
		if sc.SkippedFires != 2 || sc.LastSkippedTime == nil || !sc.LastSkippedTime.Equal(skippedAt.Add(time.Hour)) ||
			!strings.Contains(sc.Note, "overlap skip") || !strings.Contains(sc.Note, "unfinished") {
			t.Fatalf("schedule after two skips: %+v", sc)
		}
		f.finish(first[0].ID, model.WorkflowSucceeded)
		if got := f.fire(); len(got) != 1 {
			t.Fatalf("fire after the run ended: %+v", got)
		}
		// An edit keeps the count.
		sc, _ = s.GetSchedule(f.ctx, "demo", "diamond")
		sc.Overlap = model.OverlapAllow
		if ed, _, err := s.PutSchedule(f.ctx, sc, nil); err != nil || ed.SkippedFires != 2 || ed.Overlap != model.OverlapAllow {
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
		if _, err := s.RequestAction(f.ctx, store.ActionRequest{InstanceID: d.ID, Action: store.ActionStop, By: "ann"}); err != nil {
			t.Fatal(err)
		}
		f.finish(c[0].ID, model.WorkflowSucceeded)
		same(t, "release of a stopping run", f.release())
		f.finish(d.ID, model.WorkflowStopped)
		if got, _ := s.GetWorkflowInstance(f.ctx, d.ID); got.Queued || got.State != model.WorkflowStopped {
			t.Fatalf("stopped queued run: %+v", got)
		}
		sc, _ := s.GetSchedule(f.ctx, "demo", "diamond")
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
		cur, _ := s.GetWorkflowInstance(f.ctx, a.ID)
		if cur.State != model.WorkflowReadyStop {
			t.Fatalf("replaced run is %s", cur.State)
		}
		acts, err := f.term.ClaimActions(f.ctx, 10)
		if err != nil || len(acts) != 1 || acts[0].InstanceID != a.ID || acts[0].Action != store.ActionStop {
			t.Fatalf("stop command: %+v %v", acts, err)
		}
		same(t, "release while the replaced run stops", f.release())
		f.finish(a.ID, model.WorkflowStopped)
		same(t, "release after it stopped", f.release(), b[0].ID)
	})
}

// TestMaxActiveRunsQueuesManualRuns: runs beyond a workflow's
// max_active_runs are queued when their command is claimed, then released
// in order as runs end.
func TestMaxActiveRunsQueuesManualRuns(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.CreateProject(ctx, "demo", "")
		s.PutWorkflow(ctx, "demo", mustSpec(t, "max_active_runs: 2\n"+diamond))
		s.BeginTerm(ctx, 1, "m1")
		term := s.Term(1)
		var runs []int64
		for range 4 {
			in, err := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, in.ID)
		}
		claimed, err := term.ClaimCommands(ctx, "m1", 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "claim", ids(claimed), runs[0], runs[1])
		third, _ := s.GetWorkflowInstance(ctx, runs[2])
		if !third.Queued || third.State != model.WorkflowSubmitted || !strings.Contains(third.Reason, "max_active_runs 2") {
			t.Fatalf("third run: %+v", third)
		}
		rel := func() []int64 {
			insts, err := term.ReleaseQueued(ctx, "m1")
			if err != nil {
				t.Fatal(err)
			}
			return ids(insts)
		}
		same(t, "release at the limit", rel())
		term.FinishWorkflowInstance(ctx, runs[1], model.WorkflowSucceeded, time.Now(), "")
		same(t, "release after one ended", rel(), runs[2])
		// A new run queues behind the one still queued.
		late, _ := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		term.FinishWorkflowInstance(ctx, runs[0], model.WorkflowSucceeded, time.Now(), "")
		claimed, _ = term.ClaimCommands(ctx, "m1", 1, 100)
		same(t, "claim behind a queued run", ids(claimed))
		same(t, "release in order", rel(), runs[3])
		term.FinishWorkflowInstance(ctx, runs[2], model.WorkflowSucceeded, time.Now(), "")
		same(t, "release the late run", rel(), late.ID)
		// A fenced term releases nothing.
		s.BeginTerm(ctx, 2, "m2")
		if _, err := term.ReleaseQueued(ctx, "m1"); err == nil {
			t.Fatal("release from a fenced term succeeded")
		}
	})
}
