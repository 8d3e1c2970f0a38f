// Package standalone assembles master, worker and API from the config: all
// three in one process on an embedded SQLite file (or any database URL) and
// an in-process registry (Start), and each alone for the cluster commands
// of cmd/beluga (MasterConfig, NewWorker, NewAPIServer), so both modes
// build them one way. Master and worker still talk over loopback sockets
// in one process, as in a cluster.
package standalone

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/common/events"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	psecret "github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/worker"
	"github.com/beluga-scheduler/beluga/worker/executor"
)

// Standalone is master, worker and API in one process, wired over loopback
// sockets exactly as in a cluster, with an in-process registry.
type Standalone struct {
	Store    *store.Store
	Events   *events.Hub // wakes the API's event streams when the master published
	Master   *master.Master
	Worker   *worker.Worker
	API      *api.Server
	logs     *remote.Client
	presence *worker.Presence
	ready    chan struct{}
	once     sync.Once
	// MetricsTokenFile holds the bearer token GET /metrics wants.
	MetricsTokenFile string
	// AdminNote says how the user admin was made on this start ("": users
	// existed), for the start line.
	AdminNote string
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
	// Entered (tasks reach their work dirs below it), never listed; its
	// files are the server's alone (docs/security.md).
	if err := os.Chmod(c.DataDir, 0o711); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	sa := &Standalone{ready: make(chan struct{}), Events: events.NewHub()}
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
	if c.DB == "" {
		if err = ownDBFiles(strings.TrimPrefix(c.DBURL(), "sqlite://")); err != nil {
			return nil, err
		}
	}
	pw, err := c.API.BootstrapPassword()
	if err != nil {
		return nil, err
	}
	if sa.AdminNote, err = api.Bootstrap(ctx, sa.Store, pw, c.DataDir, log); err != nil {
		return nil, err
	}
	// Standalone is its own cluster: its secret is made once and kept.
	secret, err := clusterkey.Ensure(SecretPath(c.DataDir))
	if err != nil {
		return nil, err
	}
	box, err := psecret.NewBox(secret)
	if err != nil {
		return nil, err
	}
	sa.Store = sa.Store.WithSecrets(box)
	secrets, keyFile, err := SecretKey(c)
	if err != nil {
		return nil, err
	}
	c.SecretKeyFile = keyFile
	reg := registry.NewMemory()
	// The in-process election starts at epoch 1 in every run; the fence
	// accepts only an epoch above the term recorded by the previous run.
	cur, err := sa.Store.TermCurrent(ctx)
	if err != nil {
		return nil, err
	}
	reg.RaiseEpoch(cur)
	tl, err := LoadTLS(c)
	if err != nil {
		return nil, err
	}
	mc, err := MasterConfig(c, secret, tl)
	if err != nil {
		return nil, err
	}
	mc.TasksRunAsServer = executor.RunsAsServer(c.Worker.TaskIsolation)
	// Every outbox write of a standalone is its own, and signals the
	// publisher (store.EventAppended): the idle look is a safety net.
	mc.Events = master.EventsConfig{Hub: sa.Events, Secrets: secrets, IdlePoll: 2 * time.Second}
	mc.GitSync = GitSync(sa.Store, secrets, log, mc.TasksRunAsServer)
	sa.Master = master.New(mc, sa.Store, reg, reg, log)
	if err = sa.Master.Start(ctx); err != nil {
		return nil, err
	}
	if sa.Worker, sa.presence, err = StartWorker(ctx, c, secret, reg, reg, reg, log, opts...); err != nil {
		return nil, err
	}
	sa.logs = remote.NewClient(func(remote.Peer, uint64, message.Message) {}, APIClientOptions(secret, tl, c, log))
	if err = sa.logs.Start(ctx); err != nil {
		return nil, err
	}
	var mtoken string
	if sa.MetricsTokenFile, mtoken, err = MetricsToken(c); err != nil {
		return nil, err
	}
	sa.API = NewAPIServer(c, tl, api.Deps{MetricsToken: mtoken, Store: sa.Store, Notify: sa.Master.Notify, Logs: LogFetcher(sa.logs, reg),
		Cluster: api.ClusterView(sa.Store, reg, reg), Ready: sa.isReady, Log: log, Secrets: secrets,
		Isolation: func() api.TaskIsolation {
			i := sa.Worker.Isolation()
			return api.TaskIsolation{TaskUser: i.TaskUser, Sandbox: i.Sandbox, Warning: i.Warning, RunsAsServer: i.RunsAsServer}
		},
		Events: sa.Events})
	if err = sa.API.Start(ctx); err != nil {
		return nil, err
	}
	close(sa.ready)
	return sa, nil
}

