package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/internal/lifeline"
	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/worker/cgroup"
)

type evKind uint8

const (
	evStarted     evKind = iota // pid known
	evStartFailed               // no process: dirs, log file or exec failed
	evExited                    // process reaped
)

// procEvent goes from a process waiter to the owner.
type procEvent struct {
	id   int64
	kind evKind
	pid  int
	at   time.Time
	code int   // exit code, 128+signal when killed by a signal
	err  error // evStartFailed, or a failed wait
	// evExited: the values the task exported, or msg saying why the run
	// failed when the process did not (bad outputs, an in-process error).
	outputs map[string]string
	msg     string
}

// launch is everything a waiter needs; it never touches owner state.
type launch struct {
	id      int64
	path    string // the program: argv[0] resolved
	argv    []string
	env     []string
	dir     string
	logPath string
	secrets []string  // values masked in the log (secretValues)
	cgroup  string    // the task's cgroup name under Config.Cgroups
	tenant  *tenant   // the OS user to run as; nil: the worker's
	slot    *slotUser // the task's own user (tenant is its): given back at the end
	// child: the task is a Child type's, this binary re-executed (child.go);
	// job is what its Input reads.
	child *tasktype.Child
	job   tasktype.Job
}

// runProcess is the one goroutine per task: it creates the work dir and log
// file, starts `<shell> -c <command>` in its own process group, and waits for
// it. The work dir is kept after the task (outputs and debugging; a retention
// purge's runs lose theirs at the worker's log sweep, worker/logsweep.go).
//
// Pdeathsig kills the shell when the OS thread that forked it exits: every
// task is forked on a thread that lives as long as the worker process
// (internal/lifeline's, or the sandbox's forking threads).
func (e *Executor) runProcess(l launch) {
	defer e.waiters.Done()
	var cp *childPipes
	if l.child != nil {
		var err error
		if cp, err = e.childInput(&l); err != nil {
			e.childRefused(l, err)
			return
		}
	}
	p, cg, out, err := e.startProcess(l, cp)
	at := time.Now()
	if err != nil {
		e.endSlot(l, killSlot(l))
		e.procCh <- procEvent{id: l.id, kind: evStartFailed, at: at, err: err}
		return
	}
	if g := e.cfg.Guard; g != nil {
		// As early as possible: the worker may die from now on. The pid
		// cannot be reused before Wait reaps it, so no other group is named.
		g.Add(p.Pid)
	}
	e.procCh <- procEvent{id: l.id, kind: evStarted, pid: p.Pid, at: at}
	// Nothing the task started outlives it (see leftovers.go): its cgroup
	// and its group die while the shell's pid is still reserved, then its
	// orphans.
	exited := waitExited(p.Pid) == nil
	var left []int    // the task's processes when its shell exited
	var cgPath string // its cgroup as /proc names it; read from the unreaped shell
	if exited {
		if cg != nil {
			if left = cg.Members(); len(left) > 0 {
				cgPath, _ = cgroup.ProcPath(p.Pid)
			}
			cg.Kill()
		}
		killGroup(p.Pid, syscall.SIGKILL)
	}
	ps, err := p.Wait()
	shells.Delete(p.Pid)
	// The task's own user: every process of it dies here, also one that
	// left the group and cleared its environment; the sweep reaps them.
	killed := killSlot(l)
	killOrphans(scopeOf(l.env), uidOf(l))
	if exited {
		reapGroup(p.Pid)
	}
	if cg != nil {
		e.endCgroup(cg, cgPath, left)
	}
	out.finish()
	ev := procEvent{id: l.id, kind: evExited, at: time.Now(), code: -1, err: err}
	if err == nil {
		ev.code = exitCode(ps)
	}
	if cp != nil {
		cp.outcome(&ev)
	} else if ev.code == 0 {
		// Its exports: stdout's setValue lines, then $BELUGA_OUTPUT's.
		vals, oerr := out.log.out.vals, out.log.out.err
		if oerr == nil {
			oerr = readOutputFile(filepath.Join(l.dir, outputFile), &vals)
		}
		if oerr != nil {
			ev.code, ev.msg = 1, oerr.Error()
		} else {
			ev.outputs = vals
		}
	}
	if l.tenant == nil {
		e.spares.recycle(l.dir) // only if the task left nothing in it
	}
	e.endSlot(l, killed)
	e.procCh <- ev
}

