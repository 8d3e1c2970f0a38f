// Package cgrouptest gives a test a cgroup v2 directory of its own, on a
// host whose /sys/fs/cgroup may be cgroup v1: it mounts the cgroup2
// hierarchy on a temporary directory (root only) and makes a child there.
package cgrouptest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/beluga-scheduler/beluga/worker/cgroup"
)

// Dir returns an empty cgroup2 directory that the test may create cgroups
// in; at the end of the test what is in it is killed and removed, and the
// mount undone. Without the privilege to mount, the test is skipped, saying
// why. Every mount shows the same hierarchy, so each test's directory is a
// child of its own name.
func Dir(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroup v2 tests mount cgroup2 on a temporary directory, which needs root; running as uid " + strconv.Itoa(os.Geteuid()))
	}
	mnt := t.TempDir()
	if err := unix.Mount("none", mnt, "cgroup2", 0, ""); err != nil {
		t.Skipf("cgroup v2 tests need to mount cgroup2 (mount -t cgroup2 none %s): %v", mnt, err)
	}
	dir := filepath.Join(mnt, "beluga-test-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Mkdir(dir, 0o755); err != nil {
		_ = unix.Unmount(mnt, unix.MNT_DETACH)
		t.Fatalf("create a test cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := cgroup.Remove(dir, 5*time.Second); err != nil {
			t.Errorf("remove the test cgroup: %v", err)
		}
		if err := unix.Unmount(mnt, 0); err != nil {
			if errors.Is(err, unix.EBUSY) {
				err = unix.Unmount(mnt, unix.MNT_DETACH)
			}
			if err != nil {
				t.Errorf("unmount %s: %v", mnt, err)
			}
		}
	})
	return dir
}
