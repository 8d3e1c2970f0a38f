// Package standalone assembles master, worker and API in one process on an
// embedded SQLite file (or any database URL) and an in-process registry.
// Master and worker still talk over loopback sockets, as in a cluster.
package standalone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/secretbox"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/worker"
)

// Standalone is master, worker and API in one process, wired over loopback
// sockets exactly as in a cluster, with an in-process registry.
type Standalone struct {
	Store    *store.Store
	Master   *master.Master
	Worker   *worker.Worker
	API      *api.Server
	logs     *remote.Client
	presence *worker.Presence
	ready    chan struct{}
	once     sync.Once
}

// Option adjusts a Standalone beyond its config. Options serve tests; none
// is a user setting.
type Option func(*options)

type options struct{ procDir string }

// WithProcDir makes the worker read its host's CPU, memory and load from
// dir (stat, meminfo and loadavg as in /proc) instead of /proc, so that a
// test controls what the worker's overload protection sees.
func WithProcDir(dir string) Option { return func(o *options) { o.procDir = dir } }

// Start brings the parts up in dependency order: storage, master
// (so reports have somewhere to land), worker, then the API that lets work in.
func Start(ctx context.Context, c config.Config, log *zap.Logger, opts ...Option) (_ *Standalone, err error) {
	if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	sa := &Standalone{ready: make(chan struct{})}
	defer func() {
		if err != nil {
			sa.Stop()
		}
	}()
	if sa.Store, err = store.Open(ctx, c.DBURL(), log); err != nil {
		return nil, err
	}
	if _, err = sa.Store.Migrate(ctx); err != nil {
		return nil, err
	}
	secrets, keyFile, err := SecretKey(c)
	if err != nil {
		return nil, err
	}
	c.SecretKeyFile = keyFile
	reg := registry.NewMemory()
	// The in-process election starts at epoch 1 in every run; the fence
	// accepts only an epoch above the term recorded by the previous run.
	cur, err := sa.Store.CurrentTerm(ctx)
	if err != nil {
		return nil, err
	}
	reg.RaiseEpoch(cur)
	sel, err := master.ParseSelector(c.Master.Selector)
	if err != nil {
		return nil, err
	}
	sa.Master = master.New(master.Config{Listen: c.Master.Listen, Host: c.Master.Host, PollInterval: c.Master.PollInterval,
		Selector: sel, MaxRunning: c.Master.MaxRunning}, sa.Store, reg, reg, log)
	if err = sa.Master.Start(ctx); err != nil {
		return nil, err
	}
	if sa.Worker, sa.presence, err = StartWorker(ctx, c, reg, reg, reg, log, opts...); err != nil {
		return nil, err
	}
	sa.logs = remote.NewClient(func(remote.Peer, uint64, message.Message) {}, remote.Options{Log: log})
	if err = sa.logs.Start(ctx); err != nil {
		return nil, err
	}
	h := api.NewHandler(api.Deps{Store: sa.Store, Notify: sa.Master.Notify, Logs: LogFetcher(sa.logs, reg),
		Cluster: api.ClusterView(sa.Store, reg, reg), Ready: sa.isReady, Log: log, Secrets: secrets,
		Listen: c.API.Listen, AllowedHosts: c.API.AllowedHosts})
	sa.API = api.NewServer(c.API.Listen, h, log)
	if err = sa.API.Start(ctx); err != nil {
		return nil, err
	}
	close(sa.ready)
	return sa, nil
}

func (sa *Standalone) isReady() bool {
	select {
	case <-sa.ready:
		return true
	default:
		return false
	}
}

// Stop shuts down in reverse: API (no new work), master (no new dispatches;
// reports in hand are persisted), worker (kills its running tasks and waits
// for them), then storage. Safe on a partly started Standalone.
func (sa *Standalone) Stop() { sa.once.Do(sa.stop) }

func (sa *Standalone) stop() {
	if sa.API != nil {
		sa.API.Stop()
	}
	if sa.logs != nil {
		sa.logs.Stop()
	}
	if sa.Master != nil {
		sa.Master.Stop()
	}
	if sa.Worker != nil {
		sa.Worker.Stop()
	}
	if sa.presence != nil {
		sa.presence.Stop()
	}
	if sa.Store != nil {
		sa.Store.Close()
	}
}

// SecretKey is a standalone's key for datasource passwords: the file
// secret_key_file names (which must exist), else <data dir>/secret.key,
// made on first start (0600) and reused after.
func SecretKey(c config.Config) (*secretbox.Box, string, error) {
	if c.SecretKeyFile != "" {
		b, _, err := secretbox.Load(c.SecretKeyFile)
		return b, c.SecretKeyFile, err
	}
	path := filepath.Join(c.DataDir, "secret.key")
	b, err := secretbox.Ensure(path)
	return b, path, err
}

// NewWorker builds (and so checks) a worker with the settings of c;
// nothing runs yet.
func NewWorker(c config.Config, log *zap.Logger) (*worker.Worker, error) {
	groups := c.Worker.Groups
	if len(groups) == 0 {
		groups = []string{model.DefaultWorkerGroup}
	}
	w, err := worker.New(worker.Config{Listen: c.Worker.Listen, Host: c.Worker.Host, Groups: groups,
		Slots: c.Worker.Slots, Shell: c.Worker.Shell, Python: c.Worker.Python, DataDir: filepath.Join(c.DataDir, "worker"),
		EnvPassthrough: c.Worker.EnvPassthrough, SecretKeyFile: c.SecretKeyFile, MaxLogBytes: int64(c.Worker.MaxLogBytes),
		MaxCPUPercent: c.Worker.MaxCPUPercent, MaxMemoryPercent: c.Worker.MaxMemoryPercent}, log)
	if err != nil {
		return nil, fmt.Errorf("worker settings: %w", err)
	}
	return w, nil
}

// StartWorker starts a worker with the settings of c and announces it in
// reg (heartbeats, following the leader, dropping its tasks when its
// registry session is lost). Stop the worker before the presence: a worker
// that leaves the registry first has its dying tasks run elsewhere.
func StartWorker(ctx context.Context, c config.Config, reg registry.Registry, el registry.Elector,
	states registry.StateWatcher, log *zap.Logger, opts ...Option) (*worker.Worker, *worker.Presence, error) {
	w, err := NewWorker(c, log)
	if err != nil {
		return nil, nil, err
	}
	p, err := Announce(ctx, w, c, reg, el, states, log, opts...)
	if err != nil {
		return nil, nil, err
	}
	return w, p, nil
}

// Announce starts a built worker and its presence in reg.
func Announce(ctx context.Context, w *worker.Worker, c config.Config, reg registry.Registry, el registry.Elector,
	states registry.StateWatcher, log *zap.Logger, opts ...Option) (*worker.Presence, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	p := worker.NewPresence(w, reg, el, states, worker.PresenceOptions{SessionTimeout: c.ZK.SessionTimeout, ProcDir: o.procDir}, log)
	if err := p.Start(ctx); err != nil {
		w.Stop()
		return nil, err
	}
	return p, nil
}
