package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/worker/sysload"
)

// PresenceOptions tune a Presence. Zero values pick the defaults noted.
type PresenceOptions struct {
	// Interval is the heartbeat period; default 3s. The elected master is
	// also re-read this often, besides on every registry change.
	Interval time.Duration
	// Settle is how long dispatches stay refused once a new session
	// follows an expired one; default 1s, the master's grace. The new
	// session replaces the worker's node, which a master takes for a
	// worker that left: it fails over what it dispatched there before it
	// saw that, so the worker accepts nothing until the master has.
	Settle time.Duration

	// ProcDir is where host CPU, memory and load are read (stat, meminfo,
	// loadavg); "" is /proc. Only tests set it, to control what overload
	// protection sees; it is no user setting.
	ProcDir string
}

// Presence keeps a started Worker in the registry and in step with the
// cluster:
//
//   - it registers the worker (role worker, Addr = w.Host(), its groups)
//     and registers it again every Interval with a fresh heartbeat: host
//     CPU, memory and load from /proc, running tasks and capacity;
//   - it follows the elected master: masters campaign with their RPC
//     address, so a new leader id becomes w.SetMaster(id), which re-sends
//     the reports not yet persisted to the new leader at once;
//   - it keeps a task from running twice, and a task from being killed
//     for nothing. The master fails over the tasks of a worker whose
//     registry session ended, a grace period (1s) after its node vanished.
//     While the connection is suspended the session may still be alive
//     (ZooKeeper restarting, a short network cut): dispatches are refused,
//     but running tasks go on and their results still go to the master
//     (the worker re-sends them until a leader has persisted them). Only
//     Expired drops the tasks (killed with SIGKILL, forgotten, no result),
//     at once. The registry publishes Expired when the server says so, or
//     when it has not heard from the server for the session timeout
//     (registry.ZK counts from the last byte read), which is no later than
//     the server's own expiry, so the tasks are dead before the master
//     starts them elsewhere. After a drop the worker registers as a new
//     incarnation (a new StartTime), so that a master that did not see its
//     node vanish (the gap was too short to see) still fails the dropped
//     tasks over, as for a restarted worker. A new session (Connected)
//     re-registers by itself; heartbeats go on. Its first Settle accepts
//     no dispatch: the new registration replaced the old session's node,
//     and a master that sees that fails over what it had dispatched here
//     before it saw it, which would run twice if this worker had taken it.
//
// In the process, stop the Worker before its Presence and the registry
// after both: Worker.Stop kills the tasks while the node is still there,
// so the master cannot start them elsewhere before they are dead.
type Presence struct {
	w      *Worker
	reg    registry.Registry
	el     registry.Elector
	states registry.StateWatcher
	opts   PresenceOptions
	log    *zap.Logger

	renew chan struct{} // cap 1, watch -> heartbeat: register as a new incarnation

	life startstop.Base // owns the heartbeat and watch goroutines
	addr string
}

// NewPresence returns a presence for w, which must be started before
// Start. reg, el and states are usually one registry (registry.ZK, or
// registry.Memory in standalone).
func NewPresence(w *Worker, reg registry.Registry, el registry.Elector, states registry.StateWatcher,
	o PresenceOptions, log *zap.Logger) *Presence {
	if log == nil {
		log = zap.NewNop()
	}
	if o.Interval <= 0 {
		o.Interval = 3 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = time.Second
	}
	p := &Presence{w: w, reg: reg, el: el, states: states, opts: o, log: log.Named("presence"),
		renew: make(chan struct{}, 1)}
	p.life.Name, p.life.Log = "worker presence", p.log
	return p
}

