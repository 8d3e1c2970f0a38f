package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// gated is a one-task workflow whose task waits until the gate file
// exists (at most 60 s, so a broken test cannot leave it running): runs
// of its schedule outlast the schedule's second for as long as the test
// keeps the gate shut.
func gated(marks, name, gate string) spec.Workflow {
	wait := fmt.Sprintf("i=0; while [ ! -e '%s' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done", gate)
	return spec.Workflow{Name: name, Tasks: []spec.Task{task(marks, "t", wait)}}
}

// overlapRig is a per-second schedule of a gated workflow on a cluster of
// two masters, with what the overlap tests read of it.
type overlapRig struct {
	c     *clustertest.Cluster
	ctx   context.Context
	marks string
	gate  string
	wf    string
	req   api.ScheduleRequest
	sc    api.Schedule
}

func newOverlapRig(t *testing.T, overlap model.Overlap) *overlapRig {
	return newOverlapRigEnv(t, overlap, nil)
}

// newOverlapRigEnv is newOverlapRig with environment for the processes
// (a failpoint).
func newOverlapRigEnv(t *testing.T, overlap model.Overlap, env map[string][]string) *overlapRig {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout, Env: env})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	r := &overlapRig{c: c, ctx: ctx, marks: t.TempDir(), wf: "serial-" + string(overlap)}
	r.gate = filepath.Join(t.TempDir(), "gate")
	c.Apply(t, gated(r.marks, r.wf, r.gate))
	on := true
	// catchup all: the seconds no master led are fired by the new leader
	// in one pass, and the policy decides each of them.
	r.req = api.ScheduleRequest{Cron: "* * * * * *", Catchup: "all", Overlap: string(overlap), Enabled: &on}
	sc, _, err := c.Client.PutSchedule(ctx, c.Project, r.wf, r.req)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Overlap != string(overlap) {
		t.Fatalf("schedule overlap %q, want %q", sc.Overlap, overlap)
	}
	r.sc = sc
	t.Cleanup(func() {
		// On failure, the workers' last heartbeats (CPU, memory) show whether
		// dispatch was holding tasks back from an overloaded worker.
		if t.Failed() {
			view, err := c.Client.Cluster(context.Background())
			t.Logf("cluster view: %s (%v)", view, err)
		}
	})
	return r
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format("15:04:05.000")
}

