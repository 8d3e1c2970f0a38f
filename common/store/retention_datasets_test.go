package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestRetentionDatasets: a purge takes the dataset fires of the runs it
// purges and the old dataset events no decision needs, exactly what its
// dry run counted, and keeps an event a decision still needs (not yet
// evaluated, its partition waiting on an input, a decision that did not
// see it) or a young one.
func TestRetentionDatasets(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		demo, err := s.ProjectCreate(ctx, "demo", "")
		must(t, err)
		other, err := s.ProjectCreate(ctx, "other", "")
		must(t, err)
		now := time.Now().UTC().Truncate(time.Second)
		r := &retentionSeed{t: t, s: s, now: now}
		oldRun := r.run(demo.ID, "demo", "c", model.WorkflowSucceeded, 20, 1, 0, false)
		newRun := r.run(demo.ID, "demo", "c", model.WorkflowSucceeded, 0, 1, 0, false)
		// Every event of the runs is delivered.
		must(t, store.ExecRaw(s, `UPDATE alert_cursor SET seq = ? WHERE id = 1`, int64(1)<<40))
		// c consumes raw and ref, daily: a day runs once both are produced.
		for _, ds := range []string{"raw", "ref"} {
			must(t, store.ExecRaw(s, `INSERT INTO dataset_ref (project_id, workflow_name, dataset, role, grain, late_data, run_grain)
				VALUES (?, 'c', ?, 'consumes', 'daily', 'ignore', 'daily')`, demo.ID, ds))
		}
		old, young := now.AddDate(0, 0, -10), now.AddDate(0, 0, -1)
		n := 0
		event := func(projectID int64, ds, part string, at time.Time, evaluated bool) int64 {
			t.Helper()
			n++
			must(t, store.ExecRaw(s, `INSERT INTO dataset_event (project_id, dataset, partition_key, producer, produced_at, evaluated)
				VALUES (?, ?, ?, ?, ?, ?)`, projectID, ds, part, "ext:"+string(rune('a'+n)), at, evaluated))
			id, err := store.QueryInt(s, `SELECT MAX(id) FROM dataset_event`)
			must(t, err)
			return id
		}
		fire := func(part string, covered int64, run any, dedupe any) {
			t.Helper()
			must(t, store.ExecRaw(s, `INSERT INTO dataset_fire (project_id, workflow_name, partition_key, dedupe_key, event_id,
				covered_event_id, outcome, reason, run_id, fired_at) VALUES (?, 'c', ?, ?, ?, ?, 'fired', '', ?, ?)`,
				demo.ID, part, dedupe, covered, covered, run, old))
		}
		// 11-01: both inputs produced and decided by the old run's fire.
		raw1 := event(demo.ID, "raw", "2026-11-01", old, true)
		ref1 := event(demo.ID, "ref", "2026-11-01", old, true)
		fire("2026-11-01", ref1, oldRun, "2026-11-01")
		// 11-04: the old run's first decision, then a rerun by the new
		// run: the superseded decision goes with its run.
		raw4 := event(demo.ID, "raw", "2026-11-04", old, true)
		ref4 := event(demo.ID, "ref", "2026-11-04", old, true)
		fire("2026-11-04", ref4-1, oldRun, "2026-11-04")
		fire("2026-11-04", ref4, newRun, "2026-11-04#re")
		// raw@11-01 again, not yet evaluated: stays.
		again := event(demo.ID, "raw", "2026-11-01", old, false)
		// 11-02: only raw produced, c waits for ref: stays.
		waiting := event(demo.ID, "raw", "2026-11-02", old, true)
		// 11-03: decided by a fire that saw raw (it goes) and not the
		// later ref event (it stays).
		raw3 := event(demo.ID, "raw", "2026-11-03", old, true)
		fire("2026-11-03", raw3, newRun, "2026-11-03")
		unseen := event(demo.ID, "ref", "2026-11-03", old, true)
		// 11-05: decided, but produced a day ago: stays.
		y1 := event(demo.ID, "raw", "2026-11-05", young, true)
		y2 := event(demo.ID, "ref", "2026-11-05", young, true)
		fire("2026-11-05", y2, nil, nil)
		// A dataset nobody consumes: nothing needs it.
		orphan := event(demo.ID, "orphan", "2026-11-01", old, true)
		// Another project's old event: not this purge's.
		elsewhere := event(other.ID, "orphan", "2026-11-01", old, true)

		pol := model.RetentionPolicy{KeepDays: 3, KeepRuns: 1}
		plan, err := s.RetentionPlan(ctx, "demo", pol, now)
		must(t, err)
		if !slices.Equal(plan.Roots, []int64{oldRun}) {
			t.Fatalf("plan roots %v, want [%d]", plan.Roots, oldRun)
		}
		if plan.DatasetEventRows != 6 || plan.LedgerRows != 1 {
			t.Fatalf("plan: %d dataset events, %d ledger rows; want 6 (11-01, 11-04, raw of 11-03, orphan) and 1 (the old run's superseded fire)",
				plan.DatasetEventRows, plan.LedgerRows)
		}
		fires := count(t, s, `SELECT COUNT(*) FROM dataset_fire`)
		done, err := s.RetentionPurge(ctx, "demo", pol, now, store.PurgeOptions{Batch: 2, Pause: time.Millisecond})
		must(t, err)
		if done.DatasetEventRows != plan.DatasetEventRows || done.LedgerRows != plan.LedgerRows || done.Bytes != plan.Bytes {
			t.Fatalf("purge: %d dataset events, %d ledger rows, %d bytes; plan %d, %d, %d", done.DatasetEventRows,
				done.LedgerRows, done.Bytes, plan.DatasetEventRows, plan.LedgerRows, plan.Bytes)
		}
		for _, id := range []int64{raw1, ref1, raw3, raw4, ref4, orphan} {
			if count(t, s, `SELECT COUNT(*) FROM dataset_event WHERE id = ?`, id) != 0 {
				t.Errorf("dataset event %d no decision needs is still there", id)
			}
		}
		for _, id := range []int64{again, waiting, unseen, y1, y2, elsewhere} {
			if count(t, s, `SELECT COUNT(*) FROM dataset_event WHERE id = ?`, id) != 1 {
				t.Errorf("dataset event %d, which a decision needs or is young, was purged", id)
			}
		}
		if got := count(t, s, `SELECT COUNT(*) FROM dataset_fire`); got != fires-1 ||
			count(t, s, `SELECT COUNT(*) FROM dataset_fire WHERE run_id = ?`, oldRun) != 0 ||
			count(t, s, `SELECT COUNT(*) FROM dataset_fire WHERE partition_key = '2026-11-01' AND run_id IS NULL`) != 1 {
			t.Fatalf("%d dataset fires left of %d; want the purged run's superseded one gone, its newest kept without the run", got, fires)
		}
		again2, err := s.RetentionPlan(ctx, "demo", pol, now)
		must(t, err)
		if again2.DatasetEventRows != 0 || again2.LedgerRows != 0 {
			t.Fatalf("a plan after the purge still lists %d dataset events, %d ledger rows", again2.DatasetEventRows, again2.LedgerRows)
		}
		// The kept decision still decides: raw@11-01 produced again is an
		// ignored re-produce (late_data ignore), not a first run nor
		// nothing (its ref event went).
		got, err := s.DatasetEvaluate(ctx, again)
		must(t, err)
		if len(got) != 1 || got[0].Outcome != model.DatasetIgnored {
			t.Fatalf("evaluating raw@11-01 again after the purge: %+v, want one ignored decision", got)
		}
		// Decided now, it goes at the next purge.
		after, err := s.RetentionPlan(ctx, "demo", pol, now)
		must(t, err)
		if after.DatasetEventRows != 1 {
			t.Fatalf("after its decision, a plan lists %d dataset events, want 1 (raw@11-01 again)", after.DatasetEventRows)
		}
	})
}
