package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestRetryClockSurvivesLeaderKill: a task fails, its retry is delayed by
// 4 s; the leader is killed during the delay. The new leader submits the
// retry when the 4 s since the failure are up, not 4 s after it took over:
// the clock comes from the failed attempt's end time in the DB.
func TestRetryClockSurvivesLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	count := filepath.Join(marks, "count")
	flaky := task(marks, "flaky", fmt.Sprintf(`echo x >> %[1]s; [ "$(wc -l < %[1]s)" -ge 2 ]`, count))
	flaky.Retries = 1
	flaky.RetryInterval = spec.Duration(4 * time.Second)
	c.Apply(t, spec.Workflow{Name: "retry", Tasks: []spec.Task{flaky}})
	id := c.Run(t, "retry")
	c.Eventually(t, finishWithin, "first attempt failed", func() bool {
		rows := c.Tasks(t, id)["flaky"]
		return len(rows) == 2 && rows[1].State == "delayed"
	})
	old := c.Leader()
	old.Kill9()
	c.WaitLeader(t, failoverWithin, old)
	inst := c.WaitFinished(t, id, finishWithin)
	if inst.State != "succeeded" {
		t.Fatalf("instance %s", inst.State)
	}
	rows := c.Tasks(t, id)["flaky"]
	gap := rows[1].StartTime.Sub(*rows[0].EndTime)
	t.Logf("retry started %v after the failure (interval 4s, leader killed in between)", gap.Round(time.Millisecond))
	if gap < 4*time.Second || gap > 4*time.Second+1500*time.Millisecond {
		t.Fatalf("retry started %v after the failure; want the 4s interval measured from the failure", gap)
	}
	if ex := clustertest.Executions(t, marks, id); len(ex) != 2 || ex[0].Attempt != 1 || ex[1].Attempt != 2 {
		t.Fatalf("executions %+v, want attempt 1 (failed) then attempt 2", ex)
	}
	c.AssertNoStuckRows(t)
}

// TestTaskGroupSlotsSurviveLeaderKill: a task group of capacity 1; one task
// runs when the leader is killed. The new leader counts the running task
// against the group (it reads what is in flight from the DB), so the
// waiting task still waits: the two never overlap, and no slot leaks.
func TestTaskGroupSlotsSurviveLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	ctx := context.Background()
	if _, err := c.Client.CreateTaskGroup(ctx, "db", 1, ""); err != nil {
		t.Fatal(err)
	}
	marks := t.TempDir()
	log := filepath.Join(marks, "log")
	tk := func(n string) spec.Task {
		s := task(marks, n, fmt.Sprintf("echo start >> %[1]s; sleep 3; echo end >> %[1]s", log))
		s.TaskGroup = "db"
		return s
	}
	c.Apply(t, spec.Workflow{Name: "grouped", Tasks: []spec.Task{tk("a"), tk("b")}})
	id := c.Run(t, "grouped")
	clustertest.WaitExecution(t, marks, id, "a", finishWithin)
	old := c.Leader()
	old.Kill9()
	c.WaitLeader(t, failoverWithin, old)
	if inst := c.WaitFinished(t, id, finishWithin); inst.State != "succeeded" {
		t.Fatalf("instance %s", inst.State)
	}
	b, _ := os.ReadFile(log)
	if got := strings.Join(strings.Fields(string(b)), ","); got != "start,end,start,end" {
		t.Fatalf("tasks of a capacity-1 group overlapped across the failover: %s", got)
	}
	g, err := c.Client.GetTaskGroup(ctx, "db")
	if err != nil || g.InUse != 0 {
		t.Fatalf("group after the run: %+v %v", g, err)
	}
	c.AssertRanOnce(t, id, marks)
	c.AssertNoStuckRows(t)
}

