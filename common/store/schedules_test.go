package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestScheduleFiresOnce: a fire writes its runs and moves the schedule on in
// one transaction; a second fire planned from the same read, a fire after
// an edit, and a fire from a fenced term all change nothing.
func TestScheduleFiresOnce(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		if _, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "nope", Cron: "@daily"}, nil); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("schedule of a missing workflow: %v", err)
		}
		t0 := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
		high := model.PriorityHigh
		sc, created, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "diamond", Cron: "0 2 * * *",
			Timezone: "Europe/Berlin", Priority: &high, Params: map[string]string{"k": "v"}, Enabled: true, NextFireTime: &t0}, nil)
		if err != nil || !created || sc.Revision != 0 {
			t.Fatalf("put: %+v %v %v", sc, created, err)
		}
		if err := s.TermBegin(ctx, 3, "m1"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(3)
		t1 := t0.Add(24 * time.Hour)
		insts, err := term.ScheduleFireOne(ctx, sc, store.Firing{Times: []time.Time{t0}, Next: &t1})
		if err != nil || len(insts) != 1 {
			t.Fatalf("fire: %v %v", insts, err)
		}
		in := insts[0]
		if in.ScheduleID != sc.ID || !in.ScheduleTime.Equal(t0) || in.Priority != model.PriorityHigh ||
			in.CommandType != model.CommandScheduled || in.Params["k"] != "v" || in.Timezone != "Europe/Berlin" {
			t.Fatalf("fired run %+v", in)
		}
		if _, err := term.ScheduleFireOne(ctx, sc, store.Firing{Times: []time.Time{t0}, Next: &t1}); !errors.Is(err, store.ErrScheduleMoved) {
			t.Fatalf("second fire from the same read: %v", err)
		}
		got, _ := s.ScheduleGet(ctx, "demo", "diamond")
		if got.Revision != 1 || !got.NextFireTime.Equal(t1) || !got.LastFireTime.Equal(t0) || !got.UpdatedAt.Equal(sc.UpdatedAt) {
			t.Fatalf("after fire: %+v", got)
		}
		// An edit moves the revision: a fire planned before it is refused.
		got.Cron = "0 3 * * *"
		edited, created, err := s.SchedulePut(ctx, got, nil)
		if err != nil || created || edited.Revision != 2 || edited.ID != sc.ID || !edited.LastFireTime.Equal(t0) {
			t.Fatalf("edit: %+v %v %v", edited, created, err)
		}
		if _, err := term.ScheduleFireOne(ctx, got, store.Firing{Times: []time.Time{t1}}); !errors.Is(err, store.ErrScheduleMoved) {
			t.Fatalf("fire planned before an edit: %v", err)
		}
		// The same schedule time is not written twice, even by a fire from a
		// fresh read that asks for it again: it is passed over and the
		// schedule moves on, so it cannot get stuck on that time.
		again, err := term.ScheduleFireOne(ctx, edited, store.Firing{Times: []time.Time{t0}, Next: &t1})
		if moved, _ := s.ScheduleGet(ctx, "demo", "diamond"); err != nil || len(again) != 0 || moved.Revision != edited.Revision+1 {
			t.Fatalf("fire of a time already run: %v %v, revision %d", again, err, moved.Revision)
		}
		if err := s.TermBegin(ctx, 4, "m2"); err != nil {
			t.Fatal(err)
		}
		if _, err := term.ScheduleFireOne(ctx, edited, store.Firing{Times: []time.Time{t1}}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("fire from a fenced term: %v", err)
		}
		all, n, _ := s.InstanceList(ctx, store.InstanceFilter{Project: "demo"})
		if n != 1 || all[0].ID != in.ID {
			t.Fatalf("instances after the refused fires: %d", n)
		}
		armed, _ := s.ScheduleArmed(ctx)
		if len(armed) != 1 {
			t.Fatalf("armed: %+v", armed)
		}
		// A disabled schedule is not armed and cannot fire.
		edited.Enabled, edited.NextFireTime = false, nil
		off, _, _ := s.SchedulePut(ctx, edited, nil)
		if armed, _ := s.ScheduleArmed(ctx); len(armed) != 0 {
			t.Fatalf("armed after disable: %+v", armed)
		}
		if _, err := s.Term(4).ScheduleFireOne(ctx, off, store.Firing{Times: []time.Time{t1}}); !errors.Is(err, store.ErrScheduleMoved) {
			t.Fatalf("fire of a disabled schedule: %v", err)
		}
		if l, _ := s.ScheduleList(ctx, "demo"); len(l) != 1 {
			t.Fatalf("list: %+v", l)
		}
		if err := s.ScheduleDelete(ctx, "demo", "diamond"); err != nil {
			t.Fatal(err)
		}
		if err := s.ScheduleDelete(ctx, "demo", "diamond"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		// Deleting the workflow (no unfinished runs) takes its schedule along.
		s.SchedulePut(ctx, off, nil)
		if err := s.Term(4).InstanceFinish(ctx, in.ID, model.WorkflowSucceeded, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
		if err := s.WorkflowDelete(ctx, "demo", "diamond"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ScheduleGet(ctx, "demo", "diamond"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("schedule after its workflow was deleted: %v", err)
		}
	})
}

// TestScheduleEditsRacingFires: editors replace a schedule while it fires.
// An edit never undoes a fire (the last fire time only moves forward, every
// fired time keeps its one run), and a time an edit asks for again is
// passed over, not a stuck cursor.
func TestScheduleEditsRacingFires(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		t0 := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
		if _, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "diamond", Cron: "* * * * * *",
			Enabled: true, NextFireTime: &t0}, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.TermBegin(ctx, 1, "m"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(1)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					cur, err := s.ScheduleGet(ctx, "demo", "diamond")
					if err == nil {
						cur.UpdatedBy = "editor"
						_, _, err = s.SchedulePut(ctx, cur, nil)
					}
					if err != nil && !errors.Is(err, store.ErrConflict) {
						t.Error(err)
						return
					}
				}
			}()
		}
		var last time.Time
		runs := 0
		for runs < 10 && !t.Failed() {
			cur, err := s.ScheduleGet(ctx, "demo", "diamond")
			if err != nil {
				t.Fatal(err)
			}
			if cur.LastFireTime != nil && cur.LastFireTime.Before(last) {
				t.Fatalf("last fire went back from %v to %v", last, cur.LastFireTime)
			}
			at := *cur.NextFireTime
			next := at.Add(time.Second)
			insts, err := term.ScheduleFireOne(ctx, cur, store.Firing{Times: []time.Time{at}, Next: &next})
			if errors.Is(err, store.ErrScheduleMoved) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			runs += len(insts)
			last = at
		}
		close(stop)
		wg.Wait()
		all, n, _ := s.InstanceList(ctx, store.InstanceFilter{Project: "demo", Limit: 1000})
		seen := map[time.Time]bool{}
		for _, in := range all {
			if seen[*in.ScheduleTime] {
				t.Fatalf("time %v ran twice", in.ScheduleTime)
			}
			seen[*in.ScheduleTime] = true
		}
		if n != int64(runs) {
			t.Fatalf("%d instances for %d fired runs", n, runs)
		}
	})
}

