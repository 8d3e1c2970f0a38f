// Package master is the scheduling side of Beluga: the command consumer,
// one runner goroutine per workflow instance, the global priority queue and
// its dispatcher, and the task event service that persists worker reports.
package master

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/store"
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
	// written by an API in another process. Default 1s.
	PollInterval time.Duration
}

// Master schedules workflow instances. Start runs every service; cluster
// mode (leader election) switches the scheduling services on and off.
type Master struct {
	cfg   Config
	log   *zap.Logger
	store *store.Store
	reg   registry.Registry

	server *remote.Server
	client *remote.Client
	events *eventService
	disp   *dispatcher
	cons   *consumer

	mu       sync.Mutex
	runners  map[int64]*runner
	defs     map[int64]*definition
	runCtx   context.Context
	cancel   context.CancelFunc
	started  bool
	stopOnce sync.Once
}

// New builds a master; nothing runs until Start.
func New(cfg Config, st *store.Store, reg registry.Registry, log *zap.Logger) *Master {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	return &Master{cfg: cfg, log: log.Named("master"), store: st, reg: reg,
		runners: map[int64]*runner{}, defs: map[int64]*definition{}}
}

// Start brings the services up in dependency order: transport, task event
// service (so reports can land), dispatcher, then the command consumer that
// creates work.
func (m *Master) Start(ctx context.Context) error {
	m.runCtx, m.cancel = context.WithCancel(context.Background())
	m.events = newEventService(m.log, m.store, m.deliver)
	opts := remote.Options{Log: m.log}
	m.server = remote.NewServer(m.cfg.Listen, m.handle, opts)
	m.client = remote.NewClient(m.handle, opts)
	if err := m.server.Start(ctx); err != nil {
		return fmt.Errorf("master rpc server: %w", err)
	}
	if err := m.client.Start(ctx); err != nil {
		m.server.Stop()
		return fmt.Errorf("master rpc client: %w", err)
	}
	if m.cfg.Host == "" {
		m.cfg.Host = m.server.Addr()
	}
	m.disp = newDispatcher(m.log, m.store, m.reg, m.client, m.cfg.Host, 0)
	m.cons = newConsumer(m, m.cfg.PollInterval)
	for _, s := range []interface{ Start(context.Context) error }{m.events, m.disp, m.cons} {
		if err := s.Start(m.runCtx); err != nil {
			m.Stop()
			return err
		}
	}
	m.mu.Lock()
	m.started = true
	m.mu.Unlock()
	m.log.Info("master started", zap.String("rpc", m.cfg.Host))
	return nil
}

// Addr is the master's RPC address.
func (m *Master) Addr() string { return m.cfg.Host }

// Notify wakes the command consumer after a command was written.
func (m *Master) Notify() {
	if m.cons != nil {
		m.cons.Notify()
	}
}

// Stop shuts down in reverse: stop taking commands, stop the runners (their
// instances stay running in the DB for recovery), stop dispatching, persist
// and ack the reports in hand, then close the transport.
func (m *Master) Stop() {
	m.mu.Lock()
	if m.cancel == nil {
		m.mu.Unlock()
		return
	}
	m.started = false
	m.mu.Unlock()
	m.stopOnce.Do(m.stop)
}

func (m *Master) stop() {
	if m.cons != nil {
		m.cons.Stop()
	}
	m.cancel()
	m.mu.Lock()
	rs := make([]*runner, 0, len(m.runners))
	for _, r := range m.runners {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	for _, r := range rs {
		<-r.done
	}
	if m.disp != nil {
		m.disp.Stop()
	}
	if m.events != nil {
		m.events.Stop()
	}
	if m.client != nil {
		m.client.Stop()
	}
	if m.server != nil {
		m.server.Stop()
	}
	m.log.Info("master stopped")
}

// handle receives frames from workers on either the server or the client
// side of a connection.
func (m *Master) handle(p remote.Peer, reqID uint64, msg message.Message) {
	switch msg.(type) {
	case message.Ack, message.Running, message.Result:
		m.events.Handle(p, msg)
	case message.Ping:
		_ = p.Send(reqID, message.Pong{})
	}
}

// startInstance builds and starts the runner of a claimed instance.
func (m *Master) startInstance(inst model.WorkflowInstance) error {
	def, err := m.definition(inst.DefinitionID)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started && m.cons == nil {
		return fmt.Errorf("master stopped")
	}
	if _, dup := m.runners[inst.ID]; dup {
		return nil
	}
	r := newRunner(m, inst, def)
	m.runners[inst.ID] = r
	go r.run(m.runCtx)
	return nil
}

func (m *Master) definition(id int64) (*definition, error) {
	m.mu.Lock()
	d, ok := m.defs[id]
	m.mu.Unlock()
	if ok {
		return d, nil
	}
	wd, err := m.store.GetDefinition(m.runCtx, id)
	if err != nil {
		return nil, err
	}
	if d, err = newDefinition(wd.SpecJSON); err != nil {
		return nil, fmt.Errorf("workflow definition %d: %w", id, err)
	}
	m.mu.Lock()
	m.defs[id] = d
	m.mu.Unlock()
	return d, nil
}

// deliver routes a task event to its runner; events for instances this
// master does not run are dropped (the DB already has them).
func (m *Master) deliver(workflowID int64, ev taskEvent) {
	m.mu.Lock()
	r := m.runners[workflowID]
	m.mu.Unlock()
	if r != nil {
		r.events.Put(ev)
	}
}

func (m *Master) forget(workflowID int64) {
	m.mu.Lock()
	delete(m.runners, workflowID)
	m.mu.Unlock()
}
