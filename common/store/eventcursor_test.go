package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// A publisher that keeps its cursor between batches (the last seq it gave,
// whether its last batch found rows) numbers exactly as one reading the
// table each time: increasing seqs, each event once, what it returns being
// what readers then list; a stale term is refused even when the cursor
// skips the idle check.
func TestPublishWithCursor(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.TermBegin(ctx, 3, "m1"); err != nil {
			t.Fatal(err)
		}
		lead := s.Term(3)
		cur, err := lead.EventCursorNew(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		inst, _ := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		writer := lead
		insert := func(n int) {
			var ts []*model.TaskInstance
			for range n {
				ts = append(ts, &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1})
			}
			if err := writer.TaskInsert(ctx, ts); err != nil {
				t.Fatal(err)
			}
		}
		insert(5)
		var got []model.Event
		for _, n := range []int{2, 2, 2} { // the third finds 1 (plus the run's submitted event: 6 in all)
			evs, err := lead.EventPublishFrom(ctx, &cur, n)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, evs...)
			if !cur.Busy || cur.Last != evs[len(evs)-1].Seq {
				t.Fatalf("cursor after %d events: %+v", len(evs), cur)
			}
		}
		if evs, err := lead.EventPublishFrom(ctx, &cur, 10); err != nil || len(evs) != 0 || cur.Busy {
			t.Fatalf("drained outbox: %v %v %+v", evs, err, cur)
		}
		insert(3)
		evs, err := lead.EventPublishFrom(ctx, &cur, 10)
		if err != nil || len(evs) != 3 {
			t.Fatalf("after more writes: %v %v", evs, err)
		}
		got = append(got, evs...)
		listed, err := s.EventList(ctx, 0, model.EventFilter{}, 100)
		if err != nil || len(listed) != len(got) || len(got) != 9 {
			t.Fatalf("listed %d, published %d (want 9): %v", len(listed), len(got), err)
		}
		for i := range got {
			if got[i].Seq != listed[i].Seq || got[i].State != listed[i].State || got[i].Kind != listed[i].Kind ||
				!got[i].Time.Equal(listed[i].Time) || (i > 0 && got[i].Seq <= got[i-1].Seq) {
				t.Fatalf("event %d: published %+v, listed %+v", i, got[i], listed[i])
			}
		}

		if err := s.TermBegin(ctx, 4, "m2"); err != nil {
			t.Fatal(err)
		}
		writer = s.Term(4)
		next, err := s.Term(4).EventCursorNew(ctx)
		if err != nil {
			t.Fatal(err)
		}
		insert(1)
		stale := store.EventCursor{Last: cur.Last, Busy: true}
		if _, err := lead.EventPublishFrom(ctx, &stale, 10); !errors.Is(err, store.ErrFenced) || stale.Last != -1 {
			t.Fatalf("stale term with a busy cursor: %v %+v", err, stale)
		}
		evs, err = s.Term(4).EventPublishFrom(ctx, &next, 10)
		if err != nil || len(evs) != 1 || evs[0].Seq <= got[len(got)-1].Seq {
			t.Fatalf("the new term goes on: %v %v", evs, err)
		}
	})
}
