package master_test

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// stepClock is the cron scheduler's clock, moved on by the test; waits are
// real (the test wakes the scheduler after each step).
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (c *stepClock) step(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// overlapCell is a cell with an every-minute schedule of workflow "slow"
// under an overlap policy, fired one minute at a time by fire(); each run
// blocks until the file for its schedule time exists (end()).
type overlapCell struct {
	*cell
	clock *stepClock
	next  time.Time // the schedule's next fire time
}

var minute0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func newOverlapCell(t *testing.T, o model.Overlap, extra string) *overlapCell {
	clock := &stepClock{now: minute0.Add(30 * time.Second)}
	c := newCell(t, master.Config{Clock: clock})
	c.addWorker(8)
	c.apply("name: slow\n" + extra + "tasks:\n  - {name: t, command: \"while [ ! -f " +
		filepath.Join(c.dir, "end") + ".$BELUGA_DATETIME ]; do sleep 0.01; done\"}\n")
	oc := &overlapCell{cell: c, clock: clock, next: minute0.Add(time.Minute)}
	c.putSchedule(model.Schedule{Workflow: "slow", Cron: "* * * * *", Overlap: o}, oc.next)
	return oc
}

// fire moves the clock past the next fire time and waits for the master to
// have fired (or skipped) it.
func (c *overlapCell) fire() time.Time {
	c.t.Helper()
	at := c.next
	c.clock.step(time.Minute)
	c.m.Notify()
	wait.Until(c.t, 30*time.Second, "fire at "+at.Format(time.TimeOnly), func() bool {
		sc, err := c.st.ScheduleGet(c.ctx, "p", "slow")
		return err == nil && sc.NextFireTime != nil && sc.NextFireTime.After(at)
	})
	c.next = at.Add(time.Minute)
	return at
}

// end lets the run for schedule time at finish.
func (c *overlapCell) end(at time.Time) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "end")+"."+at.UTC().Format("20060102150405"), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// runFor is the run for schedule time at (zero when none).
func (c *overlapCell) runFor(at time.Time) model.WorkflowInstance {
	for _, in := range c.scheduled("slow") {
		if in.ScheduleTime != nil && in.ScheduleTime.Equal(at) {
			return in
		}
	}
	return model.WorkflowInstance{}
}

func (c *overlapCell) waitState(at time.Time, states ...model.WorkflowState) model.WorkflowInstance {
	c.t.Helper()
	var in model.WorkflowInstance
	wait.Until(c.t, 30*time.Second, "run for "+at.Format(time.TimeOnly)+" "+string(states[0]), func() bool {
		in = c.runFor(at)
		for _, s := range states {
			if in.ID != 0 && in.State == s {
				return true
			}
		}
		return false
	})
	return in
}

// running counts the schedule's runs in state running.
func (c *overlapCell) running() int {
	n := 0
	for _, in := range c.scheduled("slow") {
		if in.State == model.WorkflowRunning {
			n++
		}
	}
	return n
}

// TestOverlapAllowPilesUp: the default lets every fire run beside the
// unfinished ones (the behaviour the other policies exist to prevent).
func TestOverlapAllowPilesUp(t *testing.T) {
	t.Parallel()
	c := newOverlapCell(t, "", "")
	var ats []time.Time
	for range 3 {
		ats = append(ats, c.fire())
	}
	wait.Until(t, 30*time.Second, "three runs running at once", func() bool { return c.running() == 3 })
	for _, at := range ats {
		c.end(at)
		c.finished(c.runFor(at).ID)
	}
}

// TestOverlapSkipRecordsSkippedFires: fires while the run is unfinished do
// not run and are counted on the schedule.
func TestOverlapSkipRecordsSkippedFires(t *testing.T) {
	t.Parallel()
	c := newOverlapCell(t, model.OverlapSkip, "")
	first := c.fire()
	c.waitState(first, model.WorkflowRunning)
	c.fire()
	last := c.fire()
	if n := len(c.scheduled("slow")); n != 1 {
		t.Fatalf("%d runs under skip, want 1", n)
	}
	sc, _ := c.st.ScheduleGet(c.ctx, "p", "slow")
	if sc.SkippedFires != 2 || sc.LastSkippedTime == nil || !sc.LastSkippedTime.Equal(last) {
		t.Fatalf("schedule: skipped %d, last %v; want 2, %v (note %q)", sc.SkippedFires, sc.LastSkippedTime, last, sc.Note)
	}
	c.end(first)
	c.finished(c.runFor(first).ID)
	after := c.fire()
	c.end(after)
	if in := c.finished(c.waitState(after, model.WorkflowSucceeded).ID); in.State != model.WorkflowSucceeded {
		t.Fatalf("run after the skip: %+v", in)
	}
}

