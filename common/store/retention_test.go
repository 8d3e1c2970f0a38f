package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// retentionSeed writes runs by SQL, as the scheduler leaves them.
type retentionSeed struct {
	t   *testing.T
	s   *store.Store
	now time.Time
	seq int64
}

// run writes a run of workflow in project that ended daysAgo, in state,
// under parent (0: a root), with tasks task rows (each with a log file),
// one history row and two events (delivered unless undelivered).
func (r *retentionSeed) run(projectID int64, project, workflow string, state model.WorkflowState, daysAgo, tasks int, parent int64, undelivered bool) int64 {
	r.t.Helper()
	end := r.now.Add(-time.Duration(daysAgo)*24*time.Hour - time.Minute)
	var par any
	if parent != 0 {
		par = parent
	}
	must(r.t, store.ExecRaw(r.s, `INSERT INTO workflow_instance (project_id, project_name, workflow_name, workflow_definition_id,
		version, state, command_type, priority, params_json, created_at, start_time, end_time, parent_instance_id)
		VALUES (?, ?, ?, 1, 1, ?, 'start', 2, '{"p":"x"}', ?, ?, ?, ?)`, projectID, project, workflow, string(state), end, end, end, par))
	id, err := store.QueryInt(r.s, `SELECT MAX(id) FROM workflow_instance`)
	must(r.t, err)
	for i := range tasks {
		must(r.t, store.ExecRaw(r.s, `INSERT INTO task_instance (workflow_instance_id, name, type, state, priority, log_path, outputs_json)
			VALUES (?, ?, 'shell', 'succeeded', 2, ?, '{"o":"1"}')`, id, fmt.Sprintf("t%d", i), fmt.Sprintf("/logs/%d/%d.log", id, i)))
	}
	must(r.t, store.ExecRaw(r.s, `INSERT INTO instance_history (workflow_instance_id, action, requested_by, detail, at)
		VALUES (?, 'rerun', 'admin', '', ?)`, id, end))
	for range 2 {
		var seq any
		if !undelivered {
			r.seq++
			seq = r.seq
		}
		must(r.t, store.ExecRaw(r.s, `INSERT INTO event (seq, time, kind, project, workflow, instance_id, state, detail_json)
			VALUES (?, ?, 'instance', ?, ?, ?, ?, '{}')`, seq, end, project, workflow, id, string(state)))
	}
	return id
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, s *store.Store, q string, args ...any) int64 {
	t.Helper()
	n, err := store.QueryInt(s, q, args...)
	must(t, err)
	return n
}

