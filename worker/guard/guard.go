// Package guard makes a worker's task process groups die with the worker,
// however the worker dies (kill -9 included), so that a task the master
// fails over to another worker does not keep running here as well.
//
// The kernel alone does not do it: Pdeathsig kills a task's shell when the
// worker dies, but the shell's children are reparented and live on. So the
// worker runs one guard process next to it: the same binary re-executed
// with a marker argument (MaybeRun must be called first thing in main). The
// worker tells the guard, over a pipe, each task process group while the
// task's shell runs; when the worker exits for any reason the kernel closes
// the pipe's write end, and the guard, seeing end of file, SIGKILLs every
// group still registered and exits.
//
// Why one guard per worker rather than one shim process per task: the shim
// would be a Go program started for every task, and even an empty Go
// program costs about 0.7 ms more CPU than /bin/true to start (the beluga
// binary, with its package initialisers, about 5.5 ms), against a budget of
// 0.5 ms per task. The guard costs two 4-byte pipe writes per task.
//
// What it does not cover: a process that leaves its task's group (setsid,
// setpgid) escapes, as it escapes Kill already (only cgroups would hold
// it); and a group is registered just after its shell was exec'd, so a
// worker killed in those few microseconds leaves what the shell forked in
// them (the shell itself still dies by Pdeathsig).
package guard

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// marker is argv[1] of a guard process.
const marker = "__beluga-task-guard"

// hooked is set by MaybeRun: this binary answers the marker, so re-executing
// it starts a guard rather than, say, a test binary's whole test suite.
var hooked atomic.Bool

// MaybeRun turns this process into a guard when it was started as one, and
// never returns then. Otherwise it returns at once and records that the
// binary can run guards (see Available). Call it first thing in main (and in
// a TestMain that starts workers).
func MaybeRun() {
	if len(os.Args) == 2 && os.Args[1] == marker {
		runtime.GOMAXPROCS(1)
		// The guard lives exactly as long as the worker's pipe: a Ctrl-C or
		// a SIGTERM meant for the worker must not end it first.
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		// syscall.Exit, not os.Exit: nothing to flush, and a race-enabled
		// build would sleep a second in its exit hook.
		syscall.Exit(serve(os.Stdin, os.NewFile(3, "ready"), os.Stderr))
	}
	hooked.Store(true)
}

// Available reports whether Start can work: on Linux, in a binary whose main
// called MaybeRun.
func Available() bool { return runtime.GOOS == "linux" && hooked.Load() }

// ErrUnavailable is returned by Start when Available is false.
var ErrUnavailable = errors.New("guard: unavailable: the binary's main does not call worker.MaybeRunGuard, or not Linux")

// serve is the guard process: it acknowledges its start on ready, then reads
// records from ctl (a little-endian int32: +pgid registers a group, -pgid
// forgets it) until end of file, which means the worker is gone, then
// SIGKILLs every group still registered. It returns the exit code.
func serve(ctl io.Reader, ready *os.File, stderr io.Writer) int {
	if ready == nil {
		fmt.Fprintln(stderr, "beluga task guard: started without its ready pipe (fd 3)")
		return 2
	}
	if _, err := ready.Write([]byte{1}); err != nil {
		return 2
	}
	ready.Close()
	groups := map[int32]struct{}{}
	r := bufio.NewReaderSize(ctl, 4096)
	var rec [4]byte
	for {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			break // EOF: the worker closed the pipe or died
		}
		switch g := int32(binary.LittleEndian.Uint32(rec[:])); {
		case g > 0:
			groups[g] = struct{}{}
		case g < 0 && g != math.MinInt32:
			delete(groups, -g)
		}
	}
	// One SIGKILL per group suffices: the kernel delivers a group signal to
	// every member, and a member forking meanwhile has its fork restarted
	// after the signal, so no new member slips through.
	killed := 0
	for g := range groups {
		if syscall.Kill(-int(g), syscall.SIGKILL) == nil {
			killed++
		}
	}
	if killed > 0 {
		fmt.Fprintf(stderr, "beluga task guard: the worker is gone; killed %d task process group(s)\n", killed)
	}
	return 0
}

const (
	readyTimeout = 10 * time.Second       // a guard's start-up, package initialisers included
	writeTimeout = 100 * time.Millisecond // a guard that cannot take 4 bytes for this long is stuck
	stopTimeout  = 5 * time.Second
)