// endSlot gives a task's own user back once nothing of the task is left:
// its processes killed (killed: how that went; those that left its group
// and cgroup too), its work dir back in the user's pool if the task left it
// as it got it, else handed to the worker (0700), out of the reach of the
// user's next task.
func (e *Executor) endSlot(l launch, killed error) {
	if l.slot == nil {
		return
	}
	if killed != nil {
		// The user may still run something of this task: never again.
		e.log.Error("task user retired: its processes could not be killed", zap.String("user", l.slot.t.name), zap.Error(killed))
		return
	}
	if !e.spares.recycleInto(l.slot.dirs, l.dir, l.slot.t.uid) {
		if err := handBack(l.dir); err != nil && !os.IsNotExist(err) {
			e.log.Error("task user retired: its task's work dir could not be handed back", zap.String("user", l.slot.t.name),
				zap.String("dir", l.dir), zap.Error(err))
			return
		}
	}
	e.users.put(l.slot)
}

// killSlot SIGKILLs every process of the task's own user (none: nil).
func killSlot(l launch) error {
	if l.slot == nil {
		return nil
	}
	return killUID(l.slot.t.uid)
}

// uidOf is the uid of the task's own user (-1: none).
func uidOf(l launch) int {
	if l.slot == nil {
		return -1
	}
	return l.slot.t.uid
}

// handBack makes a finished task's work dir the worker's, 0700: kept for
// outputs and debugging, out of reach of the task user's later tasks.
func handBack(dir string) error {
	if err := os.Lchown(dir, os.Geteuid(), os.Getegid()); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

func (e *Executor) startProcess(l launch, cp *childPipes) (_ *os.Process, _ *cgroup.Task, _ *logCopy, _ error) {
	// One task at a time creates its directories and log: creations in one
	// directory from many threads while tasks fork cost several times more
	// CPU in the kernel than the same creations in a row (measured with the
	// fanout benchmark: 1.7 ms -> 0.8 ms of worker CPU per task at 32 slots).
	e.fsMu.Lock()
	_, err := e.prepareFS(l, false) // the log is opened at the first output (emptylog.go)
	e.fsMu.Unlock()
	if err != nil {
		return nil, nil, nil, err
	}
	// Output goes through pipes, so that the log can be capped; one for
	// stdout and one for stderr, so that the log can tell them apart
	// (tasklog.go).
	outR, outW, err := logPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	errR, errW, err := logPipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, err
	}
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	open := func() (*os.File, error) { return e.openLogForOutput(l.logPath) }
	c, err := newCopy(outR, errR, open, l.logPath, l.secrets, e.cfg.MaxLogBytes)
	if err != nil {
		closeAll(outR, outW, errR, errW)
		return nil, nil, nil, err
	}
	sys := &syscall.SysProcAttr{
		Setpgid:   true, // the task and its children form one killable group
		Pdeathsig: syscall.SIGKILL,
	}
	if l.tenant != nil {
		sys.Credential = l.tenant.cred
	}
	var cg *cgroup.Task
	if e.cgroups != nil && l.cgroup != "" {
		if cg, err = e.cgroups.NewTask(l.cgroup); err != nil {
			closeAll(outR, outW, errR, errW)
			return nil, nil, nil, err
		}
		// Born in its cgroup (clone3 CLONE_INTO_CGROUP): nothing it forks
		// can be outside it, not even between fork and a move.
		sys.UseCgroupFD, sys.CgroupFD = true, cg.FD()
	}
	files := []*os.File{e.devNull, outW, errW}
	if cp != nil {
		files = cp.files(outW, errW)
	}
	fork := func() (*os.Process, error) {
		return os.StartProcess(l.path, l.argv, &os.ProcAttr{
			Dir:   l.dir,
			Env:   l.env,
			Files: files,
			Sys:   sys,
		})
	}
	var p *os.Process
	if e.sandbox != nil && l.tenant != nil {
		groupWrite := l.slot != nil || l.tenant == e.taskUser
		p, err = e.sandbox.start(l.dir, l.slot != nil && e.sandbox.shared >= 0, groupWrite, fork)
	} else {
		lifeline.Do(func() { p, err = fork() })
	}
	closeAll(outW, errW) // the child has its own copies
	if cp != nil {
		cp.started(err == nil)
	}
	if cg != nil {
		cg.CloseFD()
	}
	if err != nil {
		closeAll(outR, errR)
		if cg != nil {
			_ = cg.Remove(time.Second) // empty: nothing started in it
		}
		return nil, nil, nil, fmt.Errorf("start %s: %w", l.argv[0], err)
	}
	shells.Store(p.Pid, struct{}{})
	c.start()
	return p, cg, c, nil
}