// TestScheduleVersionRefusesStaleEdits: an edit that names the version it
// read is refused once another edit landed, and fires do not count as edits.
func TestScheduleVersionRefusesStaleEdits(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		t0 := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
		zero := int64(0)
		sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "diamond", Cron: "0 2 * * *",
			Enabled: true, NextFireTime: &t0}, &zero)
		if err != nil || sc.Version != 0 {
			t.Fatalf("create at version 0: %+v %v", sc, err)
		}
		if err := s.TermBegin(ctx, 1, "m"); err != nil {
			t.Fatal(err)
		}
		t1 := t0.Add(24 * time.Hour)
		if _, err := s.Term(1).ScheduleFireOne(ctx, sc, store.Firing{Times: []time.Time{t0}, Next: &t1}); err != nil {
			t.Fatal(err)
		}
		sc.Enabled, sc.UpdatedBy = false, "ann"
		ann, _, err := s.SchedulePut(ctx, sc, &zero) // a fire is not an edit: version 0 still holds
		if err != nil || ann.Version != 1 {
			t.Fatalf("edit after a fire: %+v %v", ann, err)
		}
		sc.Enabled, sc.UpdatedBy = true, "bob"
		if _, _, err := s.SchedulePut(ctx, sc, &zero); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "version 1") {
			t.Fatalf("stale edit: %v", err)
		}
		if got, _ := s.ScheduleGet(ctx, "demo", "diamond"); got.Enabled || got.UpdatedBy != "ann" {
			t.Fatalf("the stale edit changed the schedule: %+v", got)
		}
		if _, _, err := s.SchedulePut(ctx, sc, nil); err != nil { // no version: last writer wins
			t.Fatal(err)
		}
	})
}
