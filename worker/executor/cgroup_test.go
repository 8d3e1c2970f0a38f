package executor

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
	"github.com/beluga-scheduler/beluga/worker/cgroup"
)

// escapee starts a child that leaves the task's group and session and
// clears its environment, so neither the group kill nor the subreaper's
// scope sweep can find it, and writes its pid to the file escaped once the
// child runs sleep (so it did leave: an exit before would kill it with the
// group).
const escapee = "setsid env -i sleep 1000 & until [ \"$(cat /proc/$!/comm)\" = sleep ]; do :; done; echo $! > escaped; "

// cgroupSetup is setup with a cgroup of the test's own for the tasks.
func cgroupSetup(t *testing.T) (*bundle, *cgroup.Dir) {
	t.Helper()
	d, err := cgroup.Open(cgrouptest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return setup(t, Config{Cgroups: d}), d
}

// readPid waits for a pid the task wrote to file in its work dir.
func (b *bundle) readPid(t *testing.T, id int64, file string) int {
	t.Helper()
	var pid int
	wait.Until(t, 10*time.Second, file+" pid of task "+strconv.FormatInt(id, 10), func() bool {
		raw, err := os.ReadFile(filepath.Join(b.dir, "work", "7", strconv.FormatInt(id, 10), file))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
		return err == nil && pid > 0 && strings.HasSuffix(string(raw), "\n")
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// TestCgroupEndsEnvClearedChild: a task that leaves a child in a session of
// its own with an empty environment, and exits, leaves nothing running once
// it is reported ended, and its cgroup is gone.
func TestCgroupEndsEnvClearedChild(t *testing.T) {
	t.Parallel()
	b, d := cgroupSetup(t)
	b.mustDispatch(t, dispatch(1, escapee+"exit 0"))
	if res := b.waitResult(t, 1); res.State != "succeeded" {
		t.Fatalf("result %+v", res)
	}
	pid := b.readPid(t, 1, "escaped")
	wait.Until(t, 5*time.Second, "the env-cleared setsid child "+strconv.Itoa(pid)+" to be gone after its task ended", func() bool {
		return !procfs.Alive(pid)
	})
	if _, err := os.Stat(filepath.Join(d.Path(), "task-1-1")); !os.IsNotExist(err) {
		t.Fatalf("the task's cgroup is still there after its end: %v", err)
	}
}

// TestCgroupKillEndsEnvClearedChild: killing a running task kills such a
// child too, and the task runs in its own cgroup meanwhile.
func TestCgroupKillEndsEnvClearedChild(t *testing.T) {
	t.Parallel()
	b, d := cgroupSetup(t)
	b.mustDispatch(t, dispatch(1, escapee+"wait"))
	shell := b.waitRunning(t, 1).PID
	pid := b.readPid(t, 1, "escaped")
	want, ok := cgroup.ProcPath(shell)
	if !ok || !strings.HasSuffix(want, "/"+filepath.Base(d.Path())+"/task-1-1") {
		t.Fatalf("the task's shell is in cgroup %q, want its own task-1-1 under %s", want, d.Path())
	}
	if got, _ := cgroup.ProcPath(pid); got != want {
		t.Fatalf("the setsid child is in cgroup %q, want the task's %q", got, want)
	}
	if !b.e.Kill(1).Found {
		t.Fatal("kill: task not found")
	}
	if res := b.waitResult(t, 1); res.State != "killed" {
		t.Fatalf("result %+v", res)
	}
	wait.Until(t, 5*time.Second, "the env-cleared setsid child "+strconv.Itoa(pid)+" to be gone after its task was killed", func() bool {
		return !procfs.Alive(pid)
	})
	if _, err := os.Stat(filepath.Join(d.Path(), "task-1-1")); !os.IsNotExist(err) {
		t.Fatalf("the task's cgroup is still there after its kill: %v", err)
	}
	if z, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		t.Fatalf("the killed child is still in the process table (not reaped): %s", z)
	}
}
