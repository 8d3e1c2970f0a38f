package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Schedules due together are written in one transaction: each fires once,
// a schedule that moved since it was read is skipped without holding the
// others back, and the batch is fenced like a single fire (before
// FireSchedules, there was only one schedule per transaction).
func TestFireSchedulesBatch(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		t1 := t0.Add(24 * time.Hour)
		var fires []store.ScheduleFire
		for i := range 5 {
			name := fmt.Sprintf("wf%d", i)
			if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, "name: "+name+"\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
				t.Fatal(err)
			}
			sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: name, Cron: "0 0 * * *", Enabled: true, NextFireTime: &t0}, nil)
			if err != nil {
				t.Fatal(err)
			}
			fires = append(fires, store.ScheduleFire{Schedule: sc, Firing: store.Firing{Times: []time.Time{t0}, Next: &t1}})
		}
		// wf2 is edited after the read: its planned fire is stale.
		cur, _ := s.ScheduleGet(ctx, "demo", "wf2")
		cur.Cron = "0 1 * * *"
		if _, _, err := s.SchedulePut(ctx, cur, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.TermBegin(ctx, 2, "m1"); err != nil {
			t.Fatal(err)
		}
		res, err := s.Term(2).ScheduleFireBatch(ctx, fires)
		if err != nil || len(res) != 5 {
			t.Fatalf("batch: %v %v", res, err)
		}
		for i, r := range res {
			if i == 2 {
				if !errors.Is(r.Err, store.ErrScheduleMoved) || len(r.Runs) != 0 {
					t.Fatalf("moved schedule: %+v", r)
				}
				continue
			}
			if r.Err != nil || len(r.Runs) != 1 || !r.Runs[0].ScheduleTime.Equal(t0) || r.Runs[0].Workflow != fmt.Sprintf("wf%d", i) {
				t.Fatalf("schedule %d: %+v", i, r)
			}
		}
		// The same read again: every cursor moved, nothing fires twice.
		res, err = s.Term(2).ScheduleFireBatch(ctx, fires)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if !errors.Is(r.Err, store.ErrScheduleMoved) {
				t.Fatalf("second batch, schedule %d: %+v", i, r)
			}
		}
		all, _, err := s.InstanceList(ctx, store.InstanceFilter{Project: "demo"})
		if err != nil || len(all) != 4 {
			t.Fatalf("runs written: %d %v, want 4", len(all), err)
		}
		// A newer term fences the old one: the whole batch is refused.
		if err := s.TermBegin(ctx, 3, "m2"); err != nil {
			t.Fatal(err)
		}
		again, _ := s.ScheduleGet(ctx, "demo", "wf0")
		if _, err := s.Term(2).ScheduleFireBatch(ctx, []store.ScheduleFire{{Schedule: again, Firing: store.Firing{Times: []time.Time{t1}}}}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("fenced batch: %v", err)
		}
	})
}

// A batch mixes schedules written together (overlap allow) with one whose
// policy reads its runs (skip), and each fires once. A time that already
// has its run fails the multi-row write: the whole batch is undone, and
// fired one by one the time is passed over while the cursor moves on.
func TestFireSchedulesMixedAndExisting(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		t1 := t0.Add(24 * time.Hour)
		put := func(name string, o model.Overlap) model.Schedule {
			if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, "name: "+name+"\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
				t.Fatal(err)
			}
			sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: name, Cron: "0 0 * * *", Enabled: true,
				NextFireTime: &t0, Overlap: o}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return sc
		}
		a, b, c := put("a", model.OverlapAllow), put("b", model.OverlapSkip), put("c", "")
		fire := func(sc model.Schedule) store.ScheduleFire {
			return store.ScheduleFire{Schedule: sc, Firing: store.Firing{Times: []time.Time{t0}, Next: &t1}}
		}
		res, err := s.ScheduleFireBatch(ctx, []store.ScheduleFire{fire(a), fire(b)})
		if err != nil || len(res[0].Runs) != 1 || len(res[1].Runs) != 1 {
			t.Fatalf("mixed batch: %+v %v", res, err)
		}
		// c's run for t0 exists (written by c's own fire), and c is read
		// again as if its cursor had not moved.
		if _, err := s.ScheduleFireOne(ctx, c, store.Firing{Times: []time.Time{t0}, Next: &t0}); err != nil {
			t.Fatal(err)
		}
		c, _ = s.ScheduleGet(ctx, "demo", "c")
		a, _ = s.ScheduleGet(ctx, "demo", "a")
		t2 := t1.Add(24 * time.Hour)
		fa := store.ScheduleFire{Schedule: a, Firing: store.Firing{Times: []time.Time{t1}, Next: &t2}}
		if _, err := s.ScheduleFireBatch(ctx, []store.ScheduleFire{fa, fire(c)}); err == nil {
			t.Fatal("a batch with a time that has its run: no error")
		}
		if all, _, _ := s.InstanceList(ctx, store.InstanceFilter{Project: "demo"}); len(all) != 3 {
			t.Fatalf("after the undone batch: %d runs, want 3", len(all))
		}
		runs, err := s.ScheduleFireOne(ctx, c, store.Firing{Times: []time.Time{t0}, Next: &t1})
		if err != nil || len(runs) != 0 {
			t.Fatalf("one by one: %v %v, want the time passed over", runs, err)
		}
		if got, _ := s.ScheduleGet(ctx, "demo", "c"); got.NextFireTime == nil || !got.NextFireTime.Equal(t1) {
			t.Fatalf("c's cursor %v, want %v", got.NextFireTime, t1)
		}
		if runs, err := s.ScheduleFireOne(ctx, a, fa.Firing); err != nil || len(runs) != 1 {
			t.Fatalf("a one by one: %v %v", runs, err)
		}
	})
}