// prepareFS creates the task's work dir and its log, and hands the dir
// over to the task's tenant if it has one: the one place both kinds of task
// (a process, an in-process type) get their files. With open, the log is
// returned open for appending (in-process types write it directly);
// without, it only exists, as a link to the empty file where it can be.
func (e *Executor) prepareFS(l launch, open bool) (*os.File, error) {
	// The task user's dir comes from its own pool (spare.go), owned
	// already: no chown on the task's start path.
	dirOwned, err := e.prepareDirs(l)
	if err != nil {
		return nil, err
	}
	if l.tenant != nil {
		if err := l.tenant.own(l.dir, dirOwned); err != nil {
			return nil, err
		}
	}
	// The log is the worker's whoever the task runs as (logMode).
	if !open {
		if err := e.placeLog(l.logPath); err != nil {
			return nil, fmt.Errorf("open log: %w", err)
		}
		return nil, nil
	}
	f, err := e.spares.openLog(l.logPath)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// prepareDirs creates the task's work dir and its log's directory; owned:
// the work dir came from a pool of dirs its user owns already (the task
// user's, or the task's own user's).
func (e *Executor) prepareDirs(l launch) (owned bool, err error) {
	// The per-workflow parents exist after a workflow's first task: a
	// stat. Entered, never listed, as the work dirs' root.
	if err := os.MkdirAll(filepath.Dir(l.dir), 0o711); err != nil {
		return false, fmt.Errorf("create work dir: %w", err)
	}
	switch {
	case l.slot != nil:
		if owned = e.spares.take(l.slot.dirs, l.dir); !owned {
			err = e.spares.makeDir(l.dir)
		}
	case l.tenant != nil && l.tenant == e.taskUser:
		owned, err = e.spares.makeUserDir(l.dir)
	default:
		err = e.spares.makeDir(l.dir)
	}
	if err != nil {
		return false, fmt.Errorf("create work dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(l.logPath), 0o755); err != nil {
		return false, fmt.Errorf("create log dir: %w", err)
	}
	return owned, nil
}

// exitCode follows the shell convention: 128+n for a death by signal n.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// killGroup signals the process group led by pid. Errors are ignored: ESRCH
// means the group is gone already, which is what the caller wants.
func killGroup(pid int, sig syscall.Signal) {
	if pid <= 0 {
		return // never kill(0) or kill(-1): that would hit the worker itself
	}
	_ = syscall.Kill(-pid, sig)
}

// groupAlive reports whether process group pgid still has a member that is
// not a zombie. Orphaned zombies stay members until init reaps them, and some
// inits never do, so kill(-pgid, 0) alone cannot tell; /proc can.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false // no /proc: trust the SIGKILL
	}
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		if g, alive := procfs.Group(pid); alive && g == pgid {
			return true
		}
	}
	return false
}

// taskEnv is the worker's allowed environment (allowedEnv) overlaid with the dispatch's params and
// the BELUGA_* variables; a name appears once, the overlay winning.
// The params themselves (BELUGA_TASK_* among them) are resolved by the
// master in one place (common/params.ForTask); the worker adds only what is
// about the process here: its scope and its output file.
func (e *Executor) taskEnv(t *task) []string {
	d := t.d
	over := make(map[string]string, len(d.Env)+2)
	for k, v := range d.Env {
		over[k] = v
	}
	over[scopeEnv] = e.taskScope(d.TaskInstanceID, d.Attempt)
	over[outputEnv] = filepath.Join(t.dir, outputFile)
	env := make([]string, 0, len(e.baseEnv)+len(over))
	for _, kv := range e.baseEnv {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := over[name]; !ok {
			env = append(env, kv)
		}
	}
	for k, v := range over {
		env = append(env, k+"="+v)
	}
	return env
}

// taskEnvNames are the worker's variables every task sees. Nothing else of
// the worker's environment reaches a task unless passed through by name:
// the worker's own environment holds its secrets (BELUGA_DB, cloud keys).
var taskEnvNames = []string{"PATH", "HOME", "LANG", "TZ", "USER"}

// allowedEnv keeps the entries of environ named in taskEnvNames or in
// passthrough, in environ's order.
func allowedEnv(environ, passthrough []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if slices.Contains(taskEnvNames, name) || slices.Contains(passthrough, name) {
			out = append(out, kv)
		}
	}
	return out
}