// TestRetentionDryRunEqualsPurge: the plan lists exactly what the purge
// then deletes, keeps what a running or waiting run needs, and a second
// plan finds nothing.
func TestRetentionDryRunEqualsPurge(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		demo, err := s.ProjectCreate(ctx, "demo", "")
		must(t, err)
		other, err := s.ProjectCreate(ctx, "other", "")
		must(t, err)
		now := time.Now().UTC().Truncate(time.Second)
		r := &retentionSeed{t: t, s: s, now: now}
		var want []int64 // roots that go
		// Workflow a: runs ended 10..0 days ago (and a minute); keep_runs 2
		// and keep_days 3 keep the two newest and the one of two days ago.
		for d := 10; d >= 0; d-- {
			id := r.run(demo.ID, "demo", "a", model.WorkflowSucceeded, d, 3, 0, false)
			if d >= 3 {
				want = append(want, id)
			}
		}
		running := r.run(demo.ID, "demo", "old", model.WorkflowRunning, 20, 2, 0, false)
		paused := r.run(demo.ID, "demo", "old", model.WorkflowPaused, 20, 2, 0, false)
		// A finished parent with a running child stays, with its child.
		busyParent := r.run(demo.ID, "demo", "old", model.WorkflowFailed, 20, 1, 0, false)
		busyChild := r.run(demo.ID, "demo", "child", model.WorkflowRunning, 20, 1, busyParent, false)
		// A finished tree goes whole: parent, child, grandchild.
		doneParent := r.run(demo.ID, "demo", "old", model.WorkflowSucceeded, 20, 1, 0, false)
		doneChild := r.run(demo.ID, "demo", "child", model.WorkflowSucceeded, 20, 2, doneParent, false)
		doneGrand := r.run(other.ID, "other", "grand", model.WorkflowStopped, 20, 2, doneChild, false)
		want = append(want, doneParent)
		// A run a command waits for, and one with undelivered events, stay.
		commanded := r.run(demo.ID, "demo", "old", model.WorkflowFailed, 20, 1, 0, false)
		must(t, store.ExecRaw(s, `INSERT INTO command (type, workflow_instance_id, created_at) VALUES ('rerun', ?, ?)`, commanded, now))
		undelivered := r.run(demo.ID, "demo", "old", model.WorkflowSucceeded, 20, 1, 0, true)
		// The webhooks and alert planner have passed every event before
		// the undelivered run's (on SQLite an event's seq is its id).
		cursor := r.seq
		if store.SeqIsID(s) {
			cursor = count(t, s, `SELECT MIN(id) FROM event WHERE instance_id = ?`, undelivered) - 1
		}
		r.run(demo.ID, "demo", "old", model.WorkflowSucceeded, 20, 1, 0, false)           // kept by keep_runs
		newest := r.run(demo.ID, "demo", "old", model.WorkflowSucceeded, 20, 1, 0, false) // the newest of "old"
		lone := r.run(demo.ID, "demo", "b", model.WorkflowSucceeded, 30, 1, 0, false)     // the only run of b
		otherOld := r.run(other.ID, "other", "a", model.WorkflowSucceeded, 30, 1, 0, false)
		r.run(other.ID, "other", "a", model.WorkflowSucceeded, 30, 1, 0, false)
		must(t, store.ExecRaw(s, `UPDATE alert_cursor SET seq = ? WHERE id = 1`, cursor))

		pol := model.RetentionPolicy{KeepDays: 3, KeepRuns: 2}
		plan, err := s.RetentionPlan(ctx, "demo", pol, now)
		must(t, err)
		slices.Sort(want)
		if !slices.Equal(plan.Roots, want) {
			t.Fatalf("plan roots %v, want %v (kept %v)", plan.Roots, want, plan.Kept)
		}
		for _, id := range []int64{doneChild, doneGrand} {
			if !slices.Contains(plan.Instances, id) {
				t.Errorf("plan misses sub_workflow run %d of a finished tree", id)
			}
		}
		for _, id := range []int64{running, paused, busyParent, busyChild, commanded, undelivered, newest, lone, otherOld} {
			if slices.Contains(plan.Instances, id) {
				t.Errorf("plan deletes run %d, which must stay", id)
			}
		}
		for why, n := range map[string]int{model.KeepUnfinished: 2, store.KeptByChild: 1, store.KeptByCommand: 1,
			store.KeptByEvents: 1, model.KeepNewest: 3, model.KeepByRuns: 2, model.KeepByDays: 1} {
			if plan.Kept[why] != n {
				t.Errorf("kept %q: %d, want %d (all %v)", why, plan.Kept[why], n, plan.Kept)
			}
		}
		// 8 runs of a with 3 tasks, the tree's 1+2+2.
		if plan.TaskRows != 8*3+5 || plan.LogFiles != plan.TaskRows || plan.HistoryRows != 11 || plan.EventRows != 22 || plan.CommandRows != 0 {
			t.Fatalf("plan counts: %+v", plan)
		}
		if plan.Bytes <= plan.TaskRows*100 {
			t.Fatalf("plan bytes %d for %d task rows: too few", plan.Bytes, plan.TaskRows)
		}
		tasksBefore := count(t, s, `SELECT COUNT(*) FROM task_instance`)
		eventsBefore := count(t, s, `SELECT COUNT(*) FROM event`)

		done, err := s.RetentionPurge(ctx, "demo", pol, now, store.PurgeOptions{Batch: 4, Pause: time.Millisecond})
		must(t, err)
		if !slices.Equal(done.Roots, plan.Roots) || !slices.Equal(done.Instances, plan.Instances) || len(done.Skipped) != 0 {
			t.Fatalf("purge deleted roots %v instances %v (skipped %v); the plan listed %v %v",
				done.Roots, done.Instances, done.Skipped, plan.Roots, plan.Instances)
		}
		if done.TaskRows != plan.TaskRows || done.HistoryRows != plan.HistoryRows || done.EventRows != plan.EventRows ||
			done.CommandRows != plan.CommandRows {
			t.Fatalf("purge counts %+v, plan %+v", done, plan)
		}
		if n := count(t, s, `SELECT COUNT(*) FROM task_instance`); n != tasksBefore-plan.TaskRows {
			t.Fatalf("%d task rows left, want %d", n, tasksBefore-plan.TaskRows)
		}
		if n := count(t, s, `SELECT COUNT(*) FROM event`); n != eventsBefore-plan.EventRows {
			t.Fatalf("%d events left, want %d", n, eventsBefore-plan.EventRows)
		}
		for _, id := range plan.Instances {
			if n := count(t, s, `SELECT COUNT(*) FROM workflow_instance WHERE id = ?`, id) +
				count(t, s, `SELECT COUNT(*) FROM task_instance WHERE workflow_instance_id = ?`, id) +
				count(t, s, `SELECT COUNT(*) FROM instance_history WHERE workflow_instance_id = ?`, id); n != 0 {
				t.Fatalf("run %d: %d rows left after the purge", id, n)
			}
		}
		for _, id := range []int64{running, paused, busyParent, busyChild, commanded, undelivered, newest, lone, otherOld} {
			if n := count(t, s, `SELECT COUNT(*) FROM workflow_instance WHERE id = ?`, id); n != 1 {
				t.Fatalf("run %d that must stay was deleted", id)
			}
		}
		again, err := s.RetentionPlan(ctx, "demo", pol, now)
		must(t, err)
		if len(again.Instances) != 0 || again.TaskRows != 0 {
			t.Fatalf("a plan after the purge still lists %+v", again)
		}
		if _, err := s.RetentionPlan(ctx, "nope", pol, now); err == nil {
			t.Fatal("plan of a missing project: no error")
		}
		if _, err := s.RetentionPurge(ctx, "demo", model.RetentionPolicy{KeepDays: -1}, now, store.PurgeOptions{}); err == nil {
			t.Fatal("purge with keep_days -1: no error")
		}
	})
}

