package executor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/worker/cgroup"
)

// What a task leaves behind when its shell exits: processes that outlive it
// and output past the log cap. Both are dealt with in the task's waiter
// goroutine, before its end is reported.
//
// Processes: the task's group is SIGKILLed when its shell has exited (the
// shell is waited for without being reaped first, so that its pid, the
// group's id, cannot be reused meanwhile). A process that left the group
// (setsid, setpgid) is found through the child subreaper: the worker
// process is one (PR_SET_CHILD_SUBREAPER), so a task's orphans become its
// children rather than init's, and the ones whose environment carries the
// task's scope variable are killed and reaped. A process that clears its
// environment or is started by something outside the task escapes; only a
// cgroup per task holds it: with Config.Cgroups each task process starts in
// a cgroup of its own, which is killed and removed when its shell exits
// (endCgroup); the subreaper then only reaps what died there.

// scopeEnv names each task process's scope:
// "<worker pid>.<executor>.<task>.<attempt>" (several executors can share a
// process, in tests). The guard kills the processes whose scope starts with
// its worker's pid.
const scopeEnv = "BELUGA_TASK_SCOPE"

// executors numbers the executors of this process, for scopes.
var executors atomic.Int64

// logDrainGrace bounds the wait for a task's output once its processes are
// gone; a descendant that escaped still holds the pipe, and loses it then.
const logDrainGrace = 2 * time.Second

func (e *Executor) taskScope(id int64, attempt int) string {
	return strconv.Itoa(os.Getpid()) + "." + strconv.FormatInt(e.scopeID, 10) + "." +
		strconv.FormatInt(id, 10) + "." + strconv.Itoa(attempt)
}

// scopeOf returns the scope in a task's environment ("" when none).
func scopeOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, scopeEnv+"="); ok {
			return v
		}
	}
	return ""
}

var subreaperOnce sync.Once

// becomeSubreaper makes this process the reaper of its descendants' orphans.
func becomeSubreaper() error {
	var err error
	subreaperOnce.Do(func() { err = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
	return err
}

// waitExited blocks until pid has exited without reaping it (WNOWAIT).
func waitExited(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// children lists this process's adopted children: the orphans of task
// processes, the only children the sweeps look for (shells are reaped by
// their waiters). The kernel hands an orphan to the first live thread of
// its subreaper, the thread group leader (find_new_reaper), and a Go
// process's main thread lives as long as the process, so the leader's list
// is enough: reading every thread's list cost a /proc read per OS thread at
// every task's end (~10 % of standalone's CPU in the fanout benchmark).
func children() []int {
	b, err := os.ReadFile(leaderChildren)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

var leaderChildren = "/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"

// ownedBy reports whether pid's initial environment holds kv exactly.
func ownedBy(pid int, kv string) bool {
	b, err := procfs.Environ(pid)
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// shells holds the pids of this process's task shells (of every executor
// in it) from their start to their reaping: sweeps skip them.
var shells sync.Map

// killOrphans kills and reaps the children of this process (orphans
// adopted as subreaper) that belong to scope, and then the ones that their
// deaths orphan in turn. A task's own shell is reaped already. uid >= 0 is
// the task's own user (taskusers.go), whose processes were all SIGKILLed
// just before: its children here are reaped too, scope or not (one that
// cleared its environment).
func killOrphans(scope string, uid int) {
	if scope == "" {
		return
	}
	kv := scopeEnv + "=" + scope
	for range 8 { // each round kills a generation; deeper trees are rare
		found := false
		for _, pid := range children() {
			if _, shell := shells.Load(pid); shell {
				continue
			}
			if !ownedBy(pid, kv) && (uid < 0 || !ownedByUID(pid, uid)) {
				continue
			}
			found = true
			_ = syscall.Kill(-pid, syscall.SIGKILL) // its group, when it leads one
			_ = syscall.Kill(pid, syscall.SIGKILL)
			wait4(pid, 0)
		}
		if !found {
			return
		}
	}
}

// ownedByUID reports whether pid's /proc entry is uid's.
func ownedByUID(pid, uid int) bool {
	var st syscall.Stat_t
	return syscall.Stat("/proc/"+strconv.Itoa(pid), &st) == nil && int(st.Uid) == uid
}

// endCgroup kills what is left in a task's cgroup once its shell was
// reaped, waits (bounded) for it to empty and removes it, then reaps the
// task's processes that died as this process's adopted children: left, the
// cgroup's members when the shell exited, and any other zombie of a task
// cgroup of this executor (a process forked meanwhile, or one of an earlier
// task adopted only after that task's sweep). cgPath is the cgroup as /proc
// names it ("": unknown, or nothing was left when the shell exited; then
// nothing can have been adopted, and nothing is reaped by it).
func (e *Executor) endCgroup(cg *cgroup.Task, cgPath string, left []int) {
	if err := cg.Remove(e.cfg.KillGrace + logDrainGrace); err != nil {
		e.log.Warn("task cgroup not removed", zap.Error(err))
	}
	if cgPath == "" {
		return
	}
	prefix := path.Dir(cgPath) + "/"
	// A process leaves its cgroup a little before it turns zombie and its
	// children are handed to this process: wait for left to get there.
	deadline := time.Now().Add(logDrainGrace)
	for {
		reapCgroupZombies(prefix)
		if !slices.ContainsFunc(left, func(pid int) bool { return exiting(pid, prefix) }) || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// exiting reports whether pid, of a killed cgroup under prefix, is not yet
// reaped and either still exiting or a zombie of this process's.
func exiting(pid int, prefix string) bool {
	if p, ok := cgroup.ProcPath(pid); !ok || !strings.HasPrefix(p, prefix) {
		return false // reaped (or the number reused elsewhere)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:])) // state ppid ...
	if len(f) < 2 {
		return false
	}
	return f[0] != "Z" || f[1] == strconv.Itoa(os.Getpid())
}

// reapCgroupZombies reaps this process's zombie children that died in a
// cgroup under prefix, except task shells (their waiters reap them).
func reapCgroupZombies(prefix string) {
	for _, pid := range children() {
		if _, shell := shells.Load(pid); shell || !zombie(pid) {
			continue
		}
		if p, ok := cgroup.ProcPath(pid); ok && strings.HasPrefix(p, prefix) {
			wait4(pid, syscall.WNOHANG)
		}
	}
}

// zombie reports whether pid has exited and awaits its reaping.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// reapGroup waits, at most logDrainGrace, until process group pgid (its
// leader reaped, the rest SIGKILLed) is empty, reaping the members that
// died as this process's adopted children: as subreaper it must, or they
// would stay zombies. Members of a running task's group that exit on their
// own after their parent are reaped here too, when that task ends.
func reapGroup(pgid int) {
	deadline := time.Now().Add(logDrainGrace)
	for {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		reaped := false
		for _, pid := range children() {
			if zombieIn(pid, pgid) {
				wait4(pid, syscall.WNOHANG)
				reaped = true
			}
		}
		if time.Now().After(deadline) {
			return
		}
		if !reaped {
			time.Sleep(time.Millisecond) // members still dying
		}
	}
}

// zombieIn reports whether pid is a zombie of process group pgid.
func zombieIn(pid, pgid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp ...
	return len(f) >= 3 && f[0] == "Z" && f[2] == strconv.Itoa(pgid)
}

func wait4(pid, options int) {
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, options, nil); !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// logMarker ends a log cut at its cap.
func logMarker(limit int64) string {
	return fmt.Sprintf("\n[beluga: log truncated at %d bytes (worker.max_log_bytes); further output dropped]\n", limit)
}