// GitSync is the master's periodic Git sync (master.Config.GitSync): the
// API's, on st, with the secret key that opens the bindings' passwords;
// runsAsServer is what the API's code gate asks (Config.TasksRunAsServer).
func GitSync(st api.Store, secrets *psecret.Box, log *zap.Logger, runsAsServer bool) func(context.Context, string) error {
	iso := func() api.TaskIsolation { return api.TaskIsolation{RunsAsServer: runsAsServer} }
	return api.NewGitSyncer(api.Deps{Store: st, Secrets: secrets, Log: log, Isolation: iso}).Sync
}

// MasterConfig is the master's configuration from the settings, the same
// for a standalone and the master command; what differs between the two
// (the event hub, task isolation) the caller adds.
func MasterConfig(c config.Config, secret clusterkey.Secret, tl *remote.TLS) (master.Config, error) {
	sel, err := master.ParseSelector(c.Master.Selector)
	if err != nil {
		return master.Config{}, err
	}
	return master.Config{Listen: c.Master.Listen, Host: c.Master.Host, PollInterval: c.Master.PollInterval,
		Selector: sel, MaxRunning: c.Master.MaxRunning, Limits: Limits(c), Secret: secret, TLS: tl}, nil
}

// NewAPIServer builds the API server on d from the settings (listen
// address, allowed hosts, TLS), the same for a standalone and the api
// command; d carries what differs (store, registry view, readiness).
func NewAPIServer(c config.Config, tl *remote.TLS, d api.Deps) *api.Server {
	d.Listen, d.AllowedHosts = c.API.Listen, c.API.AllowedHosts
	srv := api.NewServer(c.API.Listen, api.NewHandler(d), d.Log)
	if tl != nil {
		srv.UseTLS(tl.HTTPSConfig())
	}
	return srv
}

// isReady: started, and both RPC servers serve (an exhausted or dead
// listener makes /healthz fail).
func (sa *Standalone) isReady() bool {
	select {
	case <-sa.ready:
		return sa.Master.TransportErr() == nil && sa.Worker.TransportErr() == nil
	default:
		return false
	}
}

// LoadTLS reads the TLS files the settings name; nil (and no error) when
// TLS is off.
func LoadTLS(c config.Config) (*remote.TLS, error) {
	if err := c.TLS.Check(); err != nil {
		return nil, err
	}
	if !c.TLS.Enabled() {
		return nil, nil
	}
	return remote.LoadTLS(c.TLS.CertFile, c.TLS.KeyFile, c.TLS.CAFile)
}

// Limits are the RPC servers' limits from the settings.
func Limits(c config.Config) remote.Limits {
	return remote.Limits{IdleTimeout: c.Remote.IdleTimeout, HandshakeTimeout: c.Remote.HandshakeTimeout,
		MaxConnsPerPeer: c.Remote.MaxConnsPerPeer}
}

// Stop shuts down in reverse: API (no new work), the log client, master (no
// new dispatches; reports in hand are persisted), worker (kills its running
// tasks and waits for them), its presence (it leaves the registry only once
// its tasks are dead), then storage. Safe on a partly started Standalone.
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
func SecretKey(c config.Config) (*psecret.Box, string, error) {
	if c.SecretKeyFile != "" {
		b, _, err := psecret.LoadKeyFile(c.SecretKeyFile)
		return b, c.SecretKeyFile, err
	}
	path := filepath.Join(c.DataDir, "secret.key")
	b, err := psecret.EnsureKeyFile(path)
	return b, path, err
}