// TestRetentionPurgeSkipsAChangedRun: a run rerun between the plan and its
// delete stays, and the purge says so.
func TestRetentionPurgeSkipsAChangedRun(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		demo, err := s.ProjectCreate(ctx, "demo", "")
		must(t, err)
		now := time.Now().UTC().Truncate(time.Second)
		r := &retentionSeed{t: t, s: s, now: now}
		old := r.run(demo.ID, "demo", "a", model.WorkflowFailed, 10, 2, 0, false)
		r.run(demo.ID, "demo", "a", model.WorkflowSucceeded, 1, 1, 0, false)
		must(t, store.ExecRaw(s, `UPDATE alert_cursor SET seq = ? WHERE id = 1`, r.seq))
		pol := model.RetentionPolicy{KeepDays: 5}
		plan, err := s.RetentionPlan(ctx, "demo", pol, now)
		must(t, err)
		if !slices.Equal(plan.Roots, []int64{old}) {
			t.Fatalf("plan roots %v, want [%d]", plan.Roots, old)
		}
		// A purge plans afresh: a run made running again is kept by the plan.
		must(t, store.ExecRaw(s, `UPDATE workflow_instance SET state = 'running' WHERE id = ?`, old))
		done, err := s.RetentionPurge(ctx, "demo", pol, now, store.PurgeOptions{})
		must(t, err)
		if len(done.Instances) != 0 || count(t, s, `SELECT COUNT(*) FROM task_instance WHERE workflow_instance_id = ?`, old) != 2 {
			t.Fatalf("purge of a running run: %+v", done)
		}
	})
}

