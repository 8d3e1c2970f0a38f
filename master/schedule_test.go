package master_test

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// putSchedule stores an enabled schedule whose next fire time is next (the
// API computes it the same way from the cron and now).
func (c *cell) putSchedule(sc model.Schedule, next time.Time) model.Schedule {
	c.t.Helper()
	sc.Project, sc.Enabled = "p", true
	if !next.IsZero() {
		sc.NextFireTime = &next
	}
	out, _, err := c.st.SchedulePut(c.ctx, sc, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.m.Notify()
	return out
}

func (c *cell) scheduled(workflow string) []model.WorkflowInstance {
	c.t.Helper()
	insts, _, err := c.st.InstanceList(c.ctx, store.InstanceFilter{Project: "p", Workflow: workflow})
	if err != nil {
		c.t.Fatal(err)
	}
	return insts
}

// TestScheduleFiresEachTimeOnce: a per-second schedule fires one run per
// second with the schedule's priority, worker group and params, recorded as
// scheduled runs with their schedule time.
func TestScheduleFiresEachTimeOnce(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorker(4, "default", "etl")
	c.apply("name: tick\nparams: {x: from-spec}\ntasks:\n  - {name: t, command: \"echo $x\"}\n")
	cr, err := schedule.Parse("* * * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	high := model.PriorityHigh
	sc := c.putSchedule(model.Schedule{Workflow: "tick", Cron: "* * * * * *", Priority: &high, WorkerGroup: "etl",
		Params: map[string]string{"x": "from-schedule"}}, cr.First(time.Now(), schedule.Window{}))
	wait.Until(t, 30*time.Second, "three runs", func() bool { return len(c.scheduled("tick")) >= 3 })
	sc.Enabled, sc.NextFireTime = false, nil
	if _, _, err := c.st.SchedulePut(c.ctx, sc, nil); err != nil {
		t.Fatal(err)
	}
	// Fires are conditional on the revision the disabling put moved on: none
	// can land after it, so this count is final.
	insts := c.scheduled("tick")
	seen := map[time.Time]bool{}
	for _, in := range insts {
		in = c.finished(in.ID)
		if in.State != model.WorkflowSucceeded || in.CommandType != model.CommandScheduled || in.ScheduleID != sc.ID ||
			in.Priority != model.PriorityHigh || in.WorkerGroup != "etl" || in.Params["x"] != "from-schedule" {
			t.Fatalf("scheduled run %+v", in)
		}
		st := *in.ScheduleTime
		if st.Nanosecond() != 0 || seen[st] {
			t.Fatalf("schedule time %v fired twice or off the second", st)
		}
		// Each fire is timed, not found by the 10 s reread: it lands well
		// before the next reread could have caught it.
		if late := in.CreatedAt.Sub(st); late < 0 || late > 5*time.Second {
			t.Fatalf("run for %v written %v after its time", st, late)
		}
		seen[st] = true
	}
	got, err := c.st.ScheduleGet(c.ctx, "p", "tick")
	if err != nil {
		t.Fatal(err)
	}
	if got.LastFireTime == nil || got.NextFireTime != nil {
		t.Fatalf("disabled schedule: last %v next %v", got.LastFireTime, got.NextFireTime)
	}
	if n := len(c.scheduled("tick")); n != len(insts) {
		t.Fatalf("disabled schedule fired: %d runs, was %d", n, len(insts))
	}
}

// TestSchedulePriorityUnderContention: with the worker full, a run fired by
// a high-priority schedule is dispatched before a low-priority run that was
// queued earlier.
func TestSchedulePriorityUnderContention(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorkerCap(2, 1)
	c.apply("name: low\ntasks:\n  - {name: l, command: \"true\"}\n")
	c.apply("name: nightly\npriority: lowest\ntasks:\n  - {name: n, command: \"true\"}\n")
	gate, blk := c.fillWorker()
	low := c.run("low", model.PriorityLow)
	wait.Until(t, 30*time.Second, "low task queued", func() bool { return len(c.tasks(low.ID)) == 1 })
	// The workflow says lowest; its schedule says highest.
	top := model.PriorityHighest
	next := time.Now().Add(-time.Second).Truncate(time.Second) // due now, within the grace
	c.putSchedule(model.Schedule{Workflow: "nightly", Cron: "0 0 1 1 *", Priority: &top}, next)
	var sched model.WorkflowInstance
	wait.Until(t, 30*time.Second, "scheduled task queued", func() bool {
		insts := c.scheduled("nightly")
		if len(insts) == 1 {
			sched = insts[0]
		}
		return len(insts) == 1 && len(c.tasks(sched.ID)) == 1
	})
	if sched.Priority != model.PriorityHighest || !sched.ScheduleTime.Equal(next) {
		t.Fatalf("scheduled run priority %s schedule time %v", sched.Priority, sched.ScheduleTime)
	}
	os.WriteFile(gate+".1", nil, 0o644)
	c.finished(sched.ID)
	c.finished(low.ID)
	l, s := c.tasks(low.ID)[0], c.tasks(sched.ID)[0]
	if !s.DispatchTime.Before(*l.DispatchTime) {
		t.Fatalf("scheduled run dispatched at %v, not before the low run queued earlier at %v", s.DispatchTime, l.DispatchTime)
	}
	os.WriteFile(gate+".2", nil, 0o644)
	c.finished(blk.ID)
}

// fixedClock stands still at now for the cron scheduler; waits are real.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time                         { return c.now }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// TestScheduleCatchupAfterOutage: an hourly schedule whose next fire time
// is 3.5 hours old (no master was up) fires per its catch-up policy, and
// says what it skipped.
func TestScheduleCatchupAfterOutage(t *testing.T) {
	t.Parallel()
	hour := time.Now().UTC().Truncate(time.Hour)
	c := newCell(t, master.Config{Clock: fixedClock{hour.Add(30 * time.Minute)}})
	c.addWorker(4)
	want := map[string]int{schedule.CatchupAll: 4, schedule.CatchupLatest: 1, schedule.CatchupNone: 0}
	for policy := range want {
		c.apply(fmt.Sprintf("name: wf_%s\ntasks:\n  - {name: t, command: \"true\"}\n", policy))
		c.putSchedule(model.Schedule{Workflow: "wf_" + policy, Cron: "0 * * * *", Catchup: policy}, hour.Add(-3*time.Hour))
	}
	for policy, n := range want {
		wf := "wf_" + policy
		wait.Until(t, 30*time.Second, wf+" advanced", func() bool {
			sc, err := c.st.ScheduleGet(c.ctx, "p", wf)
			return err == nil && sc.NextFireTime != nil && sc.NextFireTime.Equal(hour.Add(time.Hour))
		})
		insts := c.scheduled(wf)
		if len(insts) != n {
			t.Fatalf("%s: %d runs, want %d", policy, len(insts), n)
		}
		for i, in := range insts { // newest first
			if want := hour.Add(-time.Duration(i) * time.Hour); !in.ScheduleTime.Equal(want) {
				t.Fatalf("%s: run %d for %v, want %v", policy, i, in.ScheduleTime, want)
			}
			c.finished(in.ID)
		}
		sc, _ := c.st.ScheduleGet(c.ctx, "p", wf)
		if skipped := 4 - n; (skipped > 0) != strings.Contains(sc.Note, fmt.Sprintf("skipped %d missed", skipped)) {
			t.Fatalf("%s: note %q", policy, sc.Note)
		}
		// The ledger: one row per hour of the outage, the times not run missed.
		fs, _, err := c.st.ScheduleFires(c.ctx, "p", sc.ID, store.FireFilter{Limit: 10})
		if err != nil || len(fs) != 4 {
			t.Fatalf("%s: ledger %+v %v", policy, fs, err)
		}
		for i, f := range fs {
			want := model.FireMissed
			if i >= 4-n {
				want = model.FireFired
			}
			if !f.DueTime.Equal(hour.Add(time.Duration(i-3)*time.Hour)) || f.Outcome != want {
				t.Fatalf("%s: ledger row %d %+v, want %s", policy, i, f, want)
			}
		}
	}
}
