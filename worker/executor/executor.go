// Package executor runs a worker's task instances: a FIFO queue in front of a
// fixed number of slots, one shell process group per task, and the ack,
// running and result reports that are re-sent to the master until it answers
// with a DB-ack.
//
// A dispatched task is admitted to the queue only once the master DB-acks its
// ack. The master answers the ack of a dispatch it took back (a failed send it
// retried elsewhere, a stale leader's) with a DB-ack carrying Kill, so such a
// task never runs: the DB alone decides where a task runs.
//
// One goroutine (the owner, loop) holds all mutable state: tasks, queue,
// pending reports, deadlines. Callers, process waiters and the report sender
// talk to it through channels only.
package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/worker/cgroup"
)

// Sender delivers a report to a master address. remote.Client implements it.
// It may block (dialing); the executor calls it from its own sender goroutine
// and cancels ctx on Stop.
type Sender interface {
	Send(ctx context.Context, addr string, m message.Message) error
}

// Config tunes an Executor. Zero values pick the defaults noted.
type Config struct {
	Host          string // advertised worker address put in every report; required
	Master        string // initial master address for dispatches that carry none
	Slots         int    // concurrent processes; default 2*runtime.NumCPU()
	Shell         string // "bash" (default) or "sh"; tasks run as `<shell> -c <command>`
	Python        string // interpreter of python tasks; default python3
	SecretKeyFile string // key file that opens datasource passwords (sql tasks); "" none
	// ProtectedDirs are the server's own dirs (besides DataDir and the key
	// file) that no task's datasource may open (sql tasks).
	ProtectedDirs  []string
	DataDir        string        // work dirs and logs live under it; default <tmp>/beluga-worker
	ResendInterval time.Duration // re-send period of un-DB-acked reports; default 1s
	KillGrace      time.Duration // SIGTERM to SIGKILL delay; default 2s
	// RunningDelay is how long a started task runs before its Running
	// report goes out; a task that ends sooner sends only its Result, which
	// carries the start time and pid too (one report, one DB write and a
	// frame each way fewer for short tasks). Default DefaultRunningDelay;
	// negative: at once.
	RunningDelay time.Duration
	// EnvPassthrough names the worker's environment variables tasks see
	// besides PATH, HOME, LANG, TZ and USER (see allowedEnv).
	EnvPassthrough []string
	// MaxLogBytes caps a task's log file; past it the output is discarded
	// after a marker line. Default 1 GiB.
	MaxLogBytes int64
	// Remembered is how many finished tasks are remembered for duplicate
	// detection and log look-up after their reports are DB-acked; default 10000.
	Remembered int
	// Guard, when set, is told of every task process group while its shell
	// runs, so that the groups die with the worker (worker/guard).
	Guard Guard
	// Cgroups, when set, gives each process task a cgroup v2 group of its
	// own under it (task-<id>-<attempt>), killed and removed at the task's
	// end: what the task started cannot outlive it, environment cleared or
	// not. Nil: the child subreaper alone (leftovers.go).
	Cgroups *cgroup.Dir
	// TaskUser is the OS user of the tasks that name no tenant when the
	// worker runs as root (made at start when missing); default
	// DefaultTaskUser. A task never runs as the worker's own user then.
	TaskUser string
	// Hide are directories no task may see besides DataDir (a
	// standalone's data dir: its DB and keys); see sandbox.go.
	Hide []string
	// TaskIsolation is "on" (as root: TaskUser and a sandbox) or "off":
	// tasks run as the worker's own user, as before isolation existed, for
	// test harnesses whose tasks share files with the test and for
	// single-user hosts; the worker says so at start and in /healthz.
	// "": the environment's TaskIsolationEnv, else "on".
	TaskIsolation string

	// sameUser keeps tasks as the worker's user even as root: tests of
	// what only such tasks get (a recycled work dir, the shared empty log,
	// a task reading its own log).
	sameUser bool
	// oneTaskUser runs every task without a tenant as TaskUser itself, as
	// when no user of its own is free: tests of that path.
	oneTaskUser bool
}