// TestRetentionFinishesAnInterruptedPurge: a purge stopped after deleting
// the instance rows (a restart between its transactions) leaves their task,
// history and event rows; the next plan lists those runs as unfinished and
// counts their rows, and the next purge deletes them, leaving nothing.
func TestRetentionFinishesAnInterruptedPurge(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		demo, err := s.ProjectCreate(ctx, "demo", "")
		must(t, err)
		now := time.Now().UTC().Truncate(time.Second)
		r := &retentionSeed{t: t, s: s, now: now}
		a := r.run(demo.ID, "demo", "a", model.WorkflowSucceeded, 10, 3, 0, false)
		b := r.run(demo.ID, "demo", "a", model.WorkflowFailed, 9, 2, 0, false)
		r.run(demo.ID, "demo", "a", model.WorkflowSucceeded, 1, 1, 0, false)
		must(t, store.ExecRaw(s, `UPDATE alert_cursor SET seq = ? WHERE id = 1`, r.seq))
		pol := model.RetentionPolicy{KeepDays: 5}
		_, err = s.RetentionPurge(ctx, "demo", pol, now, store.HaltAfterRuns(store.PurgeOptions{}))
		if err != store.ErrPurgeHalted {
			t.Fatalf("halted purge: %v", err)
		}
		left := `SELECT COUNT(*) FROM task_instance WHERE workflow_instance_id IN (?, ?)`
		if n := count(t, s, `SELECT COUNT(*) FROM workflow_instance WHERE id IN (?, ?)`, a, b); n != 0 {
			t.Fatalf("%d instance rows after the halted purge, want 0", n)
		}
		if n := count(t, s, left, a, b); n != 5 {
			t.Fatalf("%d task rows after the halted purge, want the 5 it had not reached", n)
		}
		plan, err := s.RetentionPlan(ctx, "demo", pol, now)
		must(t, err)
		if len(plan.Roots) != 0 || !slices.Equal(plan.Unfinished, []int64{a, b}) || plan.TaskRows != 5 || plan.EventRows != 4 || plan.HistoryRows != 2 {
			t.Fatalf("plan after the halted purge: %+v", plan)
		}
		done, err := s.RetentionPurge(ctx, "demo", pol, now, store.PurgeOptions{})
		must(t, err)
		if !slices.Equal(done.Unfinished, []int64{a, b}) || done.TaskRows != plan.TaskRows || done.EventRows != plan.EventRows ||
			done.HistoryRows != plan.HistoryRows {
			t.Fatalf("purge %+v, plan %+v", done, plan)
		}
		if n := count(t, s, left, a, b) + count(t, s, `SELECT COUNT(*) FROM event WHERE instance_id IN (?, ?)`, a, b) +
			count(t, s, `SELECT COUNT(*) FROM retention_pending`); n != 0 {
			t.Fatalf("%d rows left after the second purge", n)
		}
		again, err := s.RetentionPlan(ctx, "demo", pol, now)
		must(t, err)
		if len(again.Unfinished) != 0 || again.TaskRows != 0 {
			t.Fatalf("a third plan: %+v", again)
		}
	})
}

