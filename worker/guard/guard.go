// Package guard makes a worker's task process groups die with the worker,
// however the worker dies (kill -9 included), so that a task the master
// fails over to another worker does not keep running here as well.
//
// The kernel alone does not do it: Pdeathsig kills a task's shell when the
// worker dies, but the shell's children are reparented and live on. So the
// worker runs one guard process next to it: the same binary re-executed
// with a marker argument (MaybeRun must be called first thing in main). The
// two share a table of the live task process groups, a memfd the worker
// maps and writes into (registering a group is an atomic store, no system
// call), and a pipe the worker never writes to. When the worker exits, for
// any reason, the kernel closes the pipe's write end; the guard, blocked on
// reading it, wakes up, reads the table and SIGKILLs every group in it.
//
// Why one guard per worker rather than one shim process per task: a shim
// would be a Go program started for every task, and even an empty Go
// program costs about 0.7 ms more CPU than /bin/true to start (the beluga
// binary, with its package initialisers, about 5.5 ms), against a budget of
// 0.5 ms per task. Why a shared table rather than messages on the pipe:
// waking an idle Go process twice per task cost about 0.2 ms of CPU per
// task (measured); the guard now sleeps until the worker dies.
//
// A process that leaves its task's group (setsid, setpgid) is found by the
// scope variable every task process inherits (BELUGA_TASK_SCOPE, starting
// with the worker's pid): once the groups are killed, the guard scans /proc
// for the worker's scopes and kills those too. With cgroups (SetCgroupDir)
// it first kills the worker's cgroup, which holds every task's, so a
// process that also cleared its environment dies as well; without, that
// one escapes. And a group is registered just after its shell was exec'd, so a
// worker killed in that microsecond leaves what the shell forked in it
// (the shell itself still dies by Pdeathsig).
package guard

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/worker/cgroup"
	"golang.org/x/sys/unix"
)

// marker is argv[1] of a guard process.
const marker = "__beluga-task-guard"

// The guard process's descriptors besides stdin (the pipe) and stderr.
const (
	fdReady = 3 // the guard writes one byte once it runs
	fdTable = 4 // the shared table
)

// hooked is set by MaybeRun: this binary answers the marker, so re-executing
// it starts a guard rather than, say, a test binary's whole test suite.
var hooked atomic.Bool

// MaybeRun turns this process into a guard when it was started as one, and
// never returns then. Otherwise it returns at once and records that the
// binary can run guards (see Available). Call it first thing in main (and in
// a TestMain that starts workers).
func MaybeRun() {
	if (len(os.Args) == 2 || len(os.Args) == 3) && os.Args[1] == marker {
		runtime.GOMAXPROCS(1)
		// The guard lives exactly as long as the worker's pipe: a Ctrl-C or
		// a SIGTERM meant for the worker must not end it first.
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		// syscall.Exit, not os.Exit: nothing to flush, and a race-enabled
		// build would sleep a second in its exit hook.
		worker := os.Getppid() // before the worker dies, after which this is init's or a subreaper's pid
		code := serve(os.Stdin, os.NewFile(fdTable, "table"), os.NewFile(fdReady, "ready"), os.Stderr)
		// Only when the worker died: a worker that stops in order has
		// killed its tasks, and another worker of its process (tests) may
		// run tasks of the same scope prefix.
		if !workerDying(worker) {
			syscall.Exit(code)
		}
		if len(os.Args) == 3 {
			// The worker's cgroup holds every task's: killing it kills
			// all they started, environment cleared or not.
			if err := cgroup.Remove(os.Args[2], stopTimeout); err != nil {
				fmt.Fprintf(os.Stderr, "beluga task guard: %v\n", err)
			}
		}
		if n := killScoped(worker); n > 0 {
			fmt.Fprintf(os.Stderr, "beluga task guard: killed %d task process(es) outside their groups\n", n)
		}
		syscall.Exit(code)
	}
	hooked.Store(true)
}

// Available reports whether Start can work: on Linux, in a binary whose main
// called MaybeRun.
func Available() bool { return runtime.GOOS == "linux" && hooked.Load() }

// ErrUnavailable is returned by Start when Available is false.
var ErrUnavailable = errors.New("guard: unavailable: the binary's main does not call worker.MaybeRunGuard, or not Linux")

