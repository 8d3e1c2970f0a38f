package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// ledgerOf reads the whole ledger of schedule id as "HH:MM outcome[ run]".
func ledgerOf(t *testing.T, s *store.Store, id int64) []string {
	t.Helper()
	fs, more, err := s.ScheduleFires(t.Context(), "demo", id, store.FireFilter{Limit: 1000})
	if err != nil || more {
		t.Fatalf("ledger of %d: more %v %v", id, more, err)
	}
	var out []string
	for _, f := range fs {
		line := f.DueTime.Format("15:04") + " " + string(f.Outcome)
		if f.InstanceID != nil {
			line += " run"
		}
		out = append(out, line)
	}
	return out
}

func wantLedger(t *testing.T, s *store.Store, id int64, want ...string) {
	t.Helper()
	if got := ledgerOf(t, s, id); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("ledger of schedule %d:\n got %v\nwant %v", id, got, want)
	}
}

// Every due time of a fire transaction is one ledger row, written with
// it: fired (batch and one by one), missed, refused by the calendar,
// skipped, queued and replaced under the overlap policies; a time asked
// for again keeps its one row.
func TestFireLedgerOutcomes(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapAllow) // fires at 00:00, 01:00, ...
		sc, _ := s.ScheduleGet(f.ctx, "demo", "diamond")
		t0 := f.next
		m1, m2, r1 := t0.Add(-3*time.Hour), t0.Add(-2*time.Hour), t0.Add(-time.Hour)
		next := t0.Add(time.Hour)
		firing := store.Firing{Times: []time.Time{t0}, Next: &next, Missed: []time.Time{m1, m2}, Refused: []time.Time{r1}}
		res, err := f.term.ScheduleFireBatch(f.ctx, []store.ScheduleFire{{Schedule: sc, Firing: firing}})
		if err != nil || res[0].Err != nil || len(res[0].Runs) != 1 {
			t.Fatalf("batch: %+v %v", res, err)
		}
		want := []string{"21:00 missed", "22:00 missed", "23:00 refused_calendar", "00:00 fired run"}
		wantLedger(t, s, sc.ID, want...)
		fs, _, _ := s.ScheduleFires(f.ctx, "demo", sc.ID, store.FireFilter{Outcome: model.FireFired, Limit: 10})
		if len(fs) != 1 || *fs[0].InstanceID != res[0].Runs[0].ID {
			t.Fatalf("fired row %+v, want run %d", fs, res[0].Runs[0].ID)
		}
		// Asked again from a fresh read (a new leader replaying the pass):
		// one by one, the run exists and the rows stay one a time.
		sc, _ = s.ScheduleGet(f.ctx, "demo", "diamond")
		if runs, err := f.term.ScheduleFireOne(f.ctx, sc, firing); err != nil || len(runs) != 0 {
			t.Fatalf("replay: %v %v", runs, err)
		}
		wantLedger(t, s, sc.ID, want...)

		// Pages by due time.
		page, more, err := s.ScheduleFires(f.ctx, "demo", sc.ID, store.FireFilter{Limit: 2})
		if err != nil || !more || len(page) != 2 {
			t.Fatalf("page 1: %d %v %v", len(page), more, err)
		}
		page, more, _ = s.ScheduleFires(f.ctx, "demo", sc.ID, store.FireFilter{Limit: 2, After: page[1].DueTime})
		if more || len(page) != 2 || !page[1].DueTime.Equal(t0) {
			t.Fatalf("page 2: %+v %v", page, more)
		}
		page, more, _ = s.ScheduleFires(f.ctx, "demo", sc.ID, store.FireFilter{Limit: 3, Desc: true})
		if !more || len(page) != 3 || !page[0].DueTime.Equal(t0) || !page[2].DueTime.Equal(m2) {
			t.Fatalf("newest first: %+v %v", page, more)
		}
		if page, more, _ = s.ScheduleFires(f.ctx, "demo", sc.ID, store.FireFilter{Limit: 3, Desc: true, After: page[2].DueTime}); more || len(page) != 1 || !page[0].DueTime.Equal(m1) {
			t.Fatalf("newest first, page 2: %+v %v", page, more)
		}
		from := m2
		if page, _, _ = s.ScheduleFires(f.ctx, "demo", sc.ID, store.FireFilter{From: &from, To: &r1, Limit: 10}); len(page) != 2 {
			t.Fatalf("from..to: %+v", page)
		}
		if _, _, err := s.ScheduleFires(f.ctx, "other", sc.ID, store.FireFilter{Limit: 10}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another project's schedule: %v", err)
		}
	})
}

