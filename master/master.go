// Package master is the scheduling side of Beluga: leader election, and,
// while leading, the command consumer, one runner goroutine per workflow
// instance, the global priority queue and its dispatcher, the task event
// service that persists worker reports, and worker failover.
package master

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// Config configures a master.
type Config struct {
	// Listen is the address of the master's RPC server, where workers send
	// reports ("127.0.0.1:0" allowed).
	Listen string
	// Host is the address advertised to workers; default the bound address.
	Host string
	// PollInterval is the fallback scan of the command table, for commands
	// written by an API that could not nudge the leader. Default 1s.
	PollInterval time.Duration
	// WorkerLossGrace is how long a worker must stay gone from the registry
	// before its tasks are run elsewhere, so that a worker whose session
	// expired has killed them first. Default 1s.
	WorkerLossGrace time.Duration
	// MaxRunning caps the tasks this master has in flight at once, across
	// all workers (platform concurrency); 0 means no cap.
	MaxRunning int
	// Selector is the worker selection strategy (default round_robin).
	Selector Selector
	// Clock drives retries and timeouts (the state wheel) and the cron
	// scheduler; nil is the real clock. Tests inject their own.
	Clock Clock
	// Limits bound what peers may cost the RPC server (zero: defaults).
	Limits remote.Limits
	// TLS, when set, runs the RPC server and client over mutual TLS.
	TLS *remote.TLS
	// Secret is the cluster secret: every connection authenticates
	// (remote/auth.go), and reports are accepted only from the worker that
	// proved to be the one they name. Empty leaves the transport open and
	// unchecked: for package tests only; the beluga binaries always set it.
	Secret clusterkey.Secret
	// Events configures the event stream's publisher and webhooks.
	Events EventsConfig
	// TasksRunAsServer: the worker of this process runs tasks as the
	// server's own OS user (executor.RunsAsServer; a standalone that is not
	// root). Then a version no admin applied may run shell and python tasks
	// only while setting tasks.allow_unsandboxed_code is 1.
	TasksRunAsServer bool
	// RetentionCheck is how often the leader looks whether a retention
	// sweep is due (retention.go); default a minute.
	RetentionCheck time.Duration
	// GitSync syncs a project's Git binding as the API does (api.GitSyncer);
	// nil: the leader syncs no binding by itself. GitSyncTick is how often
	// it looks for bindings due (0: GitSyncTick).
	GitSync     func(ctx context.Context, project string) error
	GitSyncTick time.Duration
}

// maxCachedDefinitions bounds the parsed workflow versions a master keeps.
const maxCachedDefinitions = 256

// Master campaigns for leadership and, while it leads, schedules. A standby
// runs only its transport and the campaign.
type Master struct {
	cfg     Config
	log     *zap.Logger
	store   Store[TermStore]
	reg     registry.Registry
	elector registry.Elector
	box     *secret.Box // opens secret params for dispatches
	logic   masterTasks // replaces the term's logicTasks as the hook for master-placed types (tests; nil: logicTasks; master/logic.go)

	server *remote.Server
	client *remote.Client
	ident  atomic.Pointer[string] // the handshake's identity: cfg.Host once known

	mu   sync.Mutex
	cur  *term                 // nil while standby
	defs map[int64]*definition // parsed definitions, immutable, shared by terms

	life startstop.Base // owns the campaign goroutine

	logGone chan struct{} // slots of LogGone answers (logsweep.go)
}

// New builds a master; nothing runs until Start.
func New[T TermStore](cfg Config, st Store[T], reg registry.Registry, el registry.Elector, log *zap.Logger) *Master {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Selector == "" {
		cfg.Selector = SelectRoundRobin
	}
	if cfg.WorkerLossGrace <= 0 {
		cfg.WorkerLossGrace = time.Second
	}
	cfg.Events = cfg.Events.withDefaults()
	if path := os.Getenv(ClockOffsetFileEnv); path != "" && cfg.Clock == nil {
		cfg.Clock = newOffsetClock(path, log.Named("master"))
	}
	m := &Master{cfg: cfg, log: log.Named("master"), store: erase(st), reg: reg, elector: el, defs: map[int64]*definition{},
		logGone: make(chan struct{}, logGoneSlots)}
	m.box, _ = secret.NewBox(cfg.Secret) // nil without a secret: sealed params then fail their tasks
	m.life.Name, m.life.Log = "master", m.log
	return m
}

// Start brings up the transport, announces the master in the registry and
// starts campaigning. It returns once the transport listens; leadership
// comes later (IsLeader). ctx bounds start-up only. A second Start is an
// error; a failed Start is final (Stop undoes what it began).
func (m *Master) Start(ctx context.Context) error {
	return m.life.StartWith(context.WithoutCancel(ctx), func() error { return m.start(ctx) }, m.stopTransport)
}

