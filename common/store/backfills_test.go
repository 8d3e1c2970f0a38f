package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestBackfillSubmitsEachTimeOnce: submissions move the cursor with the
// runs in one transaction at a revision; a stale or fenced submission, an
// end after a stop, and a time already run change nothing.
func TestBackfillSubmitsEachTimeOnce(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		day := time.Date(2026, 11, 1, 18, 0, 0, 0, time.UTC)
		times := []time.Time{day, day.Add(24 * time.Hour), day.Add(48 * time.Hour)}
		if _, err := s.BackfillCreate(ctx, model.Backfill{Project: "demo", Workflow: "nope", Times: times}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("backfill of a missing workflow: %v", err)
		}
		low := model.PriorityLow
		b, err := s.BackfillCreate(ctx, model.Backfill{Project: "demo", Workflow: "diamond", Cron: "0 2 * * *", Timezone: "Asia/Shanghai",
			Start: times[0], End: times[2], Times: times, Parallelism: 2, Priority: &low, Params: map[string]string{"k": "v"}, DryRun: true})
		if err != nil || b.State != model.BackfillRunning || b.OnFailure != model.BackfillContinue || len(b.Times) != 3 {
			t.Fatalf("create: %+v %v", b, err)
		}
		if err := s.TermBegin(ctx, 2, "m1"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(2)
		insts, err := term.BackfillSubmit(ctx, b, 2)
		if err != nil || len(insts) != 2 {
			t.Fatalf("submit: %v %v", insts, err)
		}
		in := insts[1]
		if in.BackfillID != b.ID || !in.ScheduleTime.Equal(times[1]) || in.CommandType != model.CommandBackfill ||
			in.Priority != model.PriorityLow || !in.DryRun || in.Params["k"] != "v" || in.Timezone != "Asia/Shanghai" {
			t.Fatalf("backfill run %+v", in)
		}
		if _, err := term.BackfillSubmit(ctx, b, 1); !errors.Is(err, store.ErrBackfillMoved) {
			t.Fatalf("submit from a stale read: %v", err)
		}
		got, err := s.BackfillGet(ctx, b.ID)
		if err != nil || got.Submitted != 2 || got.Unfinished != 2 || got.Revision != 1 {
			t.Fatalf("after submit: %+v %v", got, err)
		}
		// A run that ends moves the progress.
		if err := term.InstanceFinish(ctx, insts[0].ID, model.WorkflowFailed, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
		if got, _ = s.BackfillGet(ctx, b.ID); got.Unfinished != 1 || got.Failed != 1 {
			t.Fatalf("progress: %+v", got)
		}
		if err := s.TermBegin(ctx, 3, "m2"); err != nil {
			t.Fatal(err)
		}
		if _, err := term.BackfillSubmit(ctx, got, 1); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("submit from a fenced term: %v", err)
		}
		if err := s.WorkflowDelete(ctx, "demo", "diamond"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("delete with a running backfill: %v", err)
		}
		stopped, err := s.BackfillStop(ctx, b.ID, "ops")
		if err != nil || stopped.State != model.BackfillStopped || stopped.EndAt == nil {
			t.Fatalf("stop: %+v %v", stopped, err)
		}
		if _, err := s.BackfillStop(ctx, b.ID, "ops"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second stop: %v", err)
		}
		if _, err := s.Term(3).BackfillSubmit(ctx, stopped, 1); !errors.Is(err, store.ErrBackfillMoved) {
			t.Fatalf("submit after stop: %v", err)
		}
		if err := s.Term(3).BackfillEnd(ctx, stopped, model.BackfillDone, ""); !errors.Is(err, store.ErrBackfillMoved) {
			t.Fatalf("end after stop: %v", err)
		}
		list, err := s.BackfillList(ctx, store.BackfillFilter{Project: "demo", State: model.BackfillStopped})
		if err != nil || len(list) != 1 || list[0].Submitted != 2 || len(list[0].Times) != 3 {
			t.Fatalf("list: %+v %v", list, err)
		}
		short, err := s.BackfillList(ctx, store.BackfillFilter{Project: "demo", NoTimes: true})
		if err != nil || len(short) != 1 || short[0].Times != nil || short[0].Total != 3 {
			t.Fatalf("list without times: %+v %v", short, err)
		}
		if _, err := s.BackfillGet(ctx, 999); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}
	})
}

// TestBackfillKeepsItsCalendar: the calendar a backfill was decided under
// and the times it refused are read back with the backfill, not in lists.
func TestBackfillKeepsItsCalendar(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		fri := time.Date(2026, 12, 25, 9, 0, 0, 0, time.UTC)
		mon := fri.Add(72 * time.Hour)
		ref := []model.BackfillRefusal{{Time: fri, MovedTo: &mon}, {Time: fri.Add(7 * 24 * time.Hour)}}
		b, err := s.BackfillCreate(ctx, model.Backfill{Project: "demo", Workflow: "diamond", Cron: "0 9 * * 5", Start: fri, End: mon,
			Times: []time.Time{mon}, Calendar: "xmas", OnHoliday: "next_business_day", Refused: ref})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.BackfillGet(ctx, b.ID)
		if err != nil || got.Calendar != "xmas" || got.OnHoliday != "next_business_day" || len(got.Refused) != 2 ||
			!got.Refused[0].Time.Equal(fri) || got.Refused[0].MovedTo == nil || !got.Refused[0].MovedTo.Equal(mon) ||
			got.Refused[1].MovedTo != nil || !got.Refused[1].Time.Equal(ref[1].Time) {
			t.Fatalf("read back: %+v %v", got, err)
		}
		list, err := s.BackfillList(ctx, store.BackfillFilter{Project: "demo"})
		if err != nil || len(list) != 1 || list[0].Calendar != "xmas" || list[0].Refused != nil || len(list[0].Times) != 1 {
			t.Fatalf("list: %+v %v", list, err)
		}
		plain, err := s.BackfillCreate(ctx, model.Backfill{Project: "demo", Workflow: "diamond", Cron: "0 9 * * 5", Start: fri, End: mon, Times: []time.Time{mon}})
		if err != nil || plain.Calendar != "" || plain.Refused != nil {
			t.Fatalf("no calendar: %+v %v", plain, err)
		}
	})
}