// TaskIsolationEnv names the variable that sets Config.TaskIsolation when
// the config leaves it empty.
const TaskIsolationEnv = "BELUGA_WORKER_TASK_ISOLATION"

// Isolation says how this executor keeps tasks from the worker and from
// each other (GET /healthz shows it; docs/security.md).
type Isolation struct {
	// TaskUser runs the tasks that name no tenant; "" when the worker
	// cannot switch users (not root): tasks run as the worker's user.
	TaskUser string `json:"task_user,omitempty"`
	// Sandbox: each task has a mount namespace hiding the data dirs and a
	// /proc hiding other users' processes.
	Sandbox bool `json:"sandbox"`
	// Warning says what a task can reach when isolation is short.
	Warning string `json:"warning,omitempty"`
	// RunsAsServer: isolation is on but the worker is not root, so tasks
	// run as its own user with no sandbox (see RunsAsServer).
	RunsAsServer bool `json:"runs_as_server,omitempty"`
}

// RunsAsServer says whether tasks of a worker with this TaskIsolation
// ("" as in Config) would run as the worker's own OS user for want of
// privilege: isolation is on and the process is not root. Then an admin
// decides whether non-admins may run code-executing tasks at all
// (docs/security.md, item 1); isolation off is an operator's choice that
// every user is trusted, and root always switches users.
func RunsAsServer(taskIsolation string) bool {
	if taskIsolation == "" {
		taskIsolation = os.Getenv(TaskIsolationEnv)
	}
	return taskIsolation != "off" && os.Geteuid() != 0
}

// Guard is told of every task process group while its leader runs. Add
// comes right after the shell started; Remove once the shell was reaped
// and, for a killed task, the group SIGKILLed. Remove runs on the owner
// goroutine: both must be quick.
type Guard interface {
	Add(pgid int)
	Remove(pgid int)
}

// Stats is a snapshot of the executor's load.
type Stats struct {
	Running int // processes starting or running (slots in use)
	// Queued counts accepted tasks not started yet: those waiting for a slot
	// and those awaiting admission (their ack not DB-acked yet). Both are
	// work the master gave this worker, so both weigh in its load.
	Queued   int
	Capacity int // slots
}

// ErrStopped is returned by Start after Stop.
var ErrStopped = errors.New("executor: stopped")

// Executor runs task instances. Create it with New.
type Executor struct {
	cfg       Config
	shellPath string
	paths     map[string]string // argv[0] -> its path, looked up once (owner goroutine)
	typeCfg   map[string]string // worker settings task types read (tasktype.Job.Config)
	baseEnv   []string
	scopeID   int64 // this executor's number in its tasks' scopes
	logDir    string
	workDir   string
	log       *zap.Logger
	sender    Sender
	cgroups   *cgroup.Dir // cfg.Cgroups
	taskUser  *tenant     // tasks without a tenant (root only); nil: the worker's user
	sandbox   *sandbox    // nil: none (see Isolation)
	users     *taskUsers  // a user per running task without a tenant; nil: none (taskusers.go)
	self      *os.File    // this binary, for Child types (child.go); nil: see selfErr
	selfErr   error
	isolation Isolation

	reqCh  chan func()    // closures run by the owner goroutine
	procCh chan procEvent // process waiters -> owner
	sendCh chan outMsg    // owner -> sender goroutine

	life   startstop.Base  // Start once; owns the owner, sender and refiller goroutines
	stopCh <-chan struct{} // closed by Stop: the owner begins shutting down; owner goroutine only

	started    atomic.Bool
	ownerDone  chan struct{} // closed when the owner goroutine returned
	senderDone chan struct{}
	cancelSend context.CancelFunc
	waiters    sync.WaitGroup // process waiter goroutines
	devNull    *os.File       // stdin of every task
	spares     *spares
	fsMu       sync.Mutex // serializes task file-system set-up (see startProcess)
	empty      *emptyLog  // the log of tasks without output (emptylog.go); nil: none
	stopSpares context.CancelFunc

	load atomic.Uint64 // mirror of owner state for Stats: packLoad(running, queued)

	st state // owned by the owner goroutine only
}