func (m *Master) start(ctx context.Context) error {
	opts := remote.Options{Log: m.log, TLS: m.cfg.TLS, Limits: m.cfg.Limits} // the client takes its handshake timeout
	if !m.cfg.Secret.Empty() {
		opts.Auth = &remote.Auth{Key: m.cfg.Secret.Key(clusterkey.PurposeHandshake), Role: remote.RoleMaster, ID: m.identity}
	}
	if m.cfg.Host != "" {
		m.ident.Store(&m.cfg.Host)
	}
	sopts := opts
	sopts.Limits = m.cfg.Limits
	m.server = remote.NewServer(m.cfg.Listen, m.handle, sopts)
	m.client = remote.NewClient(m.handle, opts)
	if err := m.server.Start(ctx); err != nil {
		return fmt.Errorf("master rpc server: %w", err)
	}
	if err := m.client.Start(ctx); err != nil {
		return fmt.Errorf("master rpc client: %w", err)
	}
	if m.cfg.Host == "" {
		m.cfg.Host = m.server.Addr()
		host := m.cfg.Host
		m.ident.Store(&host)
	}
	if err := m.reg.Register(ctx, registry.Node{Role: registry.RoleMaster, Addr: m.cfg.Host,
		Heartbeat: registry.Heartbeat{StartTime: time.Now().UTC(), Time: time.Now().UTC()}}); err != nil {
		return fmt.Errorf("register master: %w", err)
	}
	m.life.Go(m.campaign)
	m.log.Info("master started", zap.String("rpc", m.cfg.Host))
	return nil
}

// Dead is closed when the master's RPC server can no longer serve (see
// remote.Server.Dead); the process should then exit non-zero.
// Before Start it is never closed.
func (m *Master) Dead() <-chan struct{} {
	if m.server == nil {
		return nil
	}
	return m.server.Dead()
}

// TransportErr is the RPC server's health: nil while it serves.
func (m *Master) TransportErr() error {
	if m.server == nil {
		return nil
	}
	return m.server.Err()
}

// identity is who this master proves to be on the cluster protocol.
func (m *Master) identity() string {
	if h := m.ident.Load(); h != nil {
		return *h
	}
	return ""
}

// Addr is the master's RPC address.
func (m *Master) Addr() string { return m.cfg.Host }

// IsLeader reports whether this master's scheduling services are running.
func (m *Master) IsLeader() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur != nil
}

// Epoch is the current term's epoch, 0 when standby.
func (m *Master) Epoch() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return 0
	}
	return m.cur.epoch
}

// Notify wakes the command consumer and the cron scheduler after a
// command or a schedule was written.
func (m *Master) Notify() {
	m.mu.Lock()
	t := m.cur
	m.mu.Unlock()
	if t != nil {
		t.cons.Notify()
		t.cron.Notify()
	}
}

// Stop shuts the master down and returns once its goroutines have exited.
// Order: end the campaign (a leader's term is wound down as term.stop says:
// no new commands, runners stop, dispatches stop, reports in hand are
// persisted within a timeout), resign; then leave the registry; then close
// the transport (client, then server). Safe twice and before Start.
func (m *Master) Stop() { _ = m.life.Stop(m.stopTransport) }

func (m *Master) stopTransport() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = m.reg.Deregister(ctx, registry.RoleMaster, m.cfg.Host)
	cancel()
	m.client.Stop()
	m.server.Stop()
	m.log.Info("master stopped")
}

// campaign alternates between standby (campaigning) and leading a term,
// until ctx ends.
func (m *Master) campaign(ctx context.Context) {
	defer m.elector.Resign()
	for ctx.Err() == nil {
		t, err := m.elector.Campaign(ctx, m.cfg.Host)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("campaign failed; retrying", zap.Error(err))
				sleep(ctx, time.Second)
			}
			continue
		}
		m.lead(ctx, t)
		m.elector.Resign()
	}
}

// handle receives frames from workers on either the server or the client
// side of a connection. Reports reaching a standby are not acked: the
// worker re-sends them to the leader.
func (m *Master) handle(p remote.Peer, reqID uint64, msg message.Message) {
	switch msg.(type) {
	case message.Ack, message.Running, message.Result:
		if why := m.reportRefusal(p, msg); why != "" {
			m.log.Warn("report refused: only the worker that runs a task reports on it",
				zap.String("remote", p.RemoteAddr()), zap.String("report", fmt.Sprintf("%T", msg)), zap.String("why", why))
			return
		}
		m.mu.Lock()
		t := m.cur
		m.mu.Unlock()
		if r, ok := msg.(message.Result); ok {
			ref := zap.Inline(idsOnly{r.WorkflowInstanceID, r.TaskInstanceID})
			if t != nil {
				ref = t.taskRef(r.WorkflowInstanceID, r.TaskInstanceID)
			}
			logResult(m.log, p, r, ref)
		}
		if t != nil {
			t.events.Handle(p, msg)
		}
	case message.LogGone:
		m.answerLogGone(p, reqID, msg.(message.LogGone))
	case message.Nudge:
		m.Notify()
	case message.Ping:
		_ = p.Send(reqID, message.Pong{})
	}
}

// errBadDefinition marks a definition that does not build: reading it
// again will not help.
var errBadDefinition = errors.New("bad definition")

func (m *Master) definition(ctx context.Context, id int64) (*definition, error) {
	m.mu.Lock()
	d, ok := m.defs[id]
	m.mu.Unlock()
	if ok {
		return d, nil
	}
	wd, err := m.store.WorkflowDefinition(ctx, id)
	if err != nil {
		return nil, err
	}
	if d, err = newDefinition(wd.SpecJSON); err != nil {
		return nil, fmt.Errorf("workflow definition %d: %w: %w", id, errBadDefinition, err)
	}
	d.tenant, d.byAdmin = wd.ProjectTenant, wd.AuthorAdmin
	m.mu.Lock()
	if len(m.defs) >= maxCachedDefinitions {
		// Runners hold their own pointer: dropping any entry only costs a
		// parse the next time that version starts.
		for k := range m.defs {
			delete(m.defs, k)
			break
		}
	}
	m.defs[id] = d
	m.mu.Unlock()
	return d, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
