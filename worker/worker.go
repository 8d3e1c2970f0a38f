// Package worker is Beluga's worker process: it accepts task dispatches from
// the active master over the remote transport, runs them in its executor, and
// reports ack, running and result back until the master DB-acks them.
//
// The worker listens with a remote.Server (dispatch, kill, log requests, ping)
// and reports through a remote.Client; DB-acks come back as pushes on the
// client's connection, so one Handler serves both. A Presence (presence.go)
// keeps it in the registry, following the elected master and dropping its
// tasks when its registry session is lost; a task guard (package
// worker/guard) makes the tasks' process groups die with the worker process.
package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/worker/cgroup"
	"github.com/beluga-scheduler/beluga/worker/executor"
	"github.com/beluga-scheduler/beluga/worker/guard"
)

// Config configures a Worker. Zero values pick the defaults noted.
type Config struct {
	Listen  string   // gnet listen address, e.g. "0.0.0.0:5679"; "127.0.0.1:0" allowed
	Host    string   // advertised address; default the bound address (a local IP for 0.0.0.0)
	Groups  []string // worker groups; default ["default"]
	Slots   int      // concurrent tasks; default 2*runtime.NumCPU(); more are queued
	Shell   string   // "bash" (default) or "sh"; tasks run as `<shell> -c <command>`
	Python  string   // interpreter of python tasks; default python3
	DataDir string   // DataDir/work/<wf>/<task>/ and DataDir/logs/<wf>/<task>.log; default <tmp>/beluga-worker
	// SecretKeyFile opens the datasource passwords of sql tasks; "": sql
	// tasks on datasources with a password fail, saying so.
	SecretKeyFile string
	// ProtectedDirs are the server's own dirs (a standalone's data dir)
	// that no sql task's datasource may open; DataDir always is one.
	ProtectedDirs []string
	// ResendInterval is the re-send period of reports not DB-acked; default 1s.
	ResendInterval time.Duration
	// KillGrace is the wait between SIGTERM and SIGKILL of a task's process
	// group; default 2s.
	KillGrace time.Duration
	// RunningDelay holds a task's Running report until it has run this
	// long (a shorter task sends only its Result); default
	// executor.DefaultRunningDelay, negative: at once.
	RunningDelay time.Duration
	// TaskGuard chooses how task process groups die with the worker (see
	// package worker/guard): GuardAuto (default) uses a guard process when
	// the binary can run one (its main calls MaybeRunGuard), else runs
	// without and says so; GuardOn requires it (Start fails without);
	// GuardOff runs without: a worker killed with SIGKILL then leaves its
	// tasks' children running (their shells still die).
	TaskGuard string
	// CgroupDir is a cgroup2 directory the worker creates its own cgroup
	// in (beluga-<pid>, holding a cgroup per task: see worker/cgroup):
	// "auto" (default) its own cgroup when /sys/fs/cgroup is cgroup2 and
	// that cgroup is writable, else off; "off": the child subreaper alone,
	// which a task's process that leaves its session and clears its
	// environment escapes.
	CgroupDir string
	// TaskUser is the OS user of tasks that name no tenant when the worker
	// runs as root; default executor.DefaultTaskUser (made when missing).
	TaskUser string
	// Hide are directories tasks must not see besides DataDir (a
	// standalone's data dir).
	Hide []string
	// TaskIsolation: see executor.Config.TaskIsolation.
	TaskIsolation string
	// EnvPassthrough names the worker's environment variables tasks see
	// besides PATH, HOME, LANG, TZ and USER.
	EnvPassthrough []string
	// MaxLogBytes caps a task's log; default 1 GiB.
	MaxLogBytes int64
	// LogSweep is how often the worker asks a master which runs of its
	// log directories a retention purge deleted, and deletes their logs
	// (logsweep.go); default DefaultLogSweep, negative: never.
	LogSweep time.Duration
	// MaxCPUPercent and MaxMemoryPercent make the worker report itself
	// overloaded in its heartbeats (masters then dispatch nothing to it)
	// while the host's CPU or memory use is at or above them, until it is
	// 10 points below (see overloadLimits.decide); 0 (default) is off.
	MaxCPUPercent    int
	MaxMemoryPercent int
	// Limits bound what peers may cost the RPC server (zero: defaults).
	Limits remote.Limits
	// TLS, when set, runs the RPC server and client over mutual TLS.
	TLS *remote.TLS
	// Routes dials a master advertised at an address at another one
	// (remote.Options.Routes).
	Routes map[string]string
	// Secret is the cluster secret. With it, every connection authenticates
	// (remote/auth.go) and the worker obeys only the registry's leader (see
	// leader.go). Empty leaves the transport open and unchecked: for
	// package tests only; the beluga binaries always set it.
	Secret clusterkey.Secret
}