// New checks cfg and returns an executor; Start runs it.
func New(cfg Config, sender Sender, log *zap.Logger) (*Executor, error) {
	if sender == nil {
		return nil, errors.New("executor: nil sender")
	}
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.Host == "" {
		return nil, errors.New("executor: config Host is empty")
	}
	cfg, shellPath, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if err := becomeSubreaper(); err != nil {
		log.Warn("not a child subreaper: processes that leave a task's group can outlive it", zap.Error(err))
	}
	e := &Executor{
		cfg:       cfg,
		shellPath: shellPath,
		paths:     map[string]string{cfg.Shell: shellPath},
		typeCfg: map[string]string{"shell": cfg.Shell, "python": cfg.Python, "secret_key_file": cfg.SecretKeyFile,
			"protected_paths": strings.Join(append([]string{cfg.DataDir, cfg.SecretKeyFile}, cfg.ProtectedDirs...), string(os.PathListSeparator))},
		baseEnv:    allowedEnv(os.Environ(), cfg.EnvPassthrough),
		scopeID:    executors.Add(1),
		logDir:     LogDir(cfg.DataDir),
		workDir:    filepath.Join(cfg.DataDir, "work"),
		log:        log,
		sender:     sender,
		cgroups:    cfg.Cgroups,
		reqCh:      make(chan func()),
		procCh:     make(chan procEvent, 64),
		sendCh:     make(chan outMsg),
		ownerDone:  make(chan struct{}),
		senderDone: make(chan struct{}),
	}
	e.life.Name, e.life.Log = "executor", log
	// Stop waits for KillGrace, then for killed groups (awaitGroups): the
	// bound covers both.
	e.life.StopTimeout = startstop.DefaultStopTimeout + 2*cfg.KillGrace
	e.spares = newSpares(filepath.Join(cfg.DataDir, ".spare"), min(max(cfg.Slots, 4), 64), cfg.Slots, log)
	e.st.init(cfg)
	return e, nil
}

// DefaultRunningDelay is Config.RunningDelay when 0: a short task (most
// of a fan-out's) reports only its Result, while a task still running
// after it shows as running with a lag nobody sees.
const DefaultRunningDelay = 50 * time.Millisecond

// DefaultMaxLogBytes caps a task's log when Config.MaxLogBytes is 0.
const DefaultMaxLogBytes = 1 << 30

// LogDir is the directory under dataDir holding every task log.
func LogDir(dataDir string) string { return filepath.Join(dataDir, "logs") }

// WithDefaults returns c with defaults filled in and DataDir made absolute,
// or an error naming the first bad field. Host is not checked: a worker
// learns its address only once listening.
func (c Config) WithDefaults() (Config, error) {
	c, _, err := c.normalize()
	return c, err
}

