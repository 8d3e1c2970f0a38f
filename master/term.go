package master

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/store"
)

// term is one leadership term: the scheduling services and the runners of
// the instances this master owns while it leads. Everything in it writes
// through a store view fenced by the term's epoch.
type term struct {
	m     *Master
	epoch int64
	store *store.Store
	log   *zap.Logger

	events *eventService
	disp   *dispatcher
	cons   *consumer
	watch  *workerWatch
	wheel  *wheel
	cron   *scheduler

	ctx    context.Context // ends with the term
	cancel context.CancelFunc

	mu      sync.Mutex
	runners map[int64]*runner

	fenceOnce sync.Once
	fencedCh  chan struct{}
}

// lead runs one term: record the epoch in the DB (fencing out older
// terms), start the services in order (task events and dispatcher, so that
// recovery can queue work and reports can land; recovery; then the command
// consumer, the cron scheduler and the worker watch), and wind them down in reverse when the
// term is lost, fenced or the master stops.
func (m *Master) lead(ctx context.Context, lt registry.Term) {
	var epoch int64
	ok := retry(ctx, m.log, "begin leader term", func() error {
		cur, err := m.store.CurrentTerm(ctx)
		if err != nil {
			return err
		}
		epoch = max(lt.Epoch, cur+1)
		err = m.store.BeginTerm(ctx, epoch, m.cfg.Host)
		if errors.Is(err, store.ErrFenced) {
			return nil // another master began a newer term: checked below
		}
		return err
	})
	if !ok {
		return
	}
	if cur, err := m.store.CurrentTerm(ctx); err != nil || cur != epoch {
		m.log.Warn("another master holds a newer term; standing by", zap.Int64("epoch", epoch), zap.Int64("current", cur))
		return
	}
	t := &term{m: m, epoch: epoch, store: m.store.Term(epoch), runners: map[int64]*runner{}, fencedCh: make(chan struct{}),
		log: m.log.With(zap.Int64("epoch", epoch))}
	t.ctx, t.cancel = context.WithCancel(ctx)
	t.disp = newDispatcher(t.log, t.store, m.reg, m.client, m.cfg.Host, epoch, t.fenced)
	t.disp.selector = m.cfg.Selector
	t.disp.groups = newTaskGroups(t.store, t.log)
	t.disp.maxTotal = m.cfg.MaxRunning
	if held, err := t.store.InFlight(ctx); err == nil {
		for _, tk := range held { // what workers hold from earlier terms takes places too
			t.disp.places.take(tk.ID, tk.Host, tk.TaskGroup)
		}
	}
	t.events = newEventService(t.log, t.store, t.deliver, t.fenced, t.disp.Finished)
	t.disp.failed = func(it *taskItem, addr, why string) {
		t.events.Failed(it.WorkflowInstanceID, it.TaskInstanceID, addr, why)
	}
	t.cons = newConsumer(t, m.cfg.PollInterval)
	t.watch = newWorkerWatch(t, m.cfg.WorkerLossGrace)
	t.wheel = newWheel(m.cfg.Clock, t.fire)
	t.cron = newScheduler(t, m.cfg.Clock)
	t.events.Start(t.ctx)
	t.disp.Start(t.ctx)
	t.wheel.Start(t.ctx)
	m.mu.Lock()
	m.cur = t
	m.mu.Unlock()
	t.log.Info("leading: recovering unfinished instances")
	if !t.recover() {
		t.stop()
		return
	}
	t.cons.Start(t.ctx)
	t.cron.Start(t.ctx)
	t.watch.Start(t.ctx)
	t.log.Info("leading", zap.String("master", m.cfg.Host))
	select {
	case <-lt.Lost:
		t.log.Warn("leadership lost; stopping scheduling")
	case <-t.fencedCh:
		t.log.Warn("a newer leader term exists; stopping scheduling and standing by")
	case <-ctx.Done():
	}
	t.stop()
}

// stop winds the term down in reverse start order; afterwards the master is
// a standby and nothing of this term acts.
func (t *term) stop() {
	t.m.mu.Lock()
	if t.m.cur == t {
		t.m.cur = nil
	}
	t.m.mu.Unlock()
	t.watch.Stop()
	t.cron.Stop()
	t.cons.Stop()
	t.cancel()
	t.mu.Lock()
	rs := make([]*runner, 0, len(t.runners))
	for _, r := range t.runners {
		rs = append(rs, r)
	}
	t.mu.Unlock()
	for _, r := range rs {
		<-r.done
	}
	t.wheel.Stop()
	t.disp.Stop()
	t.events.Stop()
	t.log.Info("term over")
}

// fenced is called by any service whose write was refused for a newer term.
func (t *term) fenced() { t.fenceOnce.Do(func() { close(t.fencedCh) }) }

// checkFenced reports err upward when it says the term is over.
func (t *term) checkFenced(err error) {
	if errors.Is(err, store.ErrFenced) {
		t.fenced()
	}
}

// recover adopts every unfinished instance and starts a runner for each,
// which rebuilds its state from the DB before acting.
func (t *term) recover() bool {
	var insts []model.WorkflowInstance
	ok := retry(t.ctx, t.log, "adopt unfinished instances", func() error {
		var err error
		insts, err = t.store.AdoptUnfinished(t.ctx, t.m.cfg.Host)
		if errors.Is(err, store.ErrFenced) {
			t.fenced()
			return nil
		}
		return err
	})
	if !ok {
		return false
	}
	for _, inst := range insts {
		if err := t.startInstance(inst, true); err != nil {
			t.log.Error("recover workflow instance", zap.Int64("workflow_instance_id", inst.ID), zap.Error(err))
		}
	}
	if len(insts) > 0 {
		t.log.Info("recovered unfinished instances", zap.Int("instances", len(insts)))
	}
	return true
}