// NewWorker builds (and so checks) a worker with the settings of c;
// nothing runs yet.
func NewWorker(c config.Config, secret clusterkey.Secret, log *zap.Logger) (*worker.Worker, error) {
	tl, err := LoadTLS(c)
	if err != nil {
		return nil, err
	}
	groups := c.Worker.Groups
	if len(groups) == 0 {
		groups = []string{model.DefaultWorkerGroup}
	}
	routes, err := ParseRoutes(c.Worker.Routes)
	if err != nil {
		return nil, fmt.Errorf("worker settings: %w", err)
	}
	w, err := worker.New(worker.Config{Listen: c.Worker.Listen, Host: c.Worker.Host, Groups: groups,
		Slots: c.Worker.Slots, Shell: c.Worker.Shell, Python: c.Worker.Python, DataDir: filepath.Join(c.DataDir, "worker"),
		EnvPassthrough: c.Worker.EnvPassthrough, MaxLogBytes: int64(c.Worker.MaxLogBytes), CgroupDir: c.Worker.CgroupDir,
		TaskUser: c.Worker.TaskUser, Hide: []string{c.DataDir}, TaskIsolation: c.Worker.TaskIsolation,
		SecretKeyFile: c.SecretKeyFile,
		ProtectedDirs: []string{c.DataDir},
		MaxCPUPercent: c.Worker.MaxCPUPercent, MaxMemoryPercent: c.Worker.MaxMemoryPercent, LogSweep: c.Worker.LogSweep,
		Limits: Limits(c), Secret: secret, TLS: tl, Routes: routes}, log)
	if err != nil {
		return nil, fmt.Errorf("worker settings: %w", err)
	}
	return w, nil
}

// StartWorker starts a worker with the settings of c and announces it in
// reg (heartbeats, following the leader, dropping its tasks when its
// registry session is lost). Stop the worker before the presence: a worker
// that leaves the registry first has its dying tasks run elsewhere.
func StartWorker(ctx context.Context, c config.Config, secret clusterkey.Secret, reg registry.Registry, el registry.Elector,
	states registry.StateWatcher, log *zap.Logger, opts ...Option) (*worker.Worker, *worker.Presence, error) {
	w, err := NewWorker(c, secret, log)
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
	p := worker.NewPresence(w, reg, el, states, worker.PresenceOptions{ProcDir: o.procDir}, log)
	if err := p.Start(ctx); err != nil {
		w.Stop()
		return nil, err
	}
	return p, nil
}

// MetricsToken is a standalone's scrape token: the file
// metrics.token_file names (which must exist), else
// <data dir>/metrics-token, made on first start (0600) and reused after.
func MetricsToken(c config.Config) (path, token string, err error) {
	if c.Metrics.TokenFile != "" {
		tok, err := metrics.ReadToken(c.Metrics.TokenFile)
		return c.Metrics.TokenFile, tok, err
	}
	path = filepath.Join(c.DataDir, "metrics-token")
	tok, err := metrics.EnsureToken(path)
	return path, tok, err
}

// ownDBFiles makes the SQLite file and its journals the server's alone
// (SQLite creates them 0644).
func ownDBFiles(db string) error {
	for _, p := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	return nil
}

// SecretPath is where standalone keeps its cluster secret.
func SecretPath(dataDir string) string { return filepath.Join(dataDir, "cluster-secret") }

// APIClientOptions are the transport options of an API server's client
// (log reads from workers, nudges to the leader): it proves it is the API
// at c's API listen address, within c's handshake timeout.
func APIClientOptions(secret clusterkey.Secret, tl *remote.TLS, c config.Config, log *zap.Logger) remote.Options {
	listen := c.API.Listen
	return remote.Options{Log: log, TLS: tl, Limits: Limits(c), Auth: &remote.Auth{Key: secret.Key(clusterkey.PurposeHandshake), Role: remote.RoleAPI,
		ID: func() string { return listen }}}
}

// ParseRoutes reads worker routes, "advertised=reach" entries of host:port
// addresses, into a map.
func ParseRoutes(entries []string) (map[string]string, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		from, to, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("route %q: want advertised=reach, host:port each", e)
		}
		for _, a := range []string{from, to} {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("route %q: %q is not host:port: %w", e, a, err)
			}
		}
		if _, dup := out[from]; dup {
			return nil, fmt.Errorf("route %q: %s is routed twice", e, from)
		}
		out[from] = to
	}
	return out, nil
}