// TaskGuard modes.
const (
	GuardAuto = "auto"
	GuardOn   = "on"
	GuardOff  = "off"
)

// MaybeRunGuard must be the first call of main in a binary that runs a
// worker: when the process was started as a worker's task guard it serves
// as one and never returns; otherwise it returns at once and lets workers
// start guards by re-executing the binary. Without it TaskGuard "auto"
// runs unguarded and "on" fails.
func MaybeRunGuard() { guard.MaybeRun() }

// Stats is the worker's load, for heartbeats.
type Stats = executor.Stats

// Worker runs tasks for the master. Create it with New.
type Worker struct {
	cfg    Config
	exCfg  executor.Config // validated, defaults applied; Host set at Start
	logDir string
	// workDir holds the tasks' work dirs, <workDir>/<run>/<task>.
	workDir string
	log     *zap.Logger
	box     *secret.Box // opens secret params sealed for the link; nil without a cluster secret
	client  *remote.Client
	server  *remote.Server
	exec    atomic.Pointer[executor.Executor] // nil until Start has it running
	// unmetric removes its gauges from the metrics registry (set by start).
	unmetric func()
	guard    *guard.Guard // nil when tasks are not guarded
	// cgroupBase is where the worker's cgroup goes ("": off, for
	// cgroupOff); cgroups is that cgroup once Start made it.
	cgroupBase, cgroupOff string
	cgroups               *cgroup.Dir
	born                  time.Time // New's time: the heartbeat's StartTime
	// refusal, when set, is why dispatches are refused for now (the
	// registry session is in doubt; see Presence).
	refusal atomic.Pointer[string]
	// leader is the master the registry names leader and its term's epoch
	// (set by Presence); with auth on, only it commands this worker.
	leader leaderView

	life   startstop.Base // Start once; Stop once, after a failed Start too
	mu     sync.Mutex     // guards master and host
	master string         // SetMaster before Start
	host   string
}