// startInstance builds and starts the runner of an owned instance; with
// restore, the runner first rebuilds its state from the DB.
func (t *term) startInstance(inst model.WorkflowInstance, restore bool) error {
	mode := store.ActionKind("")
	if !restore {
		mode = "start"
	}
	return t.startInstanceMode(inst, mode)
}

// startInstanceMode starts a runner; mode "start" runs a new instance from
// its roots, "" rebuilds from the DB (recovery), and resume, rerun and
// recover_failed rebuild and then apply that action.
func (t *term) startInstanceMode(inst model.WorkflowInstance, mode store.ActionKind) error {
	def, err := t.m.definition(t.ctx, inst.DefinitionID)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return t.ctx.Err()
	}
	if _, dup := t.runners[inst.ID]; dup {
		return nil
	}
	r := newRunner(t, inst, def, mode)
	t.runners[inst.ID] = r
	go r.run(t.ctx)
	return nil
}

// deliver routes a task event to its runner; events for instances this
// term does not run are dropped (the DB already has them).
func (t *term) deliver(workflowID int64, ev taskEvent) {
	t.mu.Lock()
	r := t.runners[workflowID]
	t.mu.Unlock()
	if r != nil {
		r.events.Put(ev)
	}
}

// fire hands a due state-wheel deadline to its runner.
func (t *term) fire(d deadline) {
	t.mu.Lock()
	r := t.runners[d.WorkflowID]
	t.mu.Unlock()
	if r != nil {
		r.deadlines.Put(d)
	}
}

// forget removes an exiting runner; actions that reached it after its last
// look are handled as actions on a finished instance.
func (t *term) forget(r *runner) {
	t.mu.Lock()
	delete(t.runners, r.inst.ID)
	left := r.actions.Drain()
	t.mu.Unlock()
	if t.ctx.Err() != nil {
		return // the next term reads them from the DB state
	}
	for _, a := range left {
		t.reopen(a)
	}
}

// workerWatch turns a worker's disappearance from the registry (or its
// restart, seen as a new start time) into need_fault_tolerance for the
// tasks it held, after a grace period in which the worker, if only cut off,
// has killed them itself.
type workerWatch struct {
	t      *term
	grace  time.Duration
	cancel context.CancelFunc
	done   chan struct{}
}

func newWorkerWatch(t *term, grace time.Duration) *workerWatch {
	return &workerWatch{t: t, grace: grace}
}

func (w *workerWatch) Start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go w.run(ctx)
}

func (w *workerWatch) Stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	<-w.done
}

func (w *workerWatch) run(ctx context.Context) {
	defer close(w.done)
	changes, unsubscribe := w.t.m.reg.Changes()
	defer unsubscribe()
	known := w.snapshot()
	type loss struct {
		addr string
		at   time.Time
	}
	var pending []loss
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-timer.C:
		}
		now := time.Now()
		cur := w.snapshot()
		for addr, started := range known {
			if s, ok := cur[addr]; !ok || !s.Equal(started) {
				w.t.log.Warn("worker left or restarted; its tasks run elsewhere after the grace period",
					zap.String("worker", addr), zap.Duration("grace", w.grace))
				pending = append(pending, loss{addr, now})
			}
		}
		known = cur
		var wait time.Duration
		rest := pending[:0]
		for _, l := range pending {
			if left := l.at.Add(w.grace).Sub(now); left > 0 {
				rest = append(rest, l)
				if wait == 0 || left < wait {
					wait = left
				}
				continue
			}
			// Even if it is back: it left because its session ended, and a
			// worker that loses its session kills its tasks. Only what was
			// dispatched before the loss was seen is lost.
			w.failOver(ctx, l.addr, l.at)
		}
		pending = rest
		if wait > 0 {
			timer.Reset(wait)
		}
	}
}

func (w *workerWatch) snapshot() map[string]time.Time {
	out := map[string]time.Time{}
	for _, n := range w.t.m.reg.Nodes(registry.RoleWorker) {
		out[n.Addr] = n.Heartbeat.StartTime
	}
	return out
}

// failOver marks the tasks held by a lost worker need_fault_tolerance and
// tells their runners, which start new attempts.
func (w *workerWatch) failOver(ctx context.Context, addr string, lostAt time.Time) {
	t := w.t
	var tasks []model.TaskInstance
	var changed []int64
	ok := retry(ctx, t.log, "fail over tasks of a lost worker", func() error {
		var err error
		if tasks, err = t.store.TasksOnHost(ctx, addr); err != nil {
			return err
		}
		var ids []int64
		for _, tk := range tasks {
			if tk.DispatchTime == nil || tk.DispatchTime.Before(lostAt) {
				ids = append(ids, tk.ID)
			}
		}
		changed, err = t.store.NeedFaultTolerance(ctx, ids, addr)
		if errors.Is(err, store.ErrFenced) {
			t.fenced()
			return nil
		}
		return err
	})
	if !ok {
		return
	}
	byID := map[int64]model.TaskInstance{}
	for _, tk := range tasks {
		byID[tk.ID] = tk
	}
	for _, id := range changed {
		t.disp.Finished(id)
		t.deliver(byID[id].WorkflowInstanceID, taskEvent{TaskInstanceID: id, State: model.TaskNeedFaultTolerance})
	}
	t.log.Warn("failed over tasks of a lost worker", zap.String("worker", addr), zap.Int("tasks", len(changed)))
}
