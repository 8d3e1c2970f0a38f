package cluster

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestScheduleSurvivesLeaderKill: a per-second schedule fires while the
// active master is killed -9. The standby takes over and fires the times
// that passed while no master led (catch-up all; they are within the
// grace anyway), so across the kill every second from the first run to the
// last has exactly one run, each task executed once, and nothing is stuck.
func TestScheduleSurvivesLeaderKill(t *testing.T) {
	databases(t, func(t *testing.T, db string) {
		c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout, DB: db})
		marks := t.TempDir()
		c.Apply(t, spec.Workflow{Name: "tick", Tasks: []spec.Task{task(marks, "t", sleep(100*time.Millisecond))}})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		put := func(enabled bool) api.Schedule {
			sc, _, err := c.Client.PutSchedule(ctx, c.Project, "tick", api.ScheduleRequest{Cron: "* * * * * *", Catchup: "all",
				Priority: "high", Enabled: &enabled})
			if err != nil {
				t.Fatal(err)
			}
			return sc
		}
		sc := put(true)
		runs := func() []model.WorkflowInstance {
			insts, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Workflow: "tick", Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return insts
		}
		c.Eventually(t, finishWithin, "three scheduled runs", func() bool { return len(runs()) >= 3 })
		old := c.Leader()
		killed := time.Now()
		old.Kill9()
		lead := c.WaitLeader(t, failoverWithin, old)
		t.Logf("%s leads %v after the kill of %s", lead.Name, time.Since(killed).Round(time.Millisecond), old.Name)
		c.Eventually(t, finishWithin, "runs fired by the new leader", func() bool {
			got, err := c.Store.ScheduleGet(ctx, c.Project, "tick")
			return err == nil && got.LastFireTime != nil && got.LastFireTime.After(time.Now().Add(-2*time.Second)) &&
				got.LastFireTime.After(killed.Add(2*time.Second))
		})
		put(false) // no fire lands after this: fires are conditional on the revision it moved on
		insts := runs()
		if n := assertLedger(t, c, sc.ID, time.Second, insts); n[model.FireFired] != len(insts) {
			t.Fatalf("ledger %v for %d runs across the kill", n, len(insts))
		}
		times := make([]time.Time, 0, len(insts))
		for _, in := range insts {
			in = c.WaitFinished(t, in.ID, finishWithin)
			if in.State != model.WorkflowSucceeded || in.ScheduleID != sc.ID || in.Priority != model.PriorityHigh || in.ScheduleTime == nil {
				t.Fatalf("scheduled run %d: state %s schedule %d priority %s", in.ID, in.State, in.ScheduleID, in.Priority)
			}
			c.AssertRanOnce(t, in.ID, marks)
			times = append(times, *in.ScheduleTime)
		}
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		for i := 1; i < len(times); i++ {
			if d := times[i].Sub(times[i-1]); d != time.Second {
				t.Fatalf("schedule times %v then %v: a second was missed or doubled across the kill", times[i-1], times[i])
			}
		}
		if !times[0].Before(killed) || !times[len(times)-1].After(killed.Add(2*time.Second)) {
			t.Fatalf("runs from %v to %v do not span the kill at %v", times[0], times[len(times)-1], killed)
		}
		t.Logf("%d runs, one per second from %v to %v, across the kill at %v", len(times), times[0].Format(time.TimeOnly),
			times[len(times)-1].Format(time.TimeOnly), killed.Format(time.TimeOnly))
		c.AssertNoStuckRows(t)
	})
}

