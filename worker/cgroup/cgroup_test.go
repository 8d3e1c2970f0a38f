package cgroup_test

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/testkit/cgrouptest"
	"github.com/beluga-scheduler/beluga/worker/cgroup"
)

func TestSelfPath(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		ok             bool
	}{
		{"v2 only", "0::/system.slice/beluga.service\n", "/system.slice/beluga.service", true},
		{"root", "0::/\n", "/", true},
		{"hybrid", "12:pids:/x\n1:name=systemd:/y\n0::/user.slice/s\n", "/user.slice/s", true},
		{"v1 only", "9:name=systemd:/\n4:memory:/a\n1:cpu:/\n", "", false},
		{"outside the namespace", "0::/../../other\n", "", false},
		{"relative", "0::x\n", "", false},
		{"empty", "", "", false},
		{"no newline", "0::/a b", "/a b", true},
	} {
		got, ok := cgroup.SelfPath([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("%s: SelfPath(%q) = %q, %v; want %q, %v", c.name, c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestAutoBase(t *testing.T) {
	const v2, tmpfs = unix.CGROUP2_SUPER_MAGIC, unix.TMPFS_MAGIC
	for _, c := range []struct {
		name   string
		fs     int64
		self   string
		want   string
		reason string // a part of it
	}{
		{"v2", v2, "0::/system.slice/b.service\n", "/sys/fs/cgroup/system.slice/b.service", ""},
		{"v2 namespace root", v2, "0::/\n", "/sys/fs/cgroup", ""},
		{"v1 tmpfs", tmpfs, "0::/\n", "", "not a cgroup2 mount"},
		{"v2 without a v2 line", v2, "1:cpu:/\n", "", "no cgroup v2 line"},
	} {
		got, reason := cgroup.AutoBase(c.fs, []byte(c.self), "/sys/fs/cgroup")
		if got != c.want || !strings.Contains(reason, c.reason) || (c.want == "") != (reason != "") {
			t.Errorf("%s: autoBase = %q, %q; want %q and a reason containing %q", c.name, got, reason, c.want, c.reason)
		}
	}
}

func TestBaseSetting(t *testing.T) {
	if b, reason, err := cgroup.Base("off"); b != "" || reason == "" || err != nil {
		t.Errorf(`Base("off") = %q, %q, %v; want off with a reason`, b, reason, err)
	}
	if _, _, err := cgroup.Base("relative/dir"); err == nil || !strings.Contains(err.Error(), "worker.cgroup_dir") {
		t.Errorf(`Base("relative/dir") = %v; want an error naming the setting`, err)
	}
	if _, _, err := cgroup.Base(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not on a cgroup2") {
		t.Errorf("Base(a tmp dir) = %v; want not on a cgroup2 file system", err)
	}
	// auto never fails: it is on or says why not.
	if b, reason, err := cgroup.Base("auto"); err != nil || (b == "") == (reason == "") {
		t.Errorf(`Base("auto") = %q, %q, %v`, b, reason, err)
	}
}

// escapee starts, in cgroup task, a shell whose child leaves its session
// and clears its environment; it returns the child's pid once it runs.
func escapee(t *testing.T, task *cgroup.Task) int {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", `setsid env -i sleep 1000 & until [ "$(cat /proc/$!/comm)" = sleep ]; do :; done; echo $! > `+out+`; exec sleep 1000`)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: task.FD()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	task.CloseFD()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var pid int
	wait.Until(t, 10*time.Second, "the escapee to start (its pid file)", func() bool {
		b, err := os.ReadFile(out)
		p, aerr := strconv.Atoi(strings.TrimSpace(string(b)))
		pid = p
		return err == nil && aerr == nil && strings.HasSuffix(string(b), "\n")
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// TestRemoveKillsTheSubtree, with cgroup.kill and with its fallback (a
// kernel before 5.14): every process is gone and so is the cgroup.
func TestRemoveKillsTheSubtree(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run("fallback="+strconv.FormatBool(fallback), func(t *testing.T) {
			cgroup.SetNoKillFile(t, fallback)
			d, err := cgroup.Open(cgrouptest.Dir(t))
			if err != nil {
				t.Fatal(err)
			}
			task, err := d.NewTask("task-1-1")
			if err != nil {
				t.Fatal(err)
			}
			pid := escapee(t, task)
			if n := len(task.Members()); n != 2 {
				t.Fatalf("the task cgroup has %d members %v, want the shell and its child", n, task.Members())
			}
			if err := task.Remove(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			if procfs.Alive(pid) {
				t.Fatalf("the env-cleared child %d outlived its cgroup's removal", pid)
			}
			if _, err := os.Stat(task.Path()); !os.IsNotExist(err) {
				t.Fatalf("the task cgroup is still there: %v", err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOpenRemovesStale: a worker's cgroup of a pid that no longer runs,
// with a task cgroup and a process in it, is killed and removed by the next
// worker's Open; a live worker's is left alone.
func TestOpenRemovesStale(t *testing.T) {
	base := cgrouptest.Dir(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, "beluga-"+strconv.Itoa(dead.Process.Pid))
	live := filepath.Join(base, "beluga-1") // init: always running
	for _, dir := range []string{stale, filepath.Join(stale, "task-9-1"), live} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fd, err := unix.Open(filepath.Join(stale, "task-9-1"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err = cmd.Start()
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	d, err := cgroup.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale worker cgroup %s is still there: %v", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a live worker's cgroup was removed: %v", err)
	}
	// Killed: its waiter sees a SIGKILL.
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the stale task's process ended with %v, want killed", err)
	}
	_ = unix.Rmdir(live)
}