func (r *overlapRig) runs(t *testing.T) []model.WorkflowInstance {
	t.Helper()
	insts, _, err := r.c.Store.InstanceList(r.ctx, store.InstanceFilter{Project: r.c.Project, Workflow: r.wf, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return insts
}

func (r *overlapRig) schedule(t *testing.T) model.Schedule {
	t.Helper()
	sc, err := r.c.Store.ScheduleGet(r.ctx, r.c.Project, r.wf)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// started counts the runs that have started (left the queue or were never
// in it) and are not finished.
func started(insts []model.WorkflowInstance) []int64 {
	var out []int64
	for _, in := range insts {
		if !in.Queued && !in.State.Finished() && in.StartTime != nil {
			out = append(out, in.ID)
		}
	}
	return out
}

// disable turns the schedule off; no fire lands after it (fires are
// conditional on the revision it moves on).
func (r *overlapRig) disable(t *testing.T) {
	t.Helper()
	off := false
	req := r.req
	req.Enabled = &off
	if _, _, err := r.c.Client.PutSchedule(r.ctx, r.c.Project, r.wf, req); err != nil {
		t.Fatal(err)
	}
}

func (r *overlapRig) openGate(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(r.gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// killLeader kills the active master -9 and waits for the standby to lead.
func (r *overlapRig) killLeader(t *testing.T) time.Time {
	t.Helper()
	old := r.c.Leader()
	killed := time.Now()
	old.Kill9()
	lead := r.c.WaitLeader(t, failoverWithin, old)
	t.Logf("%s leads %v after the kill of %s", lead.Name, time.Since(killed).Round(time.Millisecond), old.Name)
	return killed
}

// assertSerial waits for every run of the schedule to finish and checks,
// from the DB, that each succeeded with its task run once, that no two
// were running at once, that they started in schedule-time order and that
// no schedule time has two runs. It returns the runs by start time.
func (r *overlapRig) assertSerial(t *testing.T) []model.WorkflowInstance {
	t.Helper()
	var insts []model.WorkflowInstance
	for _, in := range r.runs(t) {
		in = r.c.WaitFinished(t, in.ID, finishWithin)
		if in.ScheduleID != r.sc.ID || in.ScheduleTime == nil || in.StartTime == nil || in.EndTime == nil {
			t.Fatalf("run %d: schedule %d, schedule time %v, start %v, end %v", in.ID, in.ScheduleID, in.ScheduleTime, in.StartTime, in.EndTime)
		}
		r.c.AssertRanOnce(t, in.ID, r.marks)
		insts = append(insts, in)
	}
	sort.Slice(insts, func(i, j int) bool { return insts[i].StartTime.Before(*insts[j].StartTime) })
	for _, in := range insts {
		tk := r.c.Tasks(t, in.ID)["t"]
		last := tk[len(tk)-1]
		t.Logf("run %d for %s: started %s, task submitted %s, dispatched %s, ended %s; run ended %s",
			in.ID, in.ScheduleTime.Format(time.TimeOnly), stamp(in.StartTime), stamp(last.SubmitTime),
			stamp(last.DispatchTime), stamp(last.EndTime), stamp(in.EndTime))
	}
	for i := 1; i < len(insts); i++ {
		a, b := insts[i-1], insts[i]
		if b.StartTime.Before(*a.EndTime) {
			t.Fatalf("run %d (for %v) started at %v, before run %d (for %v) ended at %v: runs overlap",
				b.ID, b.ScheduleTime.Format(time.TimeOnly), b.StartTime.Format(time.StampMilli),
				a.ID, a.ScheduleTime.Format(time.TimeOnly), a.EndTime.Format(time.StampMilli))
		}
		if !b.ScheduleTime.After(*a.ScheduleTime) {
			t.Fatalf("run %d for %v started after run %d for %v: not in schedule-time order (or one time ran twice)",
				b.ID, b.ScheduleTime, a.ID, a.ScheduleTime)
		}
	}
	return insts
}

// TestOverlapWaitSurvivesLeaderKill: a per-second schedule under overlap
// wait whose first run holds (its task waits on a gate) queues a run per
// second. The leader is killed -9 meanwhile; the standby leads, goes on
// queueing (the seconds no master led too) and starts none of them while
// the first run is unfinished. Once the gate opens and the schedule is
// off, the queue drains one run at a time in schedule-time order: every
// second from the first run to the last has exactly one run, none
// overlaps another, each task ran once, nothing is stuck.
func TestOverlapWaitSurvivesLeaderKill(t *testing.T) {
	r := newOverlapRig(t, model.OverlapWait)
	c := r.c
	c.Eventually(t, finishWithin, "a run started and two queued", func() bool {
		insts := r.runs(t)
		queued := 0
		for _, in := range insts {
			if in.Queued {
				queued++
			}
		}
		if s := started(insts); len(s) > 1 {
			t.Fatalf("runs %v started at once under overlap wait", s)
		}
		return len(started(insts)) == 1 && queued >= 2
	})
	first := started(r.runs(t))[0]
	clustertest.WaitExecution(t, r.marks, first, "t", finishWithin)
	killed := r.killLeader(t)
	c.Eventually(t, finishWithin, "runs queued by the new leader", func() bool {
		sc := r.schedule(t)
		return sc.LastFireTime != nil && sc.LastFireTime.After(killed.Add(2*time.Second))
	})
	insts := r.runs(t)
	if s := started(insts); len(s) != 1 || s[0] != first {
		t.Fatalf("with run %d unfinished, runs %v are started: the new leader broke overlap wait", first, s)
	}
	for _, in := range insts {
		if in.ID != first && (!in.Queued || in.State != model.WorkflowSubmitted) {
			t.Fatalf("run %d for %v is %s (queued %v) while run %d holds the schedule", in.ID, in.ScheduleTime, in.State, in.Queued, first)
		}
	}
	r.disable(t)
	r.openGate(t)
	runs := r.assertSerial(t)
	if runs[0].ID != first {
		t.Fatalf("run %d started first, want %d", runs[0].ID, first)
	}
	for i := 1; i < len(runs); i++ {
		if d := runs[i].ScheduleTime.Sub(*runs[i-1].ScheduleTime); d != time.Second {
			t.Fatalf("schedule times %v then %v: a second was missed or doubled across the kill", runs[i-1].ScheduleTime, runs[i].ScheduleTime)
		}
	}
	last := runs[len(runs)-1]
	if !runs[0].ScheduleTime.Before(killed) || !last.ScheduleTime.After(killed.Add(2*time.Second)) {
		t.Fatalf("runs from %v to %v do not span the kill at %v", runs[0].ScheduleTime, last.ScheduleTime, killed)
	}
	t.Logf("%d runs one after another, one per second from %v to %v, across the kill at %v", len(runs),
		runs[0].ScheduleTime.Format(time.TimeOnly), last.ScheduleTime.Format(time.TimeOnly), killed.Format(time.TimeOnly))
	c.AssertNoStuckRows(t)
}

// TestOverlapSkipSurvivesLeaderKill: a per-second schedule under overlap
// skip whose first run holds skips every fire meanwhile. The leader is
// killed -9; the standby leads and skips too (the seconds no master led
// included), starting no run while the first is unfinished. Once the gate
// opens runs start again. In the end no two runs overlapped, no schedule
// time has two runs, every second from the first fire to the last is
// either a run or a skipped fire, each task ran once, nothing is stuck.
func TestOverlapSkipSurvivesLeaderKill(t *testing.T) {
	r := newOverlapRig(t, model.OverlapSkip)
	c := r.c
	c.Eventually(t, finishWithin, "a run started and two fires skipped", func() bool {
		insts := r.runs(t)
		if len(insts) > 1 {
			t.Fatalf("%d runs fired under overlap skip while the first holds the gate", len(insts))
		}
		return len(started(insts)) == 1 && r.schedule(t).SkippedFires >= 2
	})
	first := started(r.runs(t))[0]
	clustertest.WaitExecution(t, r.marks, first, "t", finishWithin)
	killed := r.killLeader(t)
	before := r.schedule(t).SkippedFires
	c.Eventually(t, finishWithin, "fires skipped by the new leader", func() bool {
		sc := r.schedule(t)
		return sc.LastFireTime != nil && sc.LastFireTime.After(killed.Add(2*time.Second)) && sc.SkippedFires > before
	})
	if insts := r.runs(t); len(insts) != 1 || insts[0].ID != first {
		ids := make([]int64, len(insts))
		for i, in := range insts {
			ids[i] = in.ID
		}
		t.Fatalf("with run %d unfinished the schedule has runs %v: the new leader broke overlap skip", first, ids)
	}
	r.openGate(t)
	c.Eventually(t, finishWithin, "two runs after the first", func() bool { return len(r.runs(t)) >= 3 })
	r.disable(t)
	runs := r.assertSerial(t)
	sc := r.schedule(t)
	span := int64(sc.LastFireTime.Sub(*runs[0].ScheduleTime)/time.Second) + 1
	if int64(len(runs))+sc.SkippedFires != span {
		t.Fatalf("%d runs and %d skipped fires for the %d seconds from %v to %v: a second was lost or doubled",
			len(runs), sc.SkippedFires, span, runs[0].ScheduleTime, sc.LastFireTime)
	}
	if runs[0].ID != first {
		t.Fatalf("run %d started first, want %d", runs[0].ID, first)
	}
	t.Logf("%d runs and %d skipped fires over %d seconds from %v, across the kill at %v", len(runs), sc.SkippedFires, span,
		runs[0].ScheduleTime.Format(time.TimeOnly), killed.Format(time.TimeOnly))
	c.AssertNoStuckRows(t)
}

// TestOverlapReplaceSurvivesLeaderKill: a per-second schedule under
// overlap replace whose runs hold (their task waits on a gate) stops each
// run when the next second fires. The leader kills itself right after
// its second fire is written (failpoint after-fire-schedule@2): the first
// run is ready_stop with its stop command unclaimed and the second run
// queued behind it. The standby leads, finishes that stop, and goes on
// replacing (the seconds no master led too: the older ones skipped, the
// newest queued), also runs that never started. Once the schedule is off
// and the gate open, every run is final: the last succeeded, each other
// stopped, with its task executed at most once; no two ran at once; every
// second from the first fire to the last is a run or a skipped fire.
func TestOverlapReplaceSurvivesLeaderKill(t *testing.T) {
	r := newOverlapRigEnv(t, model.OverlapReplace,
		map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + failpoint.AfterFireSchedule + "@2"}})
	c := r.c
	crashed := c.Masters[0]
	if err := crashed.Wait(failoverWithin); err == nil || !strings.Contains(crashed.Log(), "failpoint "+failpoint.AfterFireSchedule+": killing") {
		t.Fatalf("%s did not die at %s (%v):\n%s", crashed.Name, failpoint.AfterFireSchedule, err, crashed.LogTail(30))
	}
	killed := time.Now()
	c.WaitLeader(t, failoverWithin, crashed)
	c.Eventually(t, finishWithin, "runs replaced by the new leader", func() bool {
		sc := r.schedule(t)
		return sc.LastFireTime != nil && sc.LastFireTime.After(killed.Add(2*time.Second))
	})
	r.disable(t)
	r.openGate(t)
	var runs []model.WorkflowInstance
	for _, in := range r.runs(t) {
		runs = append(runs, c.WaitFinished(t, in.ID, finishWithin))
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ScheduleTime.Before(*runs[j].ScheduleTime) })
	for i, in := range runs {
		want := model.WorkflowStopped
		if i == len(runs)-1 {
			want = model.WorkflowSucceeded
		}
		if in.State != want {
			t.Fatalf("run %d for %v (%d of %d) ended %s, want %s", in.ID, in.ScheduleTime.Format(time.TimeOnly), i+1, len(runs), in.State, want)
		}
		if n := len(clustertest.Executions(t, r.marks, in.ID)); n > 1 {
			t.Fatalf("run %d executed its task %d times", in.ID, n)
		}
	}
	var ran []model.WorkflowInstance // started runs, by start time
	for _, in := range runs {
		if in.StartTime != nil {
			ran = append(ran, in)
		}
	}
	sort.Slice(ran, func(i, j int) bool { return ran[i].StartTime.Before(*ran[j].StartTime) })
	for i := 1; i < len(ran); i++ {
		if a, b := ran[i-1], ran[i]; b.StartTime.Before(*a.EndTime) {
			t.Fatalf("run %d started at %v, before run %d ended at %v: runs overlap", b.ID,
				b.StartTime.Format(time.StampMilli), a.ID, a.EndTime.Format(time.StampMilli))
		}
	}
	sc := r.schedule(t)
	span := int64(sc.LastFireTime.Sub(*runs[0].ScheduleTime)/time.Second) + 1
	if int64(len(runs))+sc.SkippedFires != span {
		t.Fatalf("%d runs and %d skipped fires for the %d seconds from %v to %v: a second was lost or doubled",
			len(runs), sc.SkippedFires, span, runs[0].ScheduleTime, sc.LastFireTime)
	}
	t.Logf("%d runs (%d started) and %d skipped fires over %d seconds, across the kill at %v", len(runs), len(ran),
		sc.SkippedFires, span, killed.Format(time.TimeOnly))
	c.AssertNoStuckRows(t)
}