// Start registers the worker, points it at the current leader, and starts
// heartbeating and watching; the worker is registered when it returns. ctx
// bounds this first registration only.
func (p *Presence) Start(ctx context.Context) error {
	switch {
	case p.w == nil || p.reg == nil || p.el == nil || p.states == nil:
		return errors.New("worker: presence needs a worker, a registry, an elector and a state watcher")
	case p.w.Host() == "":
		return errors.New("worker: presence: the worker is not started")
	}
	// From here a failed Start is final.
	return p.life.StartWith(context.WithoutCancel(ctx), func() error { return p.start(ctx) }, nil)
}

func (p *Presence) start(ctx context.Context) error {
	p.addr = p.w.Host()
	// Subscribed before the first look, so no change in between is missed.
	changes, cancelChanges := p.reg.Changes()
	states, cancelStates := p.states.States()
	unsubscribe := func() { cancelChanges(); cancelStates() }
	b := &beat{p: p, start: p.w.StartTime(), sampler: sysload.NewSampler(p.opts.ProcDir),
		limits: overloadLimits{cpu: float64(p.w.cfg.MaxCPUPercent), memory: float64(p.w.cfg.MaxMemoryPercent)}}
	if err := b.register(ctx); err != nil {
		unsubscribe()
		return fmt.Errorf("worker: register in the registry: %w", err)
	}
	leader := p.follow("")
	p.life.Go(func(ctx context.Context) { p.heartbeat(ctx, b) })
	p.life.Go(func(ctx context.Context) { p.watch(ctx, changes, states, leader, unsubscribe) })
	p.log.Info("registered", zap.String("addr", p.addr), zap.Strings("groups", p.w.Groups()),
		zap.Duration("interval", p.opts.Interval), zap.String("master", leader))
	return nil
}

// Stop ends heartbeating, then deregisters the worker. Order: the
// goroutines first and waited for, so that no heartbeat can register the
// node again after Deregister (bounded by a timeout). Safe twice and before
// Start.
func (p *Presence) Stop() { _ = p.life.Stop(p.deregister) }

func (p *Presence) deregister() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.reg.Deregister(ctx, registry.RoleWorker, p.addr); err != nil && !errors.Is(err, registry.ErrStopped) {
		p.log.Warn("deregister", zap.Error(err)) // the node goes with the session anyway
	}
	p.log.Info("deregistered", zap.String("addr", p.addr))
}

// beat is the heartbeat goroutine's state.
type beat struct {
	p       *Presence
	start   time.Time // the incarnation's start: the worker's, renewed by a drop
	sampler *sysload.Sampler
	failing bool // registering fails: logged once, and again on recovery
	noLoad  bool // /proc unreadable: logged once
	limits  overloadLimits
	over    bool // overloaded in the last heartbeat
}

// heartbeat registers the worker every Interval, and at once as a new
// incarnation when the watch goroutine dropped the tasks.
func (p *Presence) heartbeat(ctx context.Context, b *beat) {
	t := time.NewTicker(p.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.renew:
			b.start = time.Now().UTC()
			p.log.Info("registering as a new incarnation: the tasks of the previous one were dropped",
				zap.Time("start_time", b.start))
		}
		// Bounded: while suspended a registry may hold Register until it
		// reconnects; the next beat tries again with fresh figures.
		rctx, cancel := context.WithTimeout(ctx, p.opts.Interval)
		err := b.register(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil: // stopping
		case err != nil && !b.failing:
			b.failing = true
			p.log.Warn("heartbeat not written; retrying every interval", zap.Error(err))
		case err == nil && b.failing:
			b.failing = false
			p.log.Info("heartbeats written again")
		}
	}
}

