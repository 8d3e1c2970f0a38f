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
	"github.com/beluga-scheduler/beluga/internal/clustertest"
)

// TestScheduleSurvivesLeaderKill: a per-second schedule fires while the
// active master is killed -9. The standby takes over and fires the times
// that passed while no master led (catch-up all; they are within the
// grace anyway), so across the kill every second from the first run to the
// last has exactly one run, each task executed once, and nothing is stuck.
func TestScheduleSurvivesLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout})
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
		insts, _, err := c.Store.ListWorkflowInstances(ctx, store.InstanceFilter{Project: c.Project, Workflow: "tick", Limit: 1000})
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
		got, err := c.Store.GetSchedule(ctx, c.Project, "tick")
		return err == nil && got.LastFireTime != nil && got.LastFireTime.After(time.Now().Add(-2*time.Second)) &&
			got.LastFireTime.After(killed.Add(2*time.Second))
	})
	put(false) // no fire lands after this: fires are conditional on the revision it moved on
	insts := runs()
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
}