// serve is the guard process: it says it runs on ready, waits for end of
// file on ctl (the worker is gone, or stopping), then SIGKILLs every group
// in table: native-endian int32 entries, 0 for a free one. It returns the
// exit code.
func serve(ctl io.Reader, table io.ReaderAt, ready io.WriteCloser, stderr io.Writer) int {
	if table == nil || ready == nil {
		fmt.Fprintln(stderr, "beluga task guard: started without its table or ready descriptor")
		return 2
	}
	if _, err := ready.Write([]byte{1}); err != nil {
		return 2
	}
	ready.Close()
	var buf [64]byte
	for {
		if _, err := ctl.Read(buf[:]); err != nil {
			break // EOF: the worker closed the pipe or died
		}
	}
	data, err := io.ReadAll(io.NewSectionReader(table, 0, math.MaxInt64))
	if err != nil {
		fmt.Fprintf(stderr, "beluga task guard: cannot read the task table: %v\n", err)
		return 1
	}
	// One SIGKILL per group suffices: the kernel delivers a group signal to
	// every member, and a member forking meanwhile has its fork restarted
	// after the signal, so no new member slips through.
	killed := 0
	for i := 0; i+4 <= len(data); i += 4 {
		if g := int32(binary.NativeEndian.Uint32(data[i:])); g > 0 && syscall.Kill(-int(g), syscall.SIGKILL) == nil {
			killed++
		}
	}
	if killed > 0 {
		fmt.Fprintf(stderr, "beluga task guard: the worker is gone; killed %d task process group(s)\n", killed)
	}
	return 0
}

const (
	readyTimeout = 10 * time.Second // a guard's start-up, package initialisers included
	stopTimeout  = 5 * time.Second
)

// Guard is the worker's side: it owns the shared table and the guard
// process, which it replaces if someone kills it.
type Guard struct {
	log       *zap.Logger
	exe       string // binary to re-execute; os.Executable() unless a test sets it
	cgroupDir string // the worker's task cgroups' parent (SetCgroupDir); "" none

	mu      sync.Mutex // a leaf lock over the table and the process
	memfd   *os.File
	mem     []byte      // memfd mapped shared
	table   []int32     // mem as entries
	slot    map[int]int // registered pgid -> its entry
	free    []int       // free entries
	ctl     *os.File    // write end of the current guard's pipe; nil while none runs
	proc    *os.Process
	stopped bool // set once Stop began: the watcher replaces no guard process any more

	// life owns the watcher and the stopper; its context, ended by Stop,
	// ends a replacement's start-up or back-off.
	life startstop.Base
	done chan struct{} // closed when the watcher returned
}

// New returns a guard whose table first holds capacity groups (it grows
// when needed); Start runs it.
func New(capacity int, log *zap.Logger) *Guard {
	if log == nil {
		log = zap.NewNop()
	}
	g := &Guard{log: log, slot: map[int]int{}, free: make([]int, 0, max(capacity, 1)), done: make(chan struct{})}
	// The stopper kills a guard process still there at stopTimeout; the
	// bound leaves it time to be reaped.
	g.life.Name, g.life.Log, g.life.StopTimeout = "guard", log, 2*stopTimeout
	return g
}

// SetCgroupDir makes the guard process kill and remove the cgroup dir (the
// worker's, parent of its task cgroups; see worker/cgroup) when the worker
// dies. Call it before Start.
func (g *Guard) SetCgroupDir(dir string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cgroupDir = dir
}

// Start creates the table, starts the guard process and returns once it
// runs. ctx bounds start-up only. A second Start, or one after Stop or after
// a failed Start, is an error.
func (g *Guard) Start(ctx context.Context) error {
	return g.life.StartWith(context.WithoutCancel(ctx), func() error { return g.start(ctx) }, nil)
}

func (g *Guard) start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.exe == "" {
		if !Available() {
			return ErrUnavailable
		}
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("guard: cannot find this binary to re-execute: %w", err)
		}
		g.exe = exe
	}
	fd, err := unix.MemfdCreate("beluga-task-groups", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("guard: memfd: %w", err)
	}
	g.memfd = os.NewFile(uintptr(fd), "beluga-task-groups")
	if err := g.grow(cap(g.free)); err != nil {
		g.unmap()
		return err
	}
	p, ctl, err := spawn(ctx, g.argv(), g.memfd)
	if err != nil {
		g.unmap()
		return err
	}
	g.proc, g.ctl = p, ctl
	g.life.Go(g.watch)
	g.life.Go(g.stopper)
	g.log.Debug("task guard started", zap.Int("pid", p.Pid), zap.Int("capacity", len(g.table)))
	return nil
}

