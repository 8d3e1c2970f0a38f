package worker

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/testkit/cgrouptest"
)

// TestSetsidChildDiesWithKilledWorker: a task's child that left the task's
// process group and session (setsid) dies too when the worker is killed
// with SIGKILL: the guard finds it by its task scope.
func TestSetsidChildDiesWithKilledWorker(t *testing.T) {
	t.Parallel()
	escaped := runEscapeeAndKillWorker(t, "", "setsid sleep 1000 & echo $! > escaped; wait")
	wait.Until(t, 10*time.Second, "the setsid child "+strconv.Itoa(escaped)+" to die with the worker", func() bool { return !procfs.Alive(escaped) })
}

// TestEnvClearedChildDiesWithKilledWorker: a task's child that left its
// group and session and cleared its environment (no task scope to find it
// by) dies when the worker is killed with SIGKILL: the guard kills the
// worker's cgroup, which holds the task's.
func TestEnvClearedChildDiesWithKilledWorker(t *testing.T) {
	t.Parallel()
	base := cgrouptest.Dir(t)
	escaped := runEscapeeAndKillWorker(t, base,
		`setsid env -i sleep 1000 & until [ "$(cat /proc/$!/comm)" = sleep ]; do :; done; echo $! > escaped; wait`)
	wait.Until(t, 10*time.Second, "the env-cleared setsid child "+strconv.Itoa(escaped)+" to die with the worker", func() bool { return !procfs.Alive(escaped) })
	wait.Until(t, 10*time.Second, "the dead worker's cgroup to be removed", func() bool {
		entries, err := os.ReadDir(base)
		if err != nil {
			return false
		}
		for _, e := range entries {
			if e.IsDir() {
				return false
			}
		}
		return true
	})
}

// runEscapeeAndKillWorker runs a guarded worker in a child process (with
// its cgroups under cgroupBase, or off for ""), gives it a task running
// command, which writes the pid of a child that left the task's group and
// session to the file escaped, kills the worker with SIGKILL once that
// child runs, and returns the child's pid.
func runEscapeeAndKillWorker(t *testing.T, cgroupBase, command string) int {
	t.Helper()
	w := startChildWorker(t, cgroupBase, command)
	var escaped int
	wait.Until(t, 10*time.Second, "the setsid child's pid", func() bool {
		b, err := os.ReadFile(filepath.Join(w.dir, "work", "3", "1", "escaped"))
		escaped, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && escaped > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	wait.Until(t, 10*time.Second, "the setsid child to run in a session of its own", func() bool {
		g, alive := procfs.Group(escaped)
		return alive && g == escaped
	})

	w.kill(t)
	return escaped
}