// TestBackfillSurvivesLeaderKill: a serial backfill of six days is half
// way through when the active master is killed -9. The standby goes on
// from the backfill's cursor: every day runs exactly once, one at a time,
// in order, and the backfill ends done.
func TestBackfillSurvivesLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, spec.Workflow{Name: "day", Tasks: []spec.Task{task(marks, "t", sleep(700*time.Millisecond))}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	var times []time.Time
	for i := range 6 {
		times = append(times, first.AddDate(0, 0, i))
	}
	req, err := c.Client.StartBackfill(ctx, c.Project, "day", api.BackfillRequest{Start: "2026-11-01T00:00:00Z",
		End: "2026-11-06T23:59:59Z", Cron: "0 2 * * *"})
	if err != nil {
		t.Fatal(err)
	}
	b := model.Backfill{ID: req.ID}
	progress := func() model.Backfill {
		got, err := c.Store.BackfillGet(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	c.Eventually(t, finishWithin, "two days done", func() bool { return progress().Succeeded >= 2 })
	old := c.Leader()
	old.Kill9()
	lead := c.WaitLeader(t, failoverWithin, old)
	t.Logf("%s leads after the kill of %s at %d of 6 days", lead.Name, old.Name, progress().Succeeded)
	c.Eventually(t, 2*finishWithin, "backfill done", func() bool { return progress().State != model.BackfillRunning })
	b = progress()
	if b.State != model.BackfillDone || b.Succeeded != 6 || b.Submitted != 6 {
		t.Fatalf("backfill %s: %d submitted, %d succeeded (%s)", b.State, b.Submitted, b.Succeeded, b.Reason)
	}
	insts, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Workflow: "day"})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(insts, func(i, j int) bool { return insts[i].ID < insts[j].ID })
	if len(insts) != 6 {
		t.Fatalf("%d runs for 6 days", len(insts))
	}
	for i, in := range insts {
		if !in.ScheduleTime.Equal(times[i]) {
			t.Fatalf("run %d is for %v, want %v", i, in.ScheduleTime, times[i])
		}
		if i > 0 && in.CreatedAt.Before(*insts[i-1].EndTime) {
			t.Fatalf("day %d was submitted at %v, before day %d ended at %v", i, in.CreatedAt, i-1, insts[i-1].EndTime)
		}
		c.AssertRanOnce(t, in.ID, marks)
	}
	c.AssertNoStuckRows(t)
}

// TestScheduleCrashPoints kills the leader inside its first fire of a
// per-second schedule: before anything is written (the standby fires that
// time itself), and after the run and the next fire time are written but
// before the run is started (the standby starts it and does not fire the
// time again). Either way every second from the first run to the last has
// exactly one run, each executed once.
func TestScheduleCrashPoints(t *testing.T) {
	for _, point := range []string{failpoint.BeforeFireSchedule, failpoint.AfterFireSchedule} {
		t.Run(point, func(t *testing.T) {
			c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout,
				Env: map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + point}}})
			marks := t.TempDir()
			c.Apply(t, spec.Workflow{Name: "tick", Tasks: []spec.Task{task(marks, "t", "")}})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			on, off := true, false
			req := api.ScheduleRequest{Cron: "* * * * * *", Catchup: "all", Enabled: &on}
			sc, _, err := c.Client.PutSchedule(ctx, c.Project, "tick", req)
			if err != nil {
				t.Fatal(err)
			}
			crashed := c.Masters[0]
			if err := crashed.Wait(failoverWithin); err == nil || !strings.Contains(crashed.Log(), "failpoint "+point+": killing") {
				t.Fatalf("%s did not die at %s (%v):\n%s", crashed.Name, point, err, crashed.LogTail(30))
			}
			c.WaitLeader(t, failoverWithin, crashed)
			runs := func() []model.WorkflowInstance {
				insts, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Workflow: "tick", Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				return insts
			}
			c.Eventually(t, finishWithin, "three runs", func() bool { return len(runs()) >= 3 })
			req.Enabled = &off
			if _, _, err := c.Client.PutSchedule(ctx, c.Project, "tick", req); err != nil {
				t.Fatal(err)
			}
			var times []time.Time
			all := runs()
			for _, in := range all {
				if in = c.WaitFinished(t, in.ID, finishWithin); in.State != model.WorkflowSucceeded {
					t.Fatalf("run %d ended %s", in.ID, in.State)
				}
				c.AssertRanOnce(t, in.ID, marks)
				times = append(times, *in.ScheduleTime)
			}
			// The ledger too: one row per second, each naming its one run.
			if n := assertLedger(t, c, sc.ID, time.Second, all); n[model.FireFired] != len(all) {
				t.Fatalf("ledger %v for %d runs", n, len(all))
			}
			sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
			for i := 1; i < len(times); i++ {
				if times[i].Sub(times[i-1]) != time.Second {
					t.Fatalf("schedule times %v then %v: a second was missed or doubled", times[i-1], times[i])
				}
			}
			c.AssertNoStuckRows(t)
		})
	}
}