func TestFireLedgerOverlap(t *testing.T) {
	for _, tc := range []struct {
		o    model.Overlap
		want []string
	}{
		{model.OverlapSkip, []string{"00:00 fired run", "01:00 skipped_overlap"}},
		{model.OverlapWait, []string{"00:00 fired run", "01:00 queued run"}},
		{model.OverlapReplace, []string{"00:00 fired run", "01:00 replaced run"}},
	} {
		t.Run(string(tc.o), func(t *testing.T) {
			each(t, func(t *testing.T, s *store.Store) {
				f := newOverlap(t, s, tc.o)
				f.fire()
				f.claim() // running when the next one fires
				f.fire()
				sc, _ := s.ScheduleGet(f.ctx, "demo", "diamond")
				wantLedger(t, s, sc.ID, tc.want...)
			})
		})
	}
}

// Missed fires are compensated once each: a preview makes nothing, a
// named time or every missed one runs with that schedule time and turns
// its row compensated with the run; again, nothing more runs.
func TestFireCompensateOnce(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapAllow)
		sc, _ := s.ScheduleGet(f.ctx, "demo", "diamond")
		t0 := f.next
		m1, m2 := t0.Add(-2*time.Hour), t0.Add(-time.Hour)
		next := t0.Add(time.Hour)
		if _, err := f.term.ScheduleFireOne(f.ctx, sc, store.Firing{Times: []time.Time{t0}, Next: &next, Missed: []time.Time{m1, m2}}); err != nil {
			t.Fatal(err)
		}
		preview, err := s.ScheduleCompensate(f.ctx, "demo", sc.ID, store.CompensateRequest{AllMissed: true, DryRun: true})
		if err != nil || len(preview) != 2 || !preview[0].DueTime.Equal(m1) || preview[0].InstanceID != 0 {
			t.Fatalf("preview: %+v %v", preview, err)
		}
		wantLedger(t, s, sc.ID, "22:00 missed", "23:00 missed", "00:00 fired run")
		if _, err := s.ScheduleCompensate(f.ctx, "demo", sc.ID, store.CompensateRequest{Times: []time.Time{m1, t0}}); !errors.Is(err, store.ErrNotMissed) ||
			!strings.Contains(err.Error(), t0.Format(time.RFC3339)) {
			t.Fatalf("a fired time named: %v", err)
		}
		wantLedger(t, s, sc.ID, "22:00 missed", "23:00 missed", "00:00 fired run")
		done, err := s.ScheduleCompensate(f.ctx, "demo", sc.ID, store.CompensateRequest{Times: []time.Time{m1}})
		if err != nil || len(done) != 1 || done[0].InstanceID == 0 {
			t.Fatalf("compensate m1: %+v %v", done, err)
		}
		inst, err := s.InstanceGet(f.ctx, done[0].InstanceID)
		if err != nil || inst.ScheduleTime == nil || !inst.ScheduleTime.Equal(m1) || inst.ScheduleID != sc.ID {
			t.Fatalf("compensated run: %+v %v", inst, err)
		}
		if _, err := s.ScheduleCompensate(f.ctx, "demo", sc.ID, store.CompensateRequest{Times: []time.Time{m1}}); !errors.Is(err, store.ErrNotMissed) {
			t.Fatalf("m1 twice: %v", err)
		}
		all, err := s.ScheduleCompensate(f.ctx, "demo", sc.ID, store.CompensateRequest{AllMissed: true})
		if err != nil || len(all) != 1 || !all[0].DueTime.Equal(m2) {
			t.Fatalf("all missed: %+v %v", all, err)
		}
		if again, err := s.ScheduleCompensate(f.ctx, "demo", sc.ID, store.CompensateRequest{AllMissed: true}); err != nil || len(again) != 0 {
			t.Fatalf("all missed again: %+v %v", again, err)
		}
		wantLedger(t, s, sc.ID, "22:00 compensated run", "23:00 compensated run", "00:00 fired run")
		runs, _, _ := s.InstanceList(f.ctx, store.InstanceFilter{Project: "demo"})
		if len(runs) != 3 {
			t.Fatalf("%d runs, want one per due time", len(runs))
		}
		if _, err := s.ScheduleCompensate(f.ctx, "other", sc.ID, store.CompensateRequest{AllMissed: true}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another project: %v", err)
		}
	})
}