func (c Config) normalize() (Config, string, error) {
	if c.Slots < 0 {
		return c, "", fmt.Errorf("executor: config Slots %d is negative", c.Slots)
	}
	if c.Slots == 0 {
		c.Slots = 2 * runtime.NumCPU()
	}
	if c.Shell == "" {
		c.Shell = "bash"
	}
	if c.Python == "" {
		c.Python = "python3"
	}
	if c.Shell != "bash" && c.Shell != "sh" {
		return c, "", fmt.Errorf("executor: config Shell %q: want bash or sh", c.Shell)
	}
	// Resolved once: a per-task PATH lookup would cost a few stat calls each.
	shellPath, err := exec.LookPath(c.Shell)
	if err != nil {
		return c, "", fmt.Errorf("executor: shell %q: %w", c.Shell, err)
	}
	if c.DataDir == "" {
		c.DataDir = filepath.Join(os.TempDir(), "beluga-worker")
	}
	// Absolute, so log paths handed to the master stay valid whatever the
	// worker's current directory, and LogRequest paths can be checked.
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return c, "", fmt.Errorf("executor: config DataDir: %w", err)
	}
	if c.ResendInterval < 0 || c.KillGrace < 0 || c.Remembered < 0 {
		return c, "", errors.New("executor: config ResendInterval, KillGrace and Remembered must not be negative")
	}
	if c.ResendInterval == 0 {
		c.ResendInterval = time.Second
	}
	if c.KillGrace == 0 {
		c.KillGrace = 2 * time.Second
	}
	if c.RunningDelay == 0 {
		c.RunningDelay = DefaultRunningDelay
	}
	if c.Remembered == 0 {
		c.Remembered = 10000
	}
	if c.MaxLogBytes < 0 {
		return c, "", fmt.Errorf("executor: config MaxLogBytes %d is negative", c.MaxLogBytes)
	}
	if c.MaxLogBytes == 0 {
		c.MaxLogBytes = DefaultMaxLogBytes
	}
	if c.TaskUser == "" {
		c.TaskUser = DefaultTaskUser
	}
	if c.TaskIsolation == "" {
		c.TaskIsolation = os.Getenv(TaskIsolationEnv)
	}
	if c.TaskIsolation == "" {
		c.TaskIsolation = "on"
	}
	if c.TaskIsolation != "on" && c.TaskIsolation != "off" {
		return c, "", fmt.Errorf("executor: config TaskIsolation %q: want on or off", c.TaskIsolation)
	}
	return c, shellPath, nil
}

// Start creates the data directories and starts the owner and sender
// goroutines. ctx bounds start-up only; Stop ends the executor. A second
// Start is an error; so is a Start after Stop (ErrStopped).
func (e *Executor) Start(ctx context.Context) error {
	err := e.life.StartWith(context.WithoutCancel(ctx), func() error { return e.start(ctx) }, nil)
	if errors.Is(err, startstop.ErrStopped) {
		return ErrStopped
	}
	return err
}

func (e *Executor) start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, d := range []string{e.logDir, e.workDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("executor: create %s: %w", d, err)
		}
	}
	if err := e.isolate(); err != nil {
		return err
	}
	if err := e.spares.prepare(); err != nil {
		return fmt.Errorf("executor: spare dir: %w", err)
	}
	e.empty = newEmptyLog(e.logDir)
	if e.self, e.selfErr = openSelf(); e.selfErr != nil {
		e.log.Warn("tasks of types that run in a child process (sql) will fail", zap.Error(e.selfErr))
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return fmt.Errorf("executor: open %s: %w", os.DevNull, err)
	}
	e.devNull = devNull
	// The sender and the refiller run on their own contexts: they stop
	// after the owner, in the order Stop describes (see shutdown).
	sendCtx, cancel := context.WithCancel(context.Background())
	e.cancelSend = cancel
	e.life.Go(func(context.Context) { e.sendLoop(sendCtx) })
	spareCtx, cancel := context.WithCancel(context.Background())
	e.stopSpares = cancel
	e.life.Go(func(context.Context) { e.spares.run(spareCtx) })
	if e.users != nil {
		e.life.Go(func(context.Context) { e.users.fill(spareCtx) })
	}
	e.life.Go(func(ctx context.Context) {
		e.loop(ctx.Done())
		e.shutdown()
	})
	e.started.Store(true)
	return nil
}

// Stop shuts the executor down. Order:
//  1. stop accepting dispatches (the owner refuses them once stopCh is closed);
//  2. drop the queue and the tasks awaiting admission (none of them starts
//     any more, whatever DB-ack arrives), and send SIGTERM to every running
//     process group, SIGKILL after KillGrace;
//  3. wait until every task's shell is reaped (the owner returns when none is
//     live), then until the rest of each killed group is gone too;
//  4. stop the sender (reports still pending are abandoned), then the spare
//     refiller (it removes DataDir/.spare) and the task users' fill, whose
//     users are let go (no task of theirs is left).
//
// Tasks killed by Stop are not reported as results: the worker is leaving, its
// registry node goes with it, and the master's worker failover resubmits its
// unfinished tasks. A "killed" result would race that and read as an operator
// kill, failing the workflow instead of moving the task to another worker.
// Stop is safe to call twice and before Start.
//
// Stop is bounded (by KillGrace plus startstop.DefaultStopTimeout): past
// that it logs the goroutines still running and returns.
func (e *Executor) Stop() {
	_ = e.life.Stop(func() {
		if err := e.devNull.Close(); err != nil {
			e.log.Debug("close /dev/null", zap.Error(err))
		}
		if e.self != nil {
			e.self.Close()
		}
	})
}

