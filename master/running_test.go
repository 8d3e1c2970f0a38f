package master_test

import (
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/master"
)

// readPID waits for the pid a task wrote to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	wait.Until(t, 30*time.Second, "the task's pid file", func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// TestShortTaskRowFromResultAlone: a task that ends before its worker's
// RunningDelay sends only its Result; its row still gets the start time,
// the pid and the end time.
func TestShortTaskRowFromResultAlone(t *testing.T) {
	t.Parallel()
	c, pidFile := heldPIDCell(t, "short", "echo $$ > PID")
	inst := c.run("short", model.PriorityMedium)
	if got := c.finished(inst.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("instance: %+v", got)
	}
	pid := readPID(t, pidFile)
	ts := c.tasks(inst.ID)
	if len(ts) != 1 {
		t.Fatalf("tasks: %+v", ts)
	}
	tk := ts[0]
	if tk.State != model.TaskSucceeded || tk.PID != pid || tk.StartTime == nil || tk.EndTime == nil ||
		tk.EndTime.Before(*tk.StartTime) || tk.ExitCode == nil || *tk.ExitCode != 0 {
		t.Fatalf("task row: %+v, want succeeded with pid %d, start and end times", tk, pid)
	}
}

// TestStopWhileRunningHeld: a stop reaches a task that runs but has not
// reported Running yet (its row is dispatched and acked): the worker kills
// its process, and the row ends killed with its pid.
func TestStopWhileRunningHeld(t *testing.T) {
	t.Parallel()
	c, pidFile := heldPIDCell(t, "long", "echo $$ > PID; sleep 100")
	inst := c.run("long", model.PriorityMedium)
	pid := readPID(t, pidFile)
	if ts := c.tasks(inst.ID); len(ts) != 1 || ts[0].State != model.TaskDispatched || ts[0].LogPath == "" {
		t.Fatalf("tasks while Running is held: %+v, want one dispatched and acked", ts)
	}
	if _, err := c.st.ActionRequest(c.ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionStop, By: "op"}); err != nil {
		t.Fatal(err)
	}
	c.m.Notify()
	if got := c.finished(inst.ID); got.State != model.WorkflowStopped {
		t.Fatalf("instance: %+v", got)
	}
	wait.Until(t, 30*time.Second, "the task's process gone", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	if ts := c.tasks(inst.ID); ts[0].State != model.TaskKilled {
		t.Fatalf("task row after the stop: %+v", ts[0])
	}
}

// TestWorkerLostWhileRunningHeld: the worker of a task that runs but has not
// reported Running yet (its row dispatched and acked) leaves: the task is
// failed over as one reported running would be (need_fault_tolerance, a new
// attempt on another worker), and the instance succeeds.
func TestWorkerLostWhileRunningHeld(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{WorkerLossGrace: 100 * time.Millisecond})
	c.runningDelay = time.Hour
	lost := c.addWorker(1)
	runs, gate := filepath.Join(c.dir, "runs"), filepath.Join(c.dir, "gate")
	c.apply(fmt.Sprintf("name: held\ntasks:\n  - {name: a, command: \"echo a >> %s; while [ ! -f %s ]; do sleep 0.01; done\"}\n", runs, gate))
	inst := c.run("held", model.PriorityMedium)
	wait.Until(t, 30*time.Second, "a executing", func() bool { b, _ := os.ReadFile(runs); return len(b) > 0 })
	if ts := c.tasks(inst.ID); len(ts) != 1 || ts[0].State != model.TaskDispatched || ts[0].LogPath == "" || ts[0].Host != lost.Host() {
		t.Fatalf("tasks while Running is held: %+v, want one dispatched to %s and acked", ts, lost.Host())
	}
	lost.Stop() // kills a without reporting it
	if err := c.reg.Deregister(c.ctx, registry.RoleWorker, lost.Host()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gate, nil, 0o644)
	other := c.addWorker(1)
	if got := c.finished(inst.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("instance: %+v", got)
	}
	ts := c.tasks(inst.ID)
	if len(ts) != 2 || ts[0].State != model.TaskNeedFaultTolerance || ts[0].Host != lost.Host() ||
		ts[1].State != model.TaskSucceeded || ts[1].Host != other.Host() {
		t.Fatalf("attempts: %+v, want need_fault_tolerance on %s, then succeeded on %s", ts, lost.Host(), other.Host())
	}
}

// TestHandOverWhileRunningHeld: leadership moves while a task runs with its
// Running report held: the new leader finds the task held by its worker,
// waits for its result instead of running it again, and finishes the DAG.
// Every task runs once.
func TestHandOverWhileRunningHeld(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.runningDelay = time.Hour
	c.addWorker(2)
	runs, gate := filepath.Join(c.dir, "runs"), filepath.Join(c.dir, "gate")
	c.apply(fmt.Sprintf(`name: hand
tasks:
  - {name: a, command: "echo a >> %[1]s"}
  - {name: b, command: "echo b >> %[1]s; while [ ! -f %[2]s ]; do sleep 0.01; done", depends_on: [a]}
  - {name: c, command: "echo c >> %[1]s", depends_on: [b]}
`, runs, gate))
	inst := c.run("hand", model.PriorityMedium)
	wait.Until(t, 30*time.Second, "b executing", func() bool { b, _ := os.ReadFile(runs); return strings.Contains(string(b), "b") })
	for _, tk := range c.tasks(inst.ID) {
		if tk.Name == "b" && (tk.State != model.TaskDispatched || tk.LogPath == "") {
			t.Fatalf("b while Running is held: %+v, want dispatched and acked", tk)
		}
	}
	next := master.New(master.Config{Listen: "127.0.0.1:0"}, c.st, c.reg, c.reg, c.log)
	if err := next.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	defer next.Stop()
	c.m.Stop() // graceful hand-over
	wait.Until(t, 30*time.Second, "next master leads", next.IsLeader)
	os.WriteFile(gate, nil, 0o644)
	if got := c.finished(inst.ID); got.State != model.WorkflowSucceeded {
		t.Fatalf("instance: %+v", got)
	}
	if b, _ := os.ReadFile(runs); strings.Join(strings.Fields(string(b)), ",") != "a,b,c" {
		t.Fatalf("executions %q, want a,b,c once each", b)
	}
	for _, tk := range c.tasks(inst.ID) {
		if tk.Name == "b" && (tk.Attempt != 1 || tk.PID == 0 || tk.StartTime == nil) {
			t.Fatalf("b: %+v, want its one attempt with pid and start time", tk)
		}
	}
}

// heldPIDCell is a cell whose worker holds every Running report, with
// workflow wf of one task a running cmd, PID in cmd standing for the file
// the task writes its shell's pid to.
func heldPIDCell(t *testing.T, wf, cmd string) (*cell, string) {
	c := newCell(t, master.Config{})
	c.runningDelay = time.Hour
	c.addWorker(1)
	pidFile := filepath.Join(c.dir, "pid")
	c.apply(fmt.Sprintf("name: %s\ntasks:\n  - {name: a, command: %q}\n", wf, strings.ReplaceAll(cmd, "PID", pidFile)))
	return c, pidFile
}