// Guard is the worker's side: it starts the guard process, keeps the
// registered groups (a small leaf map under mu) and, if the guard process
// dies, starts a new one and registers them again.
type Guard struct {
	log *zap.Logger
	exe string // binary to re-execute; os.Executable() unless a test sets it

	mu      sync.Mutex
	groups  map[int]struct{}
	ctl     *os.File // write end of the current guard's pipe; nil while none runs
	proc    *os.Process
	broken  bool // a write failed: the process is being replaced
	started bool
	stopped bool
	buf     [4]byte

	ctx      context.Context // cancelled by Stop: ends a replacement's start-up or back-off
	cancel   context.CancelFunc
	done     chan struct{} // closed when the watcher returned
	stopOnce sync.Once
}

// New returns a guard; Start runs it.
func New(log *zap.Logger) *Guard {
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Guard{log: log, groups: map[int]struct{}{}, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Start starts the guard process and returns once it runs. ctx bounds
// start-up only.
func (g *Guard) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.stopped:
		return errors.New("guard: stopped")
	case g.started:
		return errors.New("guard: already started")
	}
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
	p, ctl, err := spawn(ctx, g.exe)
	if err != nil {
		return err
	}
	g.proc, g.ctl, g.started = p, ctl, true
	go g.watch()
	g.log.Debug("task guard started", zap.Int("pid", p.Pid))
	return nil
}

// spawn starts a guard process of exe and waits for its ready byte.
func spawn(ctx context.Context, exe string) (*os.Process, *os.File, error) {
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
	p, err := os.StartProcess(exe, []string{exe, marker}, &os.ProcAttr{
		Dir:   "/", // pins no directory of the worker's
		Files: []*os.File{ctlR, os.Stderr, os.Stderr, readyW},
		// Its own session: a signal to the worker's process group (a
		// terminal's Ctrl-C, kill -9 -pgid) must leave the guard to act.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	ctlR.Close() // the guard holds the read end; the worker only writes
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
// before Remove. Call it right after the group leader started.
func (g *Guard) Add(pgid int) {
	if pgid <= 0 || pgid > math.MaxInt32 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.groups[pgid] = struct{}{}
	g.send(int32(pgid))
}

// Remove forgets pgid. Call it once the leader was reaped: afterwards the
// number may be reused by an unrelated group.
func (g *Guard) Remove(pgid int) {
	if pgid <= 0 || pgid > math.MaxInt32 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.groups[pgid]; !ok {
		return
	}
	delete(g.groups, pgid)
	g.send(-int32(pgid))
}

// Len is the number of registered groups.
func (g *Guard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.groups)
}

// send writes one record; g.mu is held. The write deadline bounds how long
// a stuck guard can hold the caller (Remove runs on the executor's owner
// goroutine): past it, the guard process is killed and replaced.
func (g *Guard) send(v int32) {
	if g.ctl == nil || g.broken {
		return // the watcher registers every group with the next process
	}
	binary.LittleEndian.PutUint32(g.buf[:], uint32(v))
	_ = g.ctl.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := g.ctl.Write(g.buf[:]); err != nil {
		g.broken = true
		g.log.Error("task guard not taking registrations; replacing it", zap.Error(err))
		_ = g.proc.Kill()
	}
}

// watch waits for the guard process. One that exits while the worker runs
// (killed by someone) is replaced, with back-off, and told every group
// registered; meanwhile a death of the worker would leave the tasks'
// children running, hence the error log.
func (g *Guard) watch() {
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
		if !g.respawn() {
			return
		}
	}
}

// respawn starts a new guard process, retrying with back-off until it runs
// or Stop; false on Stop.
func (g *Guard) respawn() bool {
	delay := 100 * time.Millisecond
	for {
		p, ctl, err := spawn(g.ctx, g.exe)
		if err == nil {
			g.mu.Lock()
			if g.stopped {
				g.mu.Unlock()
				ctl.Close() // end of file: it exits at once
				_, _ = p.Wait()
				return false
			}
			g.proc, g.ctl, g.broken = p, ctl, false
			for pgid := range g.groups {
				g.send(int32(pgid))
			}
			n := len(g.groups)
			g.mu.Unlock()
			g.log.Info("task guard replaced", zap.Int("pid", p.Pid), zap.Int("groups", n))
			return true
		}
		g.log.Error("cannot start a task guard; retrying", zap.Duration("in", delay), zap.Error(err))
		t := time.NewTimer(delay)
		select {
		case <-g.ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// Stop closes the pipe, so the guard process SIGKILLs the groups still
// registered (none, after the executor stopped) and exits, and returns once
// it has been reaped and the watcher returned. A guard that does not exit
// within a few seconds is killed. Safe twice and before Start.
func (g *Guard) Stop() {
	g.stopOnce.Do(func() {
		g.mu.Lock()
		g.stopped = true
		if g.ctl != nil {
			g.ctl.Close()
			g.ctl = nil
		}
		started := g.started
		g.mu.Unlock()
		g.cancel()
		if !started {
			return
		}
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
			<-g.done
		}
	})
}