func (b *beat) register(ctx context.Context) error {
	p := b.p
	u, err := b.sampler.Sample()
	if err != nil && !b.noLoad {
		b.noLoad = true
		p.log.Warn("host load not readable; heartbeats carry zeros for it", zap.Error(err))
	}
	st := p.w.Stats()
	over, why := b.limits.decide(b.over, u.CPU, u.Memory)
	if over != b.over {
		if over {
			p.log.Warn("overloaded: masters dispatch nothing here until the host is below the limits", zap.String("why", why))
		} else {
			p.log.Info("no longer overloaded", zap.Float64("cpu", u.CPU), zap.Float64("memory", u.Memory))
		}
		b.over = over
	}
	return p.reg.Register(ctx, registry.Node{
		Role:   registry.RoleWorker,
		Addr:   p.addr,
		Groups: p.w.Groups(),
		LogDir: p.w.LogDir(),
		// Read by masters' dispatch of non-admins' code (docs/security.md, item 1).
		TasksRunAsServer: p.w.Isolation().RunsAsServer,
		Heartbeat: registry.Heartbeat{
			CPU:            u.CPU,
			Memory:         u.Memory,
			Load:           u.Load,
			Running:        st.Running,
			Capacity:       st.Capacity,
			Overloaded:     over,
			OverloadReason: why,
			StartTime:      b.start,
			Time:           time.Now().UTC(),
		},
	})
}

// watch follows the leader and the connection state.
func (p *Presence) watch(ctx context.Context, changes <-chan struct{}, states <-chan registry.ConnState,
	leader string, unsubscribe func()) {
	defer unsubscribe()
	tick := time.NewTicker(p.opts.Interval)
	defer tick.Stop()
	expired := false // since the last session's end: the next Connected settles first
	var settle *time.Timer
	stopSettle := func() {
		if settle != nil {
			settle.Stop()
			settle = nil
		}
	}
	defer stopSettle()
	for {
		var settleC <-chan time.Time
		if settle != nil {
			settleC = settle.C
		}
		select {
		case <-ctx.Done():
			return
		case <-changes:
			leader = p.follow(leader)
		case <-tick.C:
			// Some electors (registry.Memory) do not signal a new leader
			// through Changes.
			leader = p.follow(leader)
		case s, ok := <-states:
			if !ok {
				states = nil
				continue
			}
			switch s {
			case registry.Suspended:
				stopSettle()
				p.w.refuseDispatches("worker's registry connection is suspended")
				p.log.Warn("registry connection suspended: refusing dispatches; running tasks go on unless the session expires",
					zap.Int("running", p.w.Stats().Running))
			case registry.Expired:
				stopSettle()
				expired = true
				p.w.refuseDispatches("worker's registry session expired")
				p.drop("registry session expired")
			case registry.Connected, registry.Reconnected:
				if s == registry.Connected && expired {
					expired = false
					stopSettle()
					settle = time.NewTimer(p.opts.Settle)
					p.w.refuseDispatches("worker's registry session is new; masters are catching up")
					p.log.Info("new registry session: accepting dispatches once masters have seen it",
						zap.Duration("after", p.opts.Settle))
				} else if settle == nil {
					p.accept(s)
				}
				leader = p.follow(leader)
			}
		case <-settleC:
			settle = nil
			p.accept(registry.Connected)
		}
	}
}

func (p *Presence) accept(s registry.ConnState) {
	if p.w.refusal.Load() != nil {
		p.log.Info("registry connection back: accepting dispatches", zap.Stringer("state", s))
	}
	p.w.acceptDispatches()
}

// drop kills and forgets every task, and asks for a new incarnation if
// there was any.
func (p *Presence) drop(reason string) {
	if p.w.dropAll(reason) == 0 {
		return
	}
	select {
	case p.renew <- struct{}{}:
	default: // one is pending already
	}
}

// follow points the worker at the elected master if it changed from prev;
// it returns the master now followed.
func (p *Presence) follow(prev string) string {
	if tr, ok := p.el.(registry.TermReader); ok {
		if id, epoch, ok := tr.LeaderTerm(); ok && id != "" {
			p.w.SetLeader(id, epoch)
		}
	}
	id, ok := p.el.Leader()
	if !ok || id == "" || id == prev {
		return prev
	}
	p.log.Info("following the elected master", zap.String("master", id), zap.String("previous", prev))
	p.w.SetMaster(id)
	return id
}