// A resume lists the fire times due while the schedule was paused as
// missed; a fire written ahead and taken back by an edit leaves no row.
func TestFireLedgerPausedAndTakenBack(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapAllow)
		sc, _ := s.ScheduleGet(f.ctx, "demo", "diamond")
		sc.Enabled, sc.NextFireTime = false, nil
		if _, _, err := s.SchedulePut(f.ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
		p1, p2 := f.next, f.next.Add(time.Hour)
		sc.Enabled, sc.PausedFires = true, []time.Time{p1, p2}
		resumed, _, err := s.SchedulePut(f.ctx, sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantLedger(t, s, sc.ID, "00:00 missed", "01:00 missed")
		// An edit of an enabled schedule lists nothing.
		if _, _, err := s.SchedulePut(f.ctx, resumed, nil); err != nil {
			t.Fatal(err)
		}
		wantLedger(t, s, sc.ID, "00:00 missed", "01:00 missed")

		ahead := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
		next := ahead.Add(time.Hour)
		cur, _ := s.ScheduleGet(f.ctx, "demo", "diamond")
		res, err := f.term.ScheduleFireBatch(f.ctx, []store.ScheduleFire{{Schedule: cur, Firing: store.Firing{Times: []time.Time{ahead}, Next: &next}, NotBefore: ahead}})
		if err != nil || len(res[0].Runs) != 1 {
			t.Fatalf("fire ahead: %+v %v", res, err)
		}
		if got := ledgerOf(t, s, sc.ID); len(got) != 3 {
			t.Fatalf("after the fire ahead: %v", got)
		}
		cur, _ = s.ScheduleGet(f.ctx, "demo", "diamond")
		cur.Params = map[string]string{"X": "1"}
		if _, _, err := s.SchedulePut(f.ctx, cur, nil); err != nil {
			t.Fatal(err)
		}
		wantLedger(t, s, sc.ID, "00:00 missed", "01:00 missed")
		if err := s.ScheduleDelete(f.ctx, "demo", "diamond"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.ScheduleFires(f.ctx, "demo", sc.ID, store.FireFilter{Limit: 1}); !errors.Is(err, store.ErrNotFound) {
			t.Fatal(fmt.Sprint("deleted schedule's fires: ", err))
		}
	})
}

// TestRetentionPurgesOldRunlessFires: the ledger's rows that made no run
// (here missed) go with the project's keep_days, as its runs do; a newer
// one stays, and so does a fire whose run stays. The plan counts them.
func TestRetentionPurgesOldRunlessFires(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		f := newOverlap(t, s, model.OverlapAllow)
		sc, _ := s.ScheduleGet(f.ctx, "demo", "diamond")
		t0 := f.next
		old, recent := t0.AddDate(0, 0, -30), t0.Add(-time.Hour)
		next := t0.Add(time.Hour)
		firing := store.Firing{Times: []time.Time{t0}, Next: &next, Missed: []time.Time{old, recent}}
		if res, err := f.term.ScheduleFireBatch(f.ctx, []store.ScheduleFire{{Schedule: sc, Firing: firing}}); err != nil || res[0].Err != nil {
			t.Fatalf("batch: %+v %v", res, err)
		}
		pol := model.RetentionPolicy{KeepDays: 5}
		plan, err := s.RetentionPlan(f.ctx, "demo", pol, t0)
		if err != nil || plan.LedgerRows != 1 {
			t.Fatalf("plan: ledger rows %d (%v), want the one old missed fire", plan.LedgerRows, err)
		}
		done, err := s.RetentionPurge(f.ctx, "demo", pol, t0, store.PurgeOptions{})
		if err != nil || done.LedgerRows != plan.LedgerRows {
			t.Fatalf("purge: %+v %v; plan %d", done, err, plan.LedgerRows)
		}
		wantLedger(t, s, sc.ID, recent.Format("15:04")+" missed", t0.Format("15:04")+" fired run")
	})
}