// shutdown is steps 3 and 4 of Stop, on the owner's goroutine once its loop
// returned: the owner is gone, so its state is ours now.
func (e *Executor) shutdown() {
	e.waiters.Wait()
	e.awaitGroups(e.st.killedAtStop)
	e.cancelSend()
	<-e.senderDone
	e.stopSpares()
	<-e.spares.done
	e.users.close()
	if e.sandbox != nil {
		e.sandbox.close()
	}
}

// call runs f on the owner goroutine and waits for it. It returns false,
// without running f, when the owner is not running.
func (e *Executor) call(f func()) bool {
	if !e.started.Load() {
		return false
	}
	done := make(chan struct{})
	select {
	case e.reqCh <- func() { f(); close(done) }:
		<-done
		return true
	case <-e.ownerDone:
		return false
	}
}

// Dispatch accepts or refuses one task instance. An accepted task is acked to
// the master at once, the ack re-sent until DB-acked, and queued for a slot
// only once the master DB-acks it (see DBAck). A task id already known is not
// run twice: the reply accepts it as a duplicate and its un-acked reports
// (for a task awaiting admission, its ack) are re-sent at once.
func (e *Executor) Dispatch(d message.Dispatch) message.DispatchReply {
	if err := validate(d); err != nil {
		return message.DispatchReply{TaskInstanceID: d.TaskInstanceID, Reason: err.Error(), Invalid: true}
	}
	reply := refuse(d.TaskInstanceID, "worker is not running")
	e.call(func() { reply = e.dispatch(d) })
	return reply
}

// Kill kills a task's process group (a task queued or awaiting admission
// never starts) and reports it killed. Found is false for a task this
// executor does not know.
func (e *Executor) Kill(id int64, from ...zap.Field) message.KillResult {
	res := message.KillResult{TaskInstanceID: id}
	e.call(func() { res.Found = e.killRequest(id, from) })
	return res
}

// DBAck records that the master persisted a report. The first DB-ack of a
// task (of its ack, or of any later kind) admits it to the slot queue. With
// Kill set it kills and forgets the task without reporting (the master gave
// it to another worker); a task not admitted yet never starts.
func (e *Executor) DBAck(a message.DBAck) {
	e.call(func() { e.dbAck(a) })
}

// SetMaster sends the un-acked and future reports of every known task to
// addr (after a master failover).
func (e *Executor) SetMaster(addr string) {
	if addr == "" {
		return
	}
	e.call(func() { e.setMaster(addr) })
}

// Query returns the ids among ids that this executor holds: queued,
// awaiting admission, running, or ended with reports not yet DB-acked. A
// task taken over elsewhere is not held. A query from a newer term also
// redirects reports to that master, as a dispatch would.
func (e *Executor) Query(q message.Query) []int64 {
	var held []int64
	e.call(func() {
		if q.Epoch > e.st.epoch && q.MasterAddr != "" {
			e.st.epoch = q.Epoch
			e.setMaster(q.MasterAddr)
		}
		for _, id := range q.TaskInstanceIDs {
			t := e.st.tasks[id]
			if t == nil || t.kill.dropped() || (t.done && t.settled()) {
				continue
			}
			held = append(held, id)
		}
	})
	return held
}

// DropAll kills every task this executor holds (running, starting, queued
// or awaiting admission) and forgets them without reporting, as a DB-ack
// with Kill does for one task; it returns how many it dropped. Running
// groups get SIGKILL at once, not SIGTERM and KillGrace: the caller (the
// worker's registry presence) calls it when the master may already be
// running these tasks elsewhere. Tasks that ended keep re-sending their
// unacknowledged results, which are true.
func (e *Executor) DropAll(reason string) int {
	n := 0
	e.call(func() { n = e.dropAll(reason) })
	return n
}