// New checks cfg and returns a worker; Start runs it.
func New(cfg Config, log *zap.Logger) (*Worker, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.Listen == "" {
		return nil, errors.New("worker: config Listen is empty")
	}
	if len(cfg.Groups) == 0 {
		cfg.Groups = []string{"default"}
	}
	for _, g := range cfg.Groups {
		if g == "" {
			return nil, errors.New("worker: config Groups holds an empty name")
		}
	}
	for _, l := range []struct {
		name string
		v    int
	}{{"MaxCPUPercent", cfg.MaxCPUPercent}, {"MaxMemoryPercent", cfg.MaxMemoryPercent}} {
		if l.v < 0 || l.v > 100 {
			return nil, fmt.Errorf("worker: config %s %d: want 0 (off) to 100", l.name, l.v)
		}
	}
	switch cfg.TaskGuard {
	case "":
		cfg.TaskGuard = GuardAuto
	case GuardAuto, GuardOn, GuardOff:
	default:
		return nil, fmt.Errorf("worker: config TaskGuard %q: want auto, on or off", cfg.TaskGuard)
	}
	if cfg.CgroupDir == "" {
		cfg.CgroupDir = cgroup.Auto
	}
	cgBase, cgOff, err := cgroup.Base(cfg.CgroupDir)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if cfg.SecretKeyFile != "" {
		// A bad key file is a start-up error, not the first sql task's.
		if _, _, err := secret.LoadKeyFile(cfg.SecretKeyFile); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	exCfg, err := executor.Config{
		Slots:          cfg.Slots,
		Shell:          cfg.Shell,
		SecretKeyFile:  cfg.SecretKeyFile,
		ProtectedDirs:  cfg.ProtectedDirs,
		Python:         cfg.Python,
		DataDir:        cfg.DataDir,
		ResendInterval: cfg.ResendInterval,
		KillGrace:      cfg.KillGrace,
		RunningDelay:   cfg.RunningDelay,
		EnvPassthrough: cfg.EnvPassthrough,
		MaxLogBytes:    cfg.MaxLogBytes,
		TaskUser:       cfg.TaskUser,
		Hide:           cfg.Hide,
		TaskIsolation:  cfg.TaskIsolation,
	}.WithDefaults()
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w := &Worker{
		cfg:     cfg,
		exCfg:   exCfg,
		logDir:  executor.LogDir(exCfg.DataDir),
		workDir: filepath.Join(exCfg.DataDir, "work"),
		log:     log.Named("worker"),
		born:    time.Now().UTC(),

		cgroupBase: cgBase,
		cgroupOff:  cgOff,
	}
	w.life.Name, w.life.Log = "worker", w.log
	// A log window (MaxLogChunk, base64 in JSON) fits the LogResponse
	// frame limit (frame.MaxLogBody) with room to spare.
	opts := remote.Options{Log: w.log, TLS: cfg.TLS, Limits: cfg.Limits, Routes: cfg.Routes} // the client takes its handshake timeout
	if !cfg.Secret.Empty() {
		if w.box, err = secret.NewBox(cfg.Secret); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		opts.Auth = &remote.Auth{Key: cfg.Secret.Key(clusterkey.PurposeHandshake), Role: remote.RoleWorker, ID: w.Host}
	}
	w.leader.init()
	w.client = remote.NewClient(w.handle, opts)
	sopts := opts
	sopts.Limits = cfg.Limits
	w.server = remote.NewServer(cfg.Listen, w.handle, sopts)
	return w, nil
}

// Start starts the client, listens, and starts the executor; the worker
// accepts dispatches when it returns. ctx bounds start-up only.
func (w *Worker) Start(ctx context.Context) error {
	// A failed start is undone by stop and final: a half-started transport
	// cannot be restarted.
	return w.life.StartWith(context.WithoutCancel(ctx), func() error { return w.start(ctx) }, w.stop)
}

// start order: the client first (the executor reports through it), then the
// server (its address is the default Host), then the task guard, then the
// executor (it tells the guard of every task). Dispatches arriving before the
// executor runs are refused as "starting".
func (w *Worker) start(ctx context.Context) error {
	if err := w.client.Start(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if err := w.server.Start(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if err := w.openCgroups(); err != nil {
		return err
	}
	if err := w.startGuard(ctx); err != nil {
		return err
	}
	host := w.cfg.Host
	if host == "" {
		host = advertised(w.server.Addr())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	cfg := w.exCfg
	cfg.Host, cfg.Master = host, w.master
	if w.guard != nil {
		cfg.Guard = w.guard
	}
	cfg.Cgroups = w.cgroups
	ex, err := executor.New(cfg, w.client, w.log.Named("executor"))
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if err := ex.Start(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.host = host
	w.exec.Store(ex)
	w.unmetric = metrics.RegisterWorker(w.server.Addr(), w.metricStats)
	if w.cfg.LogSweep >= 0 {
		w.life.Go(w.sweepLogs)
	}
	w.log.Info("worker started", zap.String("addr", w.server.Addr()), zap.String("host", host),
		zap.Strings("groups", w.cfg.Groups), zap.Int("slots", cfg.Slots), zap.String("data_dir", cfg.DataDir),
		zap.Bool("task_guard", w.guard != nil))
	return nil
}

// openCgroups makes the worker's cgroup, for its tasks', as CgroupDir says;
// whether tasks get cgroups, and if not why, is logged once here. An
// explicit directory that cannot serve fails the start; with "auto" the
// worker goes on with the subreaper alone.
func (w *Worker) openCgroups() error {
	if w.cgroupBase == "" {
		w.log.Info("task cgroups off: a task's processes that leave its session and clear their environment can outlive it",
			zap.String("reason", w.cgroupOff))
		return nil
	}
	d, err := cgroup.Open(w.cgroupBase)
	switch {
	case d == nil && w.cfg.CgroupDir == cgroup.Auto:
		w.log.Info("task cgroups off: a task's processes that leave its session and clear their environment can outlive it",
			zap.Error(err))
		return nil
	case d == nil:
		return fmt.Errorf("worker: cgroup_dir: %w", err)
	case err != nil:
		w.log.Warn("task cgroups on, but what an earlier worker left is not all removed", zap.Error(err))
	}
	w.cgroups = d
	w.log.Info("task cgroups on", zap.String("dir", d.Path()))
	return nil
}

// startGuard starts the task guard as TaskGuard says.
func (w *Worker) startGuard(ctx context.Context) error {
	if w.cfg.TaskGuard == GuardOff {
		return nil
	}
	g := guard.New(w.exCfg.Slots, w.log.Named("guard"))
	if w.cgroups != nil {
		g.SetCgroupDir(w.cgroups.Path())
	}
	err := g.Start(ctx)
	switch {
	case err == nil:
		w.guard = g
	case w.cfg.TaskGuard == GuardOn:
		return fmt.Errorf("worker: task guard: %w", err)
	default:
		w.log.Warn("tasks run without a guard: if this worker is killed, their children keep running", zap.Error(err))
	}
	return nil
}

// Stop shuts the worker down and returns when every goroutine and task
// process is gone. Order:
//  1. the executor: stop accepting dispatches, kill every running process
//     group (SIGTERM, SIGKILL after KillGrace) and drop the queue, wait for
//     the processes to be reaped, stop the resender. Killed tasks are not
//     reported: the master's worker failover resubmits them (see
//     executor.Stop for why a "killed" result would be wrong);
//  2. the task guard (no group is registered any more; it exits);
//  3. the client (no report can be sent any more);
//  4. the server (handlers still running see a stopped executor and return).
//
// Safe to call twice and before Start.
func (w *Worker) Stop() { _ = w.life.Stop(w.stop) }

func (w *Worker) stop() {
	if w.unmetric != nil {
		w.unmetric()
	}
	if ex := w.exec.Load(); ex != nil {
		ex.Stop()
	}
	if w.guard != nil {
		w.guard.Stop()
	}
	if w.cgroups != nil {
		if err := w.cgroups.Close(); err != nil {
			w.log.Warn("worker cgroup not removed", zap.Error(err))
		}
	}
	w.client.Stop()
	w.server.Stop()
	w.log.Info("worker stopped")
}

// Dead is closed when the worker's RPC server can no longer serve (see
// remote.Server.Dead); the process should then exit non-zero.
func (w *Worker) Dead() <-chan struct{} { return w.server.Dead() }

// TransportErr is the RPC server's health: nil while it serves.
func (w *Worker) TransportErr() error { return w.server.Err() }

// Addr is the bound listen address once started; "" before.
func (w *Worker) Addr() string { return w.server.Addr() }

// Host is the address the worker advertises in its reports; "" before Start.
func (w *Worker) Host() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.host
}

// StartTime is when this Worker was created: the StartTime of its
// heartbeats, by which masters tell a restarted worker (a new Worker at the
// same address, knowing none of the old one's tasks) from the same one.
func (w *Worker) StartTime() time.Time { return w.born }

// LogDir is the absolute directory of this worker's task logs. It is
// announced in the registry so that a log stays readable from whichever
// worker serves this data dir now, whatever address ran the task.
func (w *Worker) LogDir() string { return w.logDir }

// Groups are the worker groups this worker serves.
func (w *Worker) Groups() []string { return append([]string(nil), w.cfg.Groups...) }

// Isolation says how tasks are kept from the worker; zero before Start.
func (w *Worker) Isolation() executor.Isolation {
	if ex := w.exec.Load(); ex != nil {
		return ex.Isolation()
	}
	return executor.Isolation{}
}

// Stats returns running, queued and capacity.
func (w *Worker) Stats() Stats {
	if ex := w.exec.Load(); ex != nil {
		return ex.Stats()
	}
	return Stats{Capacity: w.exCfg.Slots}
}

// SetMaster redirects un-acked and future reports to a new master address
// (after failover). Before Start it sets the initial master.
func (w *Worker) SetMaster(addr string) {
	if addr == "" {
		return
	}
	w.mu.Lock()
	w.master = addr
	ex := w.exec.Load()
	w.mu.Unlock()
	if ex != nil {
		ex.SetMaster(addr)
	}
}

// dropAll kills and forgets every task without reporting (the registry
// session was lost: the master runs them elsewhere); it returns how many.
func (w *Worker) dropAll(reason string) int {
	if ex := w.exec.Load(); ex != nil {
		return ex.DropAll(reason)
	}
	return 0
}

// refuseDispatches makes dispatches be refused with reason, until
// acceptDispatches.
func (w *Worker) refuseDispatches(reason string) { w.refusal.Store(&reason) }

func (w *Worker) acceptDispatches() { w.refusal.Store(nil) }

// advertised turns a bound address into one peers can dial: a wildcard host
// (0.0.0.0, ::) is replaced by a local IP, or the host name.
func advertised(bound string) string {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return bound
	}
	return net.JoinHostPort(localHost(), port)
}

// localHost is the first global unicast IPv4 address of this machine, else
// its host name, else the loopback address.
func localHost() string {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "127.0.0.1"
}
