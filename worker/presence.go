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
	// SessionTimeout is the registry's session timeout (for ZooKeeper,
	// ZKConfig.SessionTimeout); default 5s. A connection suspended for a
	// third of it drops the worker's tasks (see Presence).
	SessionTimeout time.Duration

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
//   - it keeps a task from running twice. The master fails over the tasks of
//     a worker whose registry session ended, a grace period (1s) after its
//     node vanished. So while the session is in doubt (Suspended, Expired)
//     dispatches are refused, and the tasks are dropped (killed with
//     SIGKILL, forgotten, no result) when the session expired or the
//     connection stayed suspended for SessionTimeout/3 plus half the
//     master's 1 s grace. Why: the client notices a dead connection at
//     the latest 2/3 of the timeout without traffic, so the server may
//     expire the session 1/3 of the timeout after Suspended, and the master
//     acts a grace period later; waiting a whole SessionTimeout would leave
//     both copies running for seconds. The extra half grace lets a
//     ZooKeeper ensemble elect a new leader (about 1.4 s here) without
//     killing every running task at the default 5 s timeout. After a drop the worker registers as a new incarnation (a
//     new StartTime), so that a master that did not see its node vanish
//     (the session survived after all, or the gap was too short to see)
//     still fails the dropped tasks over, as for a restarted worker. A new
//     session (Connected) re-registers by itself; heartbeats go on.
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
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 5 * time.Second
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

// suspendLimit is how long a suspended connection is trusted; see Presence.
func (p *Presence) suspendLimit() time.Duration {
	return p.opts.SessionTimeout/3 + 500*time.Millisecond
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
	var limit *time.Timer // runs while suspended
	stopLimit := func() {
		if limit != nil {
			limit.Stop()
			limit = nil
		}
	}
	defer stopLimit()
	for {
		var limitC <-chan time.Time
		if limit != nil {
			limitC = limit.C
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
				p.w.refuseDispatches("worker's registry connection is suspended")
				if limit == nil {
					limit = time.NewTimer(p.suspendLimit())
					p.log.Warn("registry connection suspended: refusing dispatches; the tasks are dropped unless it is back in time",
						zap.Duration("within", p.suspendLimit()))
				}
			case registry.Expired:
				stopLimit()
				p.w.refuseDispatches("worker's registry session expired")
				p.drop("registry session expired")
			case registry.Connected, registry.Reconnected:
				stopLimit()
				if p.w.refusal.Load() != nil {
					p.log.Info("registry connection back: accepting dispatches", zap.Stringer("state", s))
				}
				p.w.acceptDispatches()
				leader = p.follow(leader)
			}
		case <-limitC:
			limit = nil
			p.drop(fmt.Sprintf("registry connection suspended for %s", p.suspendLimit()))
		}
	}
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