// Instances returns the workflow instances of the tasks this executor
// holds (as Query counts them: not those ended and reported, nor dropped):
// the log sweep (worker/logsweep.go) never touches their log directories.
func (e *Executor) Instances() map[int64]bool {
	ids := map[int64]bool{}
	e.call(func() {
		for _, t := range e.st.tasks {
			if t.kill.dropped() || (t.done && t.settled()) {
				continue
			}
			ids[t.d.WorkflowInstanceID] = true
		}
	})
	return ids
}

// LogPath returns the log file of a known task.
func (e *Executor) LogPath(id int64) (string, bool) {
	var path string
	var ok bool
	e.call(func() {
		if t := e.st.tasks[id]; t != nil {
			path, ok = t.logPath, true
		}
	})
	return path, ok
}

// Stats returns the current load without waiting on the owner.
func (e *Executor) Stats() Stats {
	running, queued := unpackLoad(e.load.Load())
	return Stats{Running: running, Queued: queued, Capacity: e.cfg.Slots}
}

// packLoad puts both counters in one word; each is far below 2^32 (tasks
// are held in memory).
func packLoad(running, queued int) uint64 { return uint64(running)<<32 | uint64(uint32(queued)) }

func unpackLoad(v uint64) (running, queued int) { return int(v >> 32), int(uint32(v)) }

func refuse(id int64, reason string) message.DispatchReply {
	return message.DispatchReply{TaskInstanceID: id, Reason: reason}
}

// validate rejects dispatches that could not run or would build bad paths.
func validate(d message.Dispatch) error {
	if d.TaskInstanceID <= 0 {
		return fmt.Errorf("bad task_instance_id %d: want > 0", d.TaskInstanceID)
	}
	if d.WorkflowInstanceID < 0 {
		return fmt.Errorf("bad workflow_instance_id %d: want >= 0", d.WorkflowInstanceID)
	}
	def, ok := tasktype.Lookup(typeOf(d))
	if !ok || def.Placement != tasktype.Worker {
		return fmt.Errorf("task type %q is not one this worker runs (it runs: %s)", d.TaskType, strings.Join(workerTypes(), ", "))
	}
	if def.Command != nil && d.Command == "" {
		return errors.New("empty command")
	}
	if containsNUL(d.Command) {
		return errors.New("command contains a NUL byte")
	}
	if d.TimeoutMillis < 0 {
		return fmt.Errorf("bad timeout_ms %d: want >= 0", d.TimeoutMillis)
	}
	for k, v := range d.Env {
		if k == "" || containsNUL(k) || containsByte(k, '=') {
			return fmt.Errorf("bad env name %q", k)
		}
		if containsNUL(v) {
			return fmt.Errorf("env %s: value contains a NUL byte", k)
		}
	}
	return nil
}

// typeOf is the dispatch's task type; none is shell.
func typeOf(d message.Dispatch) string {
	if d.TaskType == "" {
		return "shell"
	}
	return d.TaskType
}

func workerTypes() []string {
	var out []string
	for _, n := range tasktype.Names() {
		if def, _ := tasktype.Lookup(n); def.Placement == tasktype.Worker {
			out = append(out, n)
		}
	}
	return out
}

func containsNUL(s string) bool { return containsByte(s, 0) }

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

// awaitGroups waits, boundedly, until the killed process groups are empty.
// Their shells are reaped already and the survivors got SIGKILL, so this is
// the kernel finishing delivery; a process stuck in uninterruptible sleep is
// logged, not waited for forever.
func (e *Executor) awaitGroups(pgids []int) {
	deadline := time.Now().Add(e.cfg.KillGrace + 5*time.Second)
	for _, g := range pgids {
		for groupAlive(g) {
			if time.Now().After(deadline) {
				e.log.Warn("process group still alive after SIGKILL", zap.Int("pgid", g))
				break
			}
			killGroup(g, syscall.SIGKILL)
			time.Sleep(5 * time.Millisecond)
		}
	}
}
