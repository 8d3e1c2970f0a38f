package master_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// readPID waits for the pid a task wrote to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, "the task's pid file", func() bool {
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
	c := newCell(t, master.Config{})
	c.runningDelay = time.Hour
	c.addWorker(1)
	pidFile := filepath.Join(c.dir, "pid")
	c.apply(fmt.Sprintf("name: short\ntasks:\n  - {name: a, command: \"echo $$ > %s\"}\n", pidFile))
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
	c := newCell(t, master.Config{})
	c.runningDelay = time.Hour
	c.addWorker(1)
	pidFile := filepath.Join(c.dir, "pid")
	c.apply(fmt.Sprintf("name: long\ntasks:\n  - {name: a, command: \"echo $$ > %s; sleep 100\"}\n", pidFile))
	inst := c.run("long", model.PriorityMedium)
	pid := readPID(t, pidFile)
	if ts := c.tasks(inst.ID); len(ts) != 1 || ts[0].State != model.TaskDispatched || ts[0].LogPath == "" {
		t.Fatalf("tasks while Running is held: %+v, want one dispatched and acked", ts)
	}
	if _, err := c.st.RequestAction(c.ctx, store.ActionRequest{InstanceID: inst.ID, Action: store.ActionStop, By: "op"}); err != nil {
		t.Fatal(err)
	}
	c.m.Notify()
	if got := c.finished(inst.ID); got.State != model.WorkflowStopped {
		t.Fatalf("instance: %+v", got)
	}
	waitFor(t, "the task's process gone", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	if ts := c.tasks(inst.ID); ts[0].State != model.TaskKilled {
		t.Fatalf("task row after the stop: %+v", ts[0])
	}
}
