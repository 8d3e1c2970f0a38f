package cluster

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// ledger reads the whole ledger of fires of schedule id.
func ledger(t *testing.T, c *clustertest.Cluster, id int64) []model.ScheduleFire {
	t.Helper()
	fs, more, err := c.Store.ScheduleFires(context.Background(), c.Project, id, store.FireFilter{Limit: 10000})
	if err != nil || more {
		t.Fatalf("ledger of schedule %d: more %v %v", id, more, err)
	}
	return fs
}

// assertLedger checks the ledger of schedule id against its runs: one row
// per due time, every step apart from the first to the last (none lost),
// each run's time a row naming it, and no row naming a run that is not
// there. It returns the rows by outcome.
func assertLedger(t *testing.T, c *clustertest.Cluster, id int64, step time.Duration, runs []model.WorkflowInstance) map[model.FireOutcome]int {
	t.Helper()
	fs := ledger(t, c, id)
	if len(fs) == 0 {
		t.Fatalf("schedule %d: empty ledger for %d runs", id, len(runs))
	}
	byTime := map[time.Time]model.ScheduleFire{}
	count := map[model.FireOutcome]int{}
	for i, f := range fs {
		if i > 0 && f.DueTime.Sub(fs[i-1].DueTime) != step {
			t.Fatalf("ledger rows %v then %v: a due time has no row, or two", fs[i-1].DueTime, f.DueTime)
		}
		byTime[f.DueTime] = f
		count[f.Outcome]++
	}
	made := 0
	for _, f := range fs {
		if f.InstanceID != nil {
			made++
		}
	}
	for _, in := range runs {
		f, ok := byTime[in.ScheduleTime.UTC()]
		if !ok || f.InstanceID == nil || *f.InstanceID != in.ID {
			t.Fatalf("run %d for %v: ledger row %+v", in.ID, in.ScheduleTime, f)
		}
	}
	if made != len(runs) {
		t.Fatalf("ledger names %d runs; %d exist", made, len(runs))
	}
	return count
}

// TestFiresMissedAcrossStoppedMaster: fires missed across a stopped master
// and compensated. The only master is stopped across more than the grace
// of a schedule firing every 2 s under catch-up none; restarted, it fires
// the times inside the grace and lists the older ones missed, one row
// each. A compensation preview lists them and makes nothing; the
// compensation runs each once (a second one makes none); in the end every
// due time from the first to the last has one row and one run.
func TestFiresMissedAcrossStoppedMaster(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, SessionTimeout: sessionTimeout})
	c.Apply(t, spec.Workflow{Name: "tick", Tasks: []spec.Task{{Name: "t", Command: "true"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	on, off := true, false
	req := api.ScheduleRequest{Cron: "*/2 * * * * *", Catchup: "none", Enabled: &on}
	sc, _, err := c.Client.PutSchedule(ctx, c.Project, "tick", req)
	if err != nil {
		t.Fatal(err)
	}
	runs := func() []model.WorkflowInstance {
		insts, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Workflow: "tick", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return insts
	}
	c.Eventually(t, finishWithin, "two scheduled runs", func() bool { return len(runs()) >= 2 })
	m := c.Masters[0]
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// Down past the grace (a minute): the times older than it at the
	// restart are missed.
	c.Eventually(t, 2*time.Minute, "the grace passed", func() bool { return time.Since(stopped) > 70*time.Second })
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	c.Eventually(t, finishWithin, "missed fires listed and the schedule firing again", func() bool {
		got, err := c.Store.ScheduleGet(ctx, c.Project, "tick")
		fs, _, ferr := c.Store.ScheduleFires(ctx, c.Project, sc.ID, store.FireFilter{Outcome: model.FireMissed, Limit: 1})
		return err == nil && ferr == nil && len(fs) == 1 && got.LastFireTime != nil && got.LastFireTime.After(stopped.Add(70*time.Second))
	})
	if _, _, err := c.Client.PutSchedule(ctx, c.Project, "tick", api.ScheduleRequest{Cron: req.Cron, Catchup: "none", Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	missed, err := c.Client.ScheduleFires(ctx, c.Project, sc.ID, map[string][]string{"outcome": {"missed"}, "limit": {"1000"}})
	if err != nil {
		t.Fatal(err)
	}
	// Every 2 s for the ~10 s before the grace was crossed at least.
	if n := len(missed.Items); n < 3 || n > 40 {
		t.Fatalf("%d missed fires across a stop of %v", n, time.Since(stopped))
	}
	for _, f := range missed.Items {
		if f.DueTime.Before(stopped.Add(-2*time.Second)) || f.InstanceID != nil {
			t.Fatalf("missed fire %+v before the stop at %v", f, stopped)
		}
	}
	before := len(runs())
	preview, err := c.Client.CompensateFires(ctx, c.Project, sc.ID, api.CompensateRequest{AllMissed: true, DryRun: true})
	if err != nil || !preview.DryRun || len(preview.Runs) != len(missed.Items) || len(runs()) != before {
		t.Fatalf("preview: %d of %d missed, %d runs (were %d), %v", len(preview.Runs), len(missed.Items), len(runs()), before, err)
	}
	done, err := c.Client.CompensateFires(ctx, c.Project, sc.ID, api.CompensateRequest{AllMissed: true})
	if err != nil || len(done.Runs) != len(missed.Items) {
		t.Fatalf("compensate: %d of %d, %v", len(done.Runs), len(missed.Items), err)
	}
	if again, err := c.Client.CompensateFires(ctx, c.Project, sc.ID, api.CompensateRequest{AllMissed: true}); err != nil || len(again.Runs) != 0 {
		t.Fatalf("compensated again: %+v %v", again, err)
	}
	all := runs()
	for _, in := range all {
		if in = c.WaitFinished(t, in.ID, finishWithin); in.State != model.WorkflowSucceeded {
			t.Fatalf("run %d ended %s", in.ID, in.State)
		}
	}
	count := assertLedger(t, c, sc.ID, 2*time.Second, all)
	if count[model.FireMissed] != 0 || count[model.FireCompensated] != len(missed.Items) || count[model.FireFired]+count[model.FireCompensated] != len(all) {
		t.Fatalf("ledger %v for %d runs, %d compensated", count, len(all), len(missed.Items))
	}
	times := make([]time.Time, len(all))
	for i, in := range all {
		times[i] = *in.ScheduleTime
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	t.Logf("%d runs, one per 2 s from %v to %v; %d of them compensated after a stop of the master at %v", len(all),
		times[0].Format(time.TimeOnly), times[len(times)-1].Format(time.TimeOnly), len(done.Runs), stopped.Format(time.TimeOnly))
	c.AssertNoStuckRows(t)
}
