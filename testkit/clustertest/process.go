package clustertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/beluga-scheduler/beluga/internal/lifeline"
)

// Role is what a process runs as.
type Role string

// Roles.
const (
	RoleMaster Role = "master"
	RoleWorker Role = "worker"
	RoleAPI    Role = "api"
)

// stopGrace bounds a graceful Stop before it turns into SIGKILL.
const stopGrace = 20 * time.Second

// Process is one `beluga` child process. It keeps its flags, address and
// directory across restarts; its output (stdout and stderr, every run) is
// appended to LogPath. All methods are safe for concurrent use.
type Process struct {
	Name string // "master-1", "worker-2", "api"
	Role Role
	Addr string // listen address: RPC for masters and workers, HTTP for the api
	// Host is the address a master or worker is advertised at (its --host),
	// which the cluster view shows: Addr unless Options.Via reroutes it.
	Host string
	// MetricsAddr serves a master's or worker's /metrics (the api's is on Addr).
	MetricsAddr string
	Dir         string // working and data directory
	LogPath     string

	bin  string
	args []string
	cred *syscall.Credential // Options.Users: the OS user it runs as; nil: the test's

	mu      sync.Mutex
	env     []string // KEY=VALUE added to the cleaned environment at each start
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the running process has been reaped
	exitErr error
	running bool
	paused  bool
	starts  int
}

// SetEnv replaces the extra environment ("KEY=VALUE") given to the
// process from its next start on, e.g. to arm or disarm BELUGA_FAILPOINT.
func (p *Process) SetEnv(kv ...string) {
	p.mu.Lock()
	p.env = append([]string(nil), kv...)
	p.mu.Unlock()
}

// start launches the process; it does not wait for it to serve.
func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return nil
	}
	out, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.starts++
	fmt.Fprintf(out, "=== clustertest: start #%d of %s at %s: beluga %s (env %v)\n",
		p.starts, p.Name, time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "), p.env)
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.Dir
	cmd.Env = append(append(cleanEnv(), isolationOff), p.env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childAttr()
	cmd.SysProcAttr.Credential = p.cred
	if err := lifeline.Start(cmd); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		out.Close()
		p.mu.Lock()
		p.exitErr, p.running, p.paused = err, false, false
		p.mu.Unlock()
		close(exited)
	}()
	p.cmd, p.exited, p.exitErr, p.running, p.paused = cmd, exited, nil, true, false
	return nil
}

// isolationOff keeps tasks as the worker's user: tests' tasks share marker
// and gate files with the test. A test of isolation gives
// BELUGA_WORKER_TASK_ISOLATION=on in Options.Env (a later entry wins).
const isolationOff = "BELUGA_WORKER_TASK_ISOLATION=off"

// cleanEnv is the test's environment without BELUGA_* settings, so that
// nothing set in the developer's shell (a failpoint, a database) leaks into
// the cluster.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BELUGA_") {
			out = append(out, kv)
		}
	}
	return out
}

// Pid is the process id of the current run, 0 when not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the process was started and has not been reaped
// (a paused process is running).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// Paused reports whether the process is stopped by Pause.
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running && p.paused
}

// Kill9 kills the process with SIGKILL and waits until it is reaped.
func (p *Process) Kill9() {
	p.mu.Lock()
	if !p.running {
		p.mu.Unlock()
		return
	}
	exited := p.exited
	_ = p.cmd.Process.Signal(syscall.SIGKILL) // os.Process never signals a reaped pid
	p.mu.Unlock()
	<-exited
}

// Stop asks the process to shut down (SIGTERM) and waits for it to exit,
// killing it after 20 s. It returns the exit error of a process that did
// not exit cleanly.
func (p *Process) Stop() error {
	p.mu.Lock()
	if !p.running {
		p.mu.Unlock()
		return nil
	}
	proc, exited, paused := p.cmd.Process, p.exited, p.paused
	_ = proc.Signal(syscall.SIGTERM)
	if paused {
		_ = proc.Signal(syscall.SIGCONT) // a stopped process handles SIGTERM once continued
	}
	p.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(stopGrace):
		p.Kill9()
		return fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.Name, stopGrace)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Pause freezes the process (SIGSTOP): its sockets stay open but it does
// nothing, as a long GC pause or a VM freeze would. It returns once every
// thread is stopped.
func (p *Process) Pause() { p.signal(syscall.SIGSTOP, true) }

// Resume continues a paused process (SIGCONT) and returns once no thread
// is stopped any more.
func (p *Process) Resume() { p.signal(syscall.SIGCONT, false) }

func (p *Process) signal(sig syscall.Signal, pause bool) {
	p.mu.Lock()
	if !p.running {
		p.mu.Unlock()
		return
	}
	_ = p.cmd.Process.Signal(sig)
	p.paused = pause
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	waitThreads(pid, pause)
}

// waitThreads waits (up to 5 s) until every thread of pid is stopped, or
// none is: the kernel stops and continues the threads of a process one by
// one, and a thread still running could still send a frame.
func waitThreads(pid int, stopped bool) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return // gone
		}
		done := true
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
			if err != nil {
				continue // the thread exited
			}
			st := string(b)
			i := strings.LastIndexByte(st, ')')
			if i < 0 || i+2 >= len(st) {
				continue
			}
			if isStopped := st[i+2] == 'T' || st[i+2] == 't'; isStopped != stopped {
				done = false
				break
			}
		}
		if done {
			return
		}
		time.Sleep(5 * time.Millisecond) // nothing to wait on but /proc
	}
}

// MoveTo makes the process listen on addr from its next start on (a
// worker restarted on another port). It does not restart it.
func (p *Process) MoveTo(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 0; i+1 < len(p.args); i++ {
		if p.args[i] == "--listen" {
			p.args[i+1] = addr
		}
	}
	if p.Host == p.Addr {
		p.Host = addr
	}
	p.Addr = addr
}

// AddArgs appends flags to the process's from its next start on (the
// later of two equal flags wins), e.g. --zk through a zktest.Proxy made
// once the cluster runs. It does not restart it.
func (p *Process) AddArgs(extra ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = append(p.args, extra...)
}

// Args are the command-line arguments the process starts with.
func (p *Process) Args() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.args...)
}

// Restart stops the process if it runs (gracefully, see Stop) and starts
// it again with the same flags, address and directory. It does not wait
// for the process to serve: use Cluster.WaitReady or a condition.
func (p *Process) Restart() error {
	_ = p.Stop() // an unclean exit of the old run is not this run's failure
	return p.start()
}

// Wait waits until the last run exits and returns its exit error (nil for
// status 0, an *exec.ExitError otherwise), or an error when it still runs
// after within.
func (p *Process) Wait(within time.Duration) error {
	p.mu.Lock()
	if p.starts == 0 {
		p.mu.Unlock()
		return errors.New(p.Name + " was never started")
	}
	exited := p.exited
	p.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(within):
		return fmt.Errorf("%s still runs after %v", p.Name, within)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Log returns the whole log of the process (all runs).
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// LogMark is the current length of the log, to read what comes after it
// with LogSince.
func (p *Process) LogMark() int64 {
	st, err := os.Stat(p.LogPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

// LogSince returns the log written after mark.
func (p *Process) LogSince(mark int64) string {
	b, _ := os.ReadFile(p.LogPath)
	if mark > int64(len(b)) {
		return ""
	}
	return string(b[mark:])
}

// LogTail returns the last n lines of the log.
func (p *Process) LogTail(n int) string { return tail(p.Log(), n) }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
