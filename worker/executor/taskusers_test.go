package executor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestTaskUsersOneEach: as root with isolation on, tasks without a tenant
// that run at once run as users of their own (of the task user's group);
// a process a task left behind with its environment cleared (out of reach
// of the scope and the group) is killed with the task's user; a work dir
// left as it was given goes back to its user's pool (the user's next task
// gets the same inode), and one the task wrote in is handed to the worker.
func TestTaskUsersOneEach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root switches tasks to task users")
	}
	t.Parallel()
	b := setup(t, Config{Shell: "sh", Slots: 2, TaskIsolation: "on"})
	if b.e.users == nil {
		t.Fatal("no task users as root with isolation on and a sandbox")
	}
	<-b.e.users.done
	if n := len(b.e.users.locks); n != 2 {
		t.Fatalf("%d task users claimed, want 2 (one per slot)", n)
	}
	group := b.e.taskUser
	run := func(id int64, cmd string) []string {
		t.Helper()
		res := b.waitResult(t, id)
		if res.State != "succeeded" {
			t.Fatalf("task %d %q: %+v", id, cmd, res)
		}
		logPath, _ := b.e.LogPath(id)
		out, _ := os.ReadFile(logPath)
		return strings.Fields(string(out))
	}

	// Two at once: two users, neither the task user itself.
	cmd := "id -u; id -g; sleep 0.5"
	b.mustDispatch(t, dispatch(1, cmd))
	b.mustDispatch(t, dispatch(2, cmd))
	a, c := run(1, cmd), run(2, cmd)
	if len(a) != 2 || len(c) != 2 || a[0] == c[0] {
		t.Fatalf("two tasks at once ran as %v and %v: want two users", a, c)
	}
	for _, ids := range [][]string{a, c} {
		if ids[0] == "0" || ids[0] == strconv.Itoa(group.uid) || ids[1] != strconv.Itoa(group.gid) {
			t.Errorf("a task ran as uid %s gid %s; want a user of its own in group %d", ids[0], ids[1], group.gid)
		}
	}

	// A process that cleared its environment and left the group.
	cmd = "id -u; env -i setsid sh -c 'touch escaped; exec sleep 300' </dev/null >/dev/null 2>&1 & " +
		"while [ ! -e escaped ]; do sleep 0.01; done; rm escaped"
	b.mustDispatch(t, dispatch(3, cmd))
	out := run(3, cmd)
	uid, _ := strconv.Atoi(out[0])
	// SIGKILLed when the task ended; dead a moment later.
	wait.UntilErr(t, 5*time.Second, "the left process to die", func() error {
		ents, _ := os.ReadDir("/proc")
		for _, en := range ents {
			pid, err := strconv.Atoi(en.Name())
			var st syscall.Stat_t
			if err == nil && syscall.Stat("/proc/"+en.Name(), &st) == nil && int(st.Uid) == uid && procfs.Alive(pid) {
				return fmt.Errorf("process %d of the task's user %d outlived the task", pid, uid)
			}
		}
		return nil
	})

	// One user's dirs: the pool gives the next task of the user the same
	// inode; a dir written in is the worker's afterwards.
	cmd = "id -u; stat -c %i ."
	inode := map[string]string{}
	for id := int64(4); id < 8; id++ {
		b.mustDispatch(t, dispatch(id, cmd))
		out := run(id, cmd)
		if prev, ok := inode[out[0]]; ok && prev != out[1] {
			t.Errorf("task %d of user %s got dir inode %s; its user's last dir was %s", id, out[0], out[1], prev)
		}
		inode[out[0]] = out[1]
	}
	b.mustDispatch(t, dispatch(8, "echo x > f"))
	run(8, "")
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(b.dir, "work", "7", "8"), &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o777 != 0o700 {
		t.Errorf("the written dir: uid %d mode %o; want the worker's, 0700", st.Uid, st.Mode&0o777)
	}
}

// TestReachable: an interpreter under a 0700 directory (a pyenv shim in
// root's home) is named as out of the task user's reach, at start, rather
// than failing each python task; one on an open path is fine.
func TestReachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	closed := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(closed, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(closed, "bin", "python3")
	if err := os.WriteFile(py, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(dir), dir, closed, filepath.Join(closed, "bin")} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u := &tenant{name: "nobody-here", uid: 65000, gid: 65000}
	if why := reachable(py, u); why != "" {
		t.Fatalf("an open path: %s", why)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	if why := reachable(py, u); !strings.Contains(why, closed+" is not open to user nobody-here") {
		t.Fatalf("under a 0700 dir: %q", why)
	}
	if err := os.Chmod(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(py, 0o744); err != nil {
		t.Fatal(err)
	}
	if why := reachable(py, u); !strings.Contains(why, "not executable by user nobody-here") {
		t.Fatalf("a file only its owner runs: %q", why)
	}
}

// TestKillUID: killUID SIGKILLs the processes of one uid, wherever they
// are in the process tree, and no other user's: a thread of this process
// takes the uid for the kill(-1) and root back afterwards.
func TestKillUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	t.Parallel()
	start := func(uid int) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	// Two uids no user of this host has (nor any test's task user).
	victim, bystander := start(64991), start(64992)
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
	if err := killUID(64991); err != nil {
		t.Fatal(err)
	}
	if err := victim.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the uid's process: %v, want killed", err)
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("another uid's process was hit: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Fatal("the process is no longer root")
	}
	if err := killUID(0); err == nil {
		t.Fatal("killUID(0) was allowed")
	}
}