// TestOverlapWaitRunsInOrderOneAtATime: fires while a run is unfinished are
// queued and run one at a time in schedule-time order.
func TestOverlapWaitRunsInOrderOneAtATime(t *testing.T) {
	t.Parallel()
	c := newOverlapCell(t, model.OverlapWait, "")
	ats := []time.Time{c.fire(), c.fire(), c.fire()}
	c.waitState(ats[0], model.WorkflowRunning)
	for _, at := range ats[1:] {
		if in := c.runFor(at); !in.Queued || in.State != model.WorkflowSubmitted {
			t.Fatalf("run for %v under wait: %+v", at, in)
		}
	}
	// The last one's gate opens first: it still waits its turn.
	c.end(ats[2])
	c.end(ats[0])
	c.waitState(ats[1], model.WorkflowRunning)
	if in := c.runFor(ats[2]); !in.Queued {
		t.Fatalf("third run started while the second runs: %+v", in)
	}
	c.end(ats[1])
	var prev model.WorkflowInstance
	for i, at := range ats {
		in := c.finished(c.runFor(at).ID)
		if in.State != model.WorkflowSucceeded {
			t.Fatalf("run %d: %+v", i, in)
		}
		if i > 0 && in.StartTime.Before(*prev.EndTime) {
			t.Fatalf("run %d started at %v, before run %d ended at %v", i, in.StartTime, i-1, prev.EndTime)
		}
		prev = in
	}
}

// TestOverlapReplaceStopsTheRunning: a fire while a run is unfinished stops
// it, then runs.
func TestOverlapReplaceStopsTheRunning(t *testing.T) {
	t.Parallel()
	c := newOverlapCell(t, model.OverlapReplace, "")
	first := c.fire()
	c.waitState(first, model.WorkflowRunning)
	second := c.fire()
	old := c.finished(c.runFor(first).ID)
	if old.State != model.WorkflowStopped {
		t.Fatalf("replaced run: %+v", old)
	}
	in := c.waitState(second, model.WorkflowRunning)
	if in.StartTime.Before(*old.EndTime) {
		t.Fatalf("new run started at %v, before the replaced one ended at %v", in.StartTime, old.EndTime)
	}
	c.end(second)
	if in = c.finished(in.ID); in.State != model.WorkflowSucceeded {
		t.Fatalf("replacing run: %+v", in)
	}
}

// TestMaxActiveRunsManualRuns: manual runs beyond max_active_runs wait,
// queued, and start in order as runs end; none is refused.
func TestMaxActiveRunsManualRuns(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorker(8)
	gate := filepath.Join(c.dir, "g")
	c.apply("name: capped\nmax_active_runs: 2\ntasks:\n  - {name: t, command: \"while [ ! -f " + gate + ".$n ]; do sleep 0.01; done\"}\n")
	var runs []model.WorkflowInstance
	for i := range 4 {
		in, err := c.st.InstanceCreateRun(c.ctx, storeRun("capped", strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, in)
	}
	c.m.Notify()
	wait.Until(t, 30*time.Second, "two running, two queued", func() bool {
		r, q := 0, 0
		for _, in := range runs {
			in = c.instance(in.ID)
			r += btoi(in.State == model.WorkflowRunning)
			q += btoi(in.Queued)
		}
		return r == 2 && q == 2
	})
	if !c.instance(runs[0].ID).State.Finished() && c.instance(runs[2].ID).State != model.WorkflowSubmitted {
		t.Fatal("third run is not waiting")
	}
	for i := range runs {
		os.WriteFile(gate+"."+strconv.Itoa(i), nil, 0o644)
		c.finished(runs[i].ID)
	}
	var got []model.WorkflowInstance
	for _, in := range runs {
		got = append(got, c.instance(in.ID))
	}
	// At no instant were more than two running.
	for _, a := range got {
		n := 0
		for _, b := range got {
			if !b.StartTime.After(*a.StartTime) && b.EndTime.After(*a.StartTime) {
				n++
			}
		}
		if n > 2 {
			t.Fatalf("%d runs running at %v", n, a.StartTime)
		}
	}
	if got[2].StartTime.Before(*got[0].EndTime) || got[3].StartTime.Before(*got[1].EndTime) {
		t.Fatalf("queued runs did not start in order after the ones before ended: %+v", got)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestOverlapWaitAcrossLeaderChange: a wait fire queued under one leader
// runs once, after the previous run ends, under the next.
func TestOverlapWaitAcrossLeaderChange(t *testing.T) {
	t.Parallel()
	c := newOverlapCell(t, model.OverlapWait, "")
	first, second := c.fire(), c.fire()
	c.waitState(first, model.WorkflowRunning)
	if !c.runFor(second).Queued {
		t.Fatal("second fire not queued")
	}
	c.m.Stop() // the task of the first run goes on on its worker
	b := master.New(master.Config{Listen: "127.0.0.1:0", Clock: c.clock}, c.st, c.reg, c.reg, c.log)
	if err := b.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	wait.Until(t, 30*time.Second, "master b leads", b.IsLeader)
	if in := c.runFor(second); !in.Queued {
		t.Fatalf("queued run started under the new leader while the first runs: %+v", in)
	}
	c.end(second)
	c.end(first)
	one := c.finished(c.runFor(first).ID)
	two := c.finished(c.runFor(second).ID)
	if one.State != model.WorkflowSucceeded || two.State != model.WorkflowSucceeded || two.StartTime.Before(*one.EndTime) {
		t.Fatalf("runs across the leader change: %+v / %+v", one, two)
	}
	if n := len(c.scheduled("slow")); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
	if ts := c.tasks(two.ID); len(ts) != 1 {
		t.Fatalf("queued run ran %d task attempts, want 1", len(ts))
	}
}

func storeRun(workflow, n string) store.RunRequest {
	return store.RunRequest{Project: "p", Workflow: workflow, Params: map[string]string{"n": n}}
}