// TestKillTaskOnRemoteWorker: kill of one task over REST kills its whole
// process group on the worker (the shell and its child), and the task is
// recorded killed.
func TestKillTaskOnRemoteWorker(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	pids := filepath.Join(marks, "pids")
	c.Apply(t, spec.Workflow{Name: "victim", Tasks: []spec.Task{
		task(marks, "v", fmt.Sprintf(`sleep 300 & echo "$$ $!" > %[1]s.tmp; mv %[1]s.tmp %[1]s; wait`, pids)),
	}})
	id := c.Run(t, "victim")
	c.Eventually(t, finishWithin, "pids written", func() bool { _, err := os.Stat(pids); return err == nil })
	b, _ := os.ReadFile(pids)
	var procs []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q", b)
		}
		procs = append(procs, n)
	}
	rows := c.Tasks(t, id)["v"]
	if _, err := c.Client.TaskAction(context.Background(), rows[0].ID, "kill", "test"); err != nil {
		t.Fatal(err)
	}
	inst := c.WaitFinished(t, id, finishWithin)
	if inst.State != "failed" || c.Tasks(t, id)["v"][0].State != "killed" {
		t.Fatalf("instance %s, task %s", inst.State, c.Tasks(t, id)["v"][0].State)
	}
	c.Eventually(t, 10*time.Second, "shell and child gone", func() bool {
		for _, p := range procs {
			if procfs.Alive(p) {
				return false
			}
		}
		return true
	})
	c.AssertNoStuckRows(t)
}

// TestPriorityWithSaturatedWorker: the only worker is full; a high-priority
// run queued after a low one gets the first place that frees up.
func TestPriorityWithSaturatedWorker(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, WorkerSlots: 1, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	gate := filepath.Join(marks, "gate")
	wait := func(n string) string { return fmt.Sprintf("while [ ! -f %s.%s ]; do sleep 0.01; done", gate, n) }
	c.Apply(t, spec.Workflow{Name: "blocker", Tasks: []spec.Task{task(marks, "b1", wait("1")), task(marks, "b2", wait("2"))}})
	c.Apply(t, spec.Workflow{Name: "low", Priority: "low", Tasks: []spec.Task{task(marks, "l", "true")}})
	c.Apply(t, spec.Workflow{Name: "high", Priority: "high", Tasks: []spec.Task{task(marks, "h", "true")}})
	blk := c.Run(t, "blocker")
	// One slot, two places (2 x capacity): one blocker runs, the other
	// waits on the worker.
	c.Eventually(t, finishWithin, "worker full", func() bool {
		run, in := 0, 0
		for _, rows := range c.Tasks(t, blk) {
			switch rows[len(rows)-1].State {
			case "running":
				run++
				in++
			case "dispatched":
				in++
			}
		}
		return run == 1 && in == 2
	})
	low := c.Run(t, "low")
	c.Eventually(t, finishWithin, "low queued", func() bool { return len(c.Tasks(t, low)["l"]) == 1 })
	high := c.Run(t, "high")
	c.Eventually(t, finishWithin, "high queued", func() bool { return len(c.Tasks(t, high)["h"]) == 1 })
	// Free one place: end whichever blocker the worker is running.
	first, second := "1", "2"
	if c.Tasks(t, blk)["b2"][0].State == "running" {
		first, second = "2", "1"
	}
	os.WriteFile(gate+"."+first, nil, 0o644)
	c.Eventually(t, finishWithin, "high dispatched", func() bool { return c.Tasks(t, high)["h"][0].DispatchTime != nil })
	if s := c.Tasks(t, low)["l"][0].State; s != "submitted" {
		t.Fatalf("low task is %s when the first place went to high", s)
	}
	os.WriteFile(gate+"."+second, nil, 0o644)
	for _, id := range []int64{blk, low, high} {
		if inst := c.WaitFinished(t, id, finishWithin); inst.State != "succeeded" {
			t.Fatalf("instance %d: %s", id, inst.State)
		}
	}
	l, h := c.Tasks(t, low)["l"][0], c.Tasks(t, high)["h"][0]
	if !h.DispatchTime.Before(*l.DispatchTime) {
		t.Fatalf("high dispatched %v, low %v", h.DispatchTime, l.DispatchTime)
	}
	c.AssertNoStuckRows(t)
}