// grow makes the table hold at least n entries; g.mu is held. The guard
// reads the memfd to its end, so the new entries are seen as they are.
func (g *Guard) grow(n int) error {
	page := os.Getpagesize()
	size := (n*4 + page - 1) / page * page
	if size <= len(g.mem) {
		return nil
	}
	if err := g.memfd.Truncate(int64(size)); err != nil {
		return fmt.Errorf("guard: size the table: %w", err)
	}
	mem, err := unix.Mmap(int(g.memfd.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("guard: map the table: %w", err)
	}
	if g.mem != nil {
		_ = unix.Munmap(g.mem) // same file: the registered entries stay
	}
	old := len(g.table)
	g.mem = mem
	g.table = unsafe.Slice((*int32)(unsafe.Pointer(&mem[0])), size/4)
	for i := len(g.table) - 1; i >= old; i-- {
		g.free = append(g.free, i)
	}
	return nil
}

func (g *Guard) unmap() {
	if g.mem != nil {
		_ = unix.Munmap(g.mem)
		g.mem, g.table = nil, nil
	}
	if g.memfd != nil {
		g.memfd.Close()
		g.memfd = nil
	}
}

// argv is a guard process's command line. exe and cgroupDir are set before
// Start and never change.
func (g *Guard) argv() []string {
	if g.cgroupDir == "" {
		return []string{g.exe, marker}
	}
	return []string{g.exe, marker, g.cgroupDir}
}

// spawn starts a guard process argv on table and waits for its ready byte.
func spawn(ctx context.Context, argv []string, table *os.File) (*os.Process, *os.File, error) {
	exe := argv[0]
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("guard: pipe: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, nil, fmt.Errorf("guard: pipe: %w", err)
	}
	defer readyR.Close()
	p, err := os.StartProcess(exe, argv, &os.ProcAttr{
		Dir:   "/", // pins no directory of the worker's
		Files: []*os.File{ctlR, os.Stderr, os.Stderr, readyW, table},
		// Its own session: a signal to the worker's process group (a
		// terminal's Ctrl-C, kill -9 -pgid) must leave the guard to act.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	ctlR.Close() // only the guard holds the read end
	readyW.Close()
	if err != nil {
		ctlW.Close()
		return nil, nil, fmt.Errorf("guard: start %s: %w", exe, err)
	}
	deadline := time.Now().Add(readyTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = readyR.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = readyR.SetReadDeadline(time.Now()) })
	var b [1]byte
	_, err = io.ReadFull(readyR, b[:])
	stop()
	if err != nil {
		ctlW.Close()
		_ = p.Kill()
		_, _ = p.Wait()
		return nil, nil, fmt.Errorf("guard: %s did not start a guard process (its main must call worker.MaybeRunGuard first): %w", exe, err)
	}
	return p, ctlW, nil
}

// Add registers the process group pgid: it is SIGKILLed if the worker dies
// before Remove. Call it right after the group leader started. It costs a
// map update and a store into the shared table.
func (g *Guard) Add(pgid int) {
	if pgid <= 0 || pgid > math.MaxInt32 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.table == nil {
		return // not started, or stopped
	}
	if _, ok := g.slot[pgid]; ok {
		return
	}
	if len(g.free) == 0 {
		if err := g.grow(2 * len(g.table)); err != nil {
			g.log.Error("task group not guarded", zap.Int("pgid", pgid), zap.Error(err))
			return
		}
	}
	i := g.free[len(g.free)-1]
	g.free = g.free[:len(g.free)-1]
	g.slot[pgid] = i
	atomic.StoreInt32(&g.table[i], int32(pgid))
}

// Remove forgets pgid. Call it once the leader was reaped: afterwards the
// number may be reused by an unrelated group.
func (g *Guard) Remove(pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i, ok := g.slot[pgid]
	if !ok || g.table == nil {
		return
	}
	delete(g.slot, pgid)
	atomic.StoreInt32(&g.table[i], 0)
	g.free = append(g.free, i)
}

// Len is the number of registered groups.
func (g *Guard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.slot)
}

// watch waits for the guard process. One that exits while the worker runs
// (killed by someone) is replaced, with back-off, on the same table;
// meanwhile a death of the worker would leave the tasks' children running,
// hence the error log.
func (g *Guard) watch(ctx context.Context) {
	defer close(g.done)
	for {
		g.mu.Lock()
		p := g.proc
		g.mu.Unlock()
		st, err := p.Wait()
		g.mu.Lock()
		if g.ctl != nil {
			g.ctl.Close()
			g.ctl = nil
		}
		stopped := g.stopped
		g.mu.Unlock()
		if stopped {
			return
		}
		g.log.Error("task guard process exited; starting another (tasks are not guarded meanwhile)",
			zap.Stringer("status", st), zap.Error(err))
		if !g.respawn(ctx) {
			return
		}
	}
}

// respawn starts a new guard process, retrying with back-off until it runs
// or Stop; false on Stop.
func (g *Guard) respawn(ctx context.Context) bool {
	delay := 100 * time.Millisecond
	for {
		p, ctl, err := spawn(ctx, g.argv(), g.memfd) // memfd is only closed after the watcher returned
		if err == nil {
			g.mu.Lock()
			if g.stopped {
				g.mu.Unlock()
				ctl.Close() // end of file: it exits at once
				_, _ = p.Wait()
				return false
			}
			g.proc, g.ctl = p, ctl
			g.mu.Unlock()
			g.log.Info("task guard replaced", zap.Int("pid", p.Pid))
			return true
		}
		g.log.Error("cannot start a task guard; retrying", zap.Duration("in", delay), zap.Error(err))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// Stop closes the pipe, so the guard process SIGKILLs the groups still
// registered (none, after the executor stopped) and exits; it returns once
// the process has been reaped and the watcher returned, then releases the
// table. A guard that does not exit within a few seconds is killed. Safe
// twice and before Start.
func (g *Guard) Stop() {
	_ = g.life.Stop(func() {
		g.mu.Lock()
		g.unmap()
		g.mu.Unlock()
	})
}

// stopper does Stop's work once Stop ends ctx: it closes the pipe, then
// kills a guard process still running at stopTimeout.
func (g *Guard) stopper(ctx context.Context) {
	<-ctx.Done()
	g.mu.Lock()
	g.stopped = true
	if g.ctl != nil {
		g.ctl.Close()
		g.ctl = nil
	}
	g.mu.Unlock()
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-g.done:
	case <-t.C:
		g.mu.Lock()
		p := g.proc
		g.mu.Unlock()
		g.log.Warn("task guard did not exit; killing it", zap.Int("pid", p.Pid))
		_ = p.Kill()
	}
}

// scopeEnv is the executor's task scope variable (worker/executor): its
// value starts with the worker's pid and a dot.
const scopeEnv = "BELUGA_TASK_SCOPE"

// killScoped SIGKILLs every process whose environment gives it a task scope
// of worker, with its group, and returns how many it killed. It scans again
// while it finds some: a process forking meanwhile leaves children.
func killScoped(worker int) int {
	prefix := []byte(scopeEnv + "=" + strconv.Itoa(worker) + ".")
	killed := 0
	for range 8 {
		found := 0
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return killed
		}
		for _, en := range entries {
			pid, err := strconv.Atoi(en.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := procfs.Environ(pid)
			if err != nil || !hasPrefixEntry(env, prefix) {
				continue
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL) // its group, when it leads one
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				found++
			}
		}
		if found == 0 {
			break
		}
		killed += found
	}
	return killed
}

// hasPrefixEntry reports whether a NUL-separated environment block has an
// entry starting with prefix.
func hasPrefixEntry(env, prefix []byte) bool {
	for len(env) > 0 {
		entry, rest, _ := bytes.Cut(env, []byte{0})
		if bytes.HasPrefix(entry, prefix) {
			return true
		}
		env = rest
	}
	return false
}

// workerDying reports whether process worker, this guard's parent when it
// started, is gone or exiting. Its descriptors (the pipe) close during its
// exit, after the kernel flags it PF_EXITING and before it stops being
// this guard's parent, so the flag tells a death from an orderly Stop.
func workerDying(worker int) bool {
	if os.Getppid() != worker {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(worker) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return true
	}
	// After the command name: state ppid pgrp session tty_nr tpgid flags ...
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 7 || f[0] == "Z" || f[0] == "X" {
		return true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	const pfExiting = 0x4
	return err != nil || flags&pfExiting != 0
}