func TestRetentionPolicyAndAudit(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		_, err := s.ProjectCreate(ctx, "demo", "")
		must(t, err)
		got, err := s.RetentionGet(ctx, "demo")
		if err != nil || got.KeepDays != nil || got.KeepRuns != nil {
			t.Fatalf("a new project's retention: %+v %v", got, err)
		}
		days := 7
		put, err := s.RetentionPut(ctx, "demo", model.ProjectRetention{KeepDays: &days}, "alice")
		must(t, err)
		got, err = s.RetentionGet(ctx, "demo")
		if err != nil || got.KeepDays == nil || *got.KeepDays != 7 || got.KeepRuns != nil || got.UpdatedBy != "alice" || put.UpdatedBy != "alice" {
			t.Fatalf("retention after put: %+v %v", got, err)
		}
		runs := 3
		_, err = s.RetentionPut(ctx, "demo", model.ProjectRetention{KeepRuns: &runs}, "bob")
		must(t, err)
		got, err = s.RetentionGet(ctx, "demo")
		if err != nil || got.KeepDays != nil || *got.KeepRuns != 3 {
			t.Fatalf("retention after the second put: %+v %v", got, err)
		}
		neg := -1
		if _, err := s.RetentionPut(ctx, "demo", model.ProjectRetention{KeepRuns: &neg}, "bob"); err == nil {
			t.Fatal("keep_runs -1 stored")
		}
		if _, err := s.RetentionGet(ctx, "nope"); err == nil {
			t.Fatal("retention of a missing project: no error")
		}

		now := time.Now().UTC().Truncate(time.Second)
		for d := range 6 {
			must(t, store.ExecRaw(s, `INSERT INTO audit_log (at, username, action, resource, address, status, outcome)
				VALUES (?, 'admin', 'PUT /x', '/x', '127.0.0.1', 200, '')`, now.Add(-time.Duration(d)*24*time.Hour-time.Minute)))
		}
		plan, err := s.AuditRetentionPlan(ctx, 3, now)
		must(t, err)
		if plan.Rows != 3 || plan.Bytes <= 0 {
			t.Fatalf("audit plan: %+v, want 3 rows", plan)
		}
		done, err := s.AuditRetentionPurge(ctx, 3, now, store.PurgeOptions{Batch: 2, Pause: time.Millisecond})
		must(t, err)
		if done.Rows != plan.Rows || count(t, s, `SELECT COUNT(*) FROM audit_log`) != 3 {
			t.Fatalf("audit purge %+v, plan %+v", done, plan)
		}
		if off, err := s.AuditRetentionPlan(ctx, 0, now); err != nil || off.Rows != 0 {
			t.Fatalf("audit_days 0: %+v %v", off, err)
		}
		if _, err := s.AuditRetentionPurge(ctx, -2, now, store.PurgeOptions{}); err == nil {
			t.Fatal("audit_days -2: no error")
		}
	})
}

// TestInstancesMissing: after a purge, the purged run is missing and the
// kept one is not; an id never used is missing too, duplicates count once.
func TestInstancesMissing(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		demo, err := s.ProjectCreate(ctx, "demo", "")
		must(t, err)
		r := &retentionSeed{t: t, s: s, now: time.Now().UTC().Truncate(time.Second)}
		old := r.run(demo.ID, "demo", "wf", model.WorkflowSucceeded, 10, 1, 0, false)
		kept := r.run(demo.ID, "demo", "wf", model.WorkflowSucceeded, 0, 1, 0, false)
		cursor := r.seq // the alert planner has read every event
		if store.SeqIsID(s) {
			cursor = count(t, s, `SELECT MAX(id) FROM event`)
		}
		must(t, store.ExecRaw(s, `UPDATE alert_cursor SET seq = ? WHERE id = 1`, cursor))
		gone, err := s.InstancesMissing(ctx, []int64{old, kept, kept + 1000})
		must(t, err)
		if !slices.Equal(gone, []int64{kept + 1000}) {
			t.Fatalf("before the purge: missing %v, want [%d]", gone, kept+1000)
		}
		plan, err := s.RetentionPurge(ctx, "demo", model.RetentionPolicy{KeepDays: 5}, r.now, store.PurgeOptions{})
		must(t, err)
		if !slices.Equal(plan.Instances, []int64{old}) {
			t.Fatalf("purged %v, want [%d]", plan.Instances, old)
		}
		gone, err = s.InstancesMissing(ctx, []int64{kept + 1000, kept, old, old})
		must(t, err)
		if !slices.Equal(gone, []int64{old, kept + 1000}) {
			t.Fatalf("after the purge: missing %v, want [%d %d]", gone, old, kept+1000)
		}
		if gone, err = s.InstancesMissing(ctx, nil); err != nil || len(gone) != 0 {
			t.Fatalf("no ids: %v, %v", gone, err)
		}
	})
}
