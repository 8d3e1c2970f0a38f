package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/beluga-scheduler/beluga/internal/lifeline"
)

// taskUsers gives each running task without a tenant an OS user of its
// own: <task user>-1, -2, ..., one per slot, all in the task user's group
// (docs/security.md, "A user per running task"). Tasks that shared one uid
// could read each other through /proc (a running task's environ, its
// params and secrets, and its work dir through cwd): hidepid hides only
// other users' processes, and ptrace's rules let a uid into its own. With
// a user per task, both are another user's.
//
// A user serves one task at a time on this host: its lock file is held
// for the executor's life (two workers on one host claim different users),
// and when its task ends every process it left is killed (killUID) before
// it serves the next. So a work dir the task left as it got it goes back
// to that user's own pool and the next task of the user takes it with a
// rename (no inode to allocate), and every task of such a user runs in one
// shared namespace (sandbox.startShared) instead of a copy of its own:
// other tasks' dirs are there but another user's, 0700.
//
// The users are made (useradd, ~0.1 s each) in the background at the first
// start on a host; until one is free a task runs as the task user itself,
// in a namespace copy of its own, as before.
type taskUsers struct {
	group *tenant // the task user: its gid is every slot user's group
	want  int
	free  chan *slotUser
	locks []*os.File // held for the executor's life; fill's until done
	done  chan struct{}
	log   *zap.Logger
}

// slotUser is one of the users, with the work dirs it left pristine.
type slotUser struct {
	t    tenant
	dirs chan string // its own 0700 dirs in the spare dir, ready to take
}

// taskUsersLockDir holds a lock file per claimed user, host-wide.
const taskUsersLockDir = "/run/beluga/task-users"

// maxTaskUserScan bounds the names tried: users other processes hold are
// skipped.
const maxTaskUserScan = 4096

func newTaskUsers(group *tenant, want int, log *zap.Logger) *taskUsers {
	return &taskUsers{group: group, want: want, free: make(chan *slotUser, want), done: make(chan struct{}), log: log}
}

// take returns a free user, or nil when none is (the task then runs as
// the task user). Owner goroutine.
func (u *taskUsers) take() *slotUser {
	if u == nil {
		return nil
	}
	select {
	case s := <-u.free:
		return s
	default:
		return nil
	}
}

// put gives back a user whose processes are gone.
func (u *taskUsers) put(s *slotUser) { u.free <- s } // never blocks: want users at most

// fill claims want users, making the missing ones, until ctx ends.
func (u *taskUsers) fill(ctx context.Context) {
	defer close(u.done)
	if err := os.MkdirAll(taskUsersLockDir, 0o700); err != nil {
		u.log.Warn("no lock dir for task users; tasks run as the task user", zap.Error(err))
		return
	}
	made := 0
	for i := 1; len(u.locks) < u.want && i <= maxTaskUserScan && ctx.Err() == nil; i++ {
		s, lock, created, err := u.claim(u.group.name + "-" + strconv.Itoa(i))
		if err != nil {
			u.log.Warn("task user unavailable; tasks beyond the users made run as the task user", zap.Error(err))
			return
		}
		if s == nil {
			continue // another executor's
		}
		if created {
			made++
		}
		u.locks = append(u.locks, lock)
		u.free <- s
	}
	if made > 0 {
		u.log.Info("made OS users for tasks", zap.Int("made", made), zap.Int("users", len(u.locks)), zap.String("group", u.group.name))
	}
}

// claim locks name's lock file and returns the user, made if missing; nil
// when another executor holds it.
func (u *taskUsers) claim(name string) (*slotUser, *os.File, bool, error) {
	lock, err := os.OpenFile(filepath.Join(taskUsersLockDir, name), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, false, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, false, nil
		}
		return nil, nil, false, fmt.Errorf("lock task user %s: %w", name, err)
	}
	t, created, err := u.ensure(name)
	if err == nil {
		// What an earlier worker's task of this user left (a crash).
		err = killUID(t.uid)
	}
	if err != nil {
		lock.Close()
		return nil, nil, false, err
	}
	return &slotUser{t: *t, dirs: make(chan string, 2)}, lock, created, nil
}

// ensure looks name up, making it when missing: a system user in the task
// user's group, no home, no login shell.
func (u *taskUsers) ensure(name string) (*tenant, bool, error) {
	created := false
	t, err := lookupTenant(name)
	if err != nil {
		out, aerr := exec.Command("useradd", "--system", "--gid", strconv.Itoa(u.group.gid), "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "--comment", "Beluga task", name).CombinedOutput()
		if aerr != nil {
			return nil, false, fmt.Errorf("task user %s: %w (useradd: %v: %s)", name, err, aerr, strings.TrimSpace(string(out)))
		}
		if t, err = lookupTenant(name); err != nil {
			return nil, false, err
		}
		created = true
	}
	if t.uid == 0 || t.uid == os.Geteuid() || t.uid == u.group.uid || t.gid != u.group.gid {
		return nil, false, fmt.Errorf("task user %s (uid %d, gid %d) is not an unprivileged user of group %s (gid %d): remove it or name another task user",
			name, t.uid, t.gid, u.group.name, u.group.gid)
	}
	return t, created, nil
}

// close lets the users go; after every task ended.
func (u *taskUsers) close() {
	if u == nil {
		return
	}
	<-u.done
	for _, l := range u.locks {
		l.Close()
	}
}

// uidKiller is the thread that takes a task user's uid to kill its
// processes: kill(-1) signals every process the caller may signal, and a
// thread whose real and effective uid are the task user's (and without
// CAP_KILL, which the change of effective uid drops) may signal that
// user's processes and no other's. The saved uid stays 0, so the thread
// takes root back afterwards. Credentials are per thread in Linux; the
// raw system call changes this thread's alone (Go's Setresuid would change
// every thread's).
var uidKiller = lifeline.NewPool(1, nil)

// killUID SIGKILLs every process of uid.
func killUID(uid int) error {
	var err error
	if perr := uidKiller.Do(func() { err = killAs(uid) }); perr != nil {
		return perr
	}
	return err
}

func killAs(uid int) error {
	if uid <= 0 {
		return fmt.Errorf("kill the processes of uid %d: not a task user", uid)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), 0); e != 0 {
		return fmt.Errorf("take uid %d: %w", uid, e)
	}
	err := killOwn(uid)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 0, 0, 0); e != 0 {
		// Not expected (the saved uid is 0); this thread stays uid's and
		// every later kill fails at its first setresuid, safely.
		return fmt.Errorf("take root back after killing uid %d's processes: %w", uid, e)
	}
	return err
}

// killOwn kills the calling thread's user's processes, once it holds no
// capability that would reach others' (a container may keep them across
// the uid change: SECBIT_NO_SETUID_FIXUP). kill(-1) says ESRCH only when
// there is no other process at all, and nothing of whom it could signal.
func killOwn(uid int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities as uid %d: %w", uid, err)
	}
	if data[0].Effective != 0 || data[1].Effective != 0 {
		return fmt.Errorf("still capable as uid %d (securebits keep capabilities): cannot signal only its processes", uid)
	}
	if err := unix.Kill(-1, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill the processes of uid %d: %w", uid, err)
	}
	return nil
}
