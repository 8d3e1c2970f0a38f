package master

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
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
	pub    *publisher    // the event stream's publisher and webhooks (publisher.go)
	writes *runnerWrites // the runners' attempts and ends, in shared transactions
	logic  *logicTasks   // master-run task types: the masterTasks hook (logictasks.go)

	ctx    context.Context // ends with the term
	cancel context.CancelFunc

	mu      sync.Mutex
	runners map[int64]*runner
	kills   sync.WaitGroup // kill requests runners sent (killOnWorker); waited in stop

	fenceOnce sync.Once
	fencedCh  chan struct{}
}

// lead runs one term: record the election's epoch in the DB (fencing out
// older terms), start the services in order (task events and dispatcher, so
// that recovery can queue work and reports can land; recovery; then the
// command consumer, the cron scheduler and the worker watch), and wind them
// down in reverse when the term is lost, fenced or the master stops.
func (m *Master) lead(ctx context.Context, lt registry.Term) {
	tctx, cancel := termContext(ctx, lt.Lost)
	defer cancel()
	failpoint.Hit(failpoint.BeforeBeginTerm)
	epoch := lt.Epoch
	if !m.beginTerm(tctx, epoch) {
		return
	}
	metrics.SetLeader(true, epoch)
	defer metrics.SetLeader(false, epoch)
	t := &term{m: m, epoch: epoch, store: m.store.Term(epoch), runners: map[int64]*runner{}, fencedCh: make(chan struct{}),
		log: m.log.With(zap.Int64("epoch", epoch))}
	t.ctx, t.cancel = context.WithCancel(tctx)
	t.writes = newRunnerWrites(t.store, t.log)
	go t.writes.run(t.ctx) // waited in stop
	t.disp = newDispatcher(t.log, t.store, m.reg, m.client, m.cfg.Host, epoch, t.fenced)
	t.disp.selector = m.cfg.Selector
	t.disp.groups = newTaskGroups(t.store, t.log)
	t.disp.maxTotal = m.cfg.MaxRunning
	if held, err := t.store.InFlight(t.ctx); err == nil {
		for _, tk := range held { // what workers hold from earlier terms takes places too
			t.disp.places.take(tk.ID, tk.Host, tk.TaskGroup)
		}
	}
	t.events = newEventService(t.log, t.store, t.deliver, t.fenced, t.disp.Finished)
	t.events.about = t.taskRef
	t.disp.failed = func(it *taskItem, addr, why string) {
		t.events.Failed(it.WorkflowInstanceID, it.TaskInstanceID, addr, why)
	}
	t.cons = newConsumer(t, m.cfg.PollInterval)
	t.watch = newWorkerWatch(t, m.cfg.WorkerLossGrace)
	t.wheel = newWheel(m.cfg.Clock, t.fire)
	t.cron = newScheduler(t, m.cfg.Clock)
	t.pub = newPublisher(t.store, t.log, m.cfg.Events, t.fenced, m.definition)
	t.logic = newLogicTasks(t)
	if err := startstop.StartAll(t.ctx, t.events, t.disp, t.wheel, logicService{t.logic}); err != nil {
		t.log.Error("start term services", zap.Error(err))
		t.stop()
		return
	}
	m.mu.Lock()
	m.cur = t
	m.mu.Unlock()
	t.log.Info("leading: recovering unfinished instances")
	if !t.recover() {
		t.stop()
		return
	}
	if err := startstop.StartAll(t.ctx, t.cons, t.cron, t.pub); err != nil {
		t.log.Error("start term services", zap.Error(err))
		t.stop()
		return
	}
	failpoint.Hit(failpoint.BeforeWorkerWatch)
	if err := startstop.StartAll(t.ctx, t.watch); err != nil {
		t.log.Error("start term services", zap.Error(err))
		t.stop()
		return
	}
	t.log.Info("leading", zap.String("master", m.cfg.Host))
	select {
	case <-lt.Lost:
		t.log.Warn("leadership lost; stopping scheduling")
	case <-t.fencedCh: // logged by fenced
	case <-ctx.Done():
	}
	t.stop()
}

// termContext is the context of a term: it ends with ctx (the master
// stops) and the moment the election is lost, so that no step of the term,
// the fence write and its retries included, goes on without leadership.
// The returned cancel owns the goroutine watching lost: it returns once that
// goroutine exited.
func termContext(ctx context.Context, lost <-chan struct{}) (context.Context, context.CancelFunc) {
	tctx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-lost:
			cancel()
		case <-tctx.Done():
		}
	}()
	return tctx, func() { cancel(); <-exited }
}

// beginTerm records epoch, the one the election gave, as the current leader
// term: the fence write. It never records a later epoch of its own making,
// which could fence out a newer leader; a recorded term that is not older
// means another master was elected after this one (this master's election
// is stale), and it stands by.
func (m *Master) beginTerm(ctx context.Context, epoch int64) bool {
	if ctx.Err() != nil {
		m.log.Warn("the term ended (leadership lost or master stopping) before it was recorded", zap.Int64("epoch", epoch))
		return false
	}
	switch leaderWrite(ctx, m.log, "begin leader term", nil, func() error {
		return m.store.BeginTerm(ctx, epoch, m.cfg.Host)
	}) {
	case abandoned:
		m.log.Warn("the term ended (leadership lost or master stopping) before it was recorded", zap.Int64("epoch", epoch))
		return false
	case fencedOut:
		m.log.Warn("the recorded leader term is not older than this election's: another master was elected since; standing by",
			zap.Int64("epoch", epoch))
		return false
	}
	return true
}

// stop winds the term down in reverse start order; afterwards the master is
// a standby and nothing of this term acts. Order: stop intake (worker watch,
// cron, command consumer: nothing new starts); cancel the term's context and
// wait for every runner, then for the kill requests they sent; then the state
// wheel; then the dispatcher (no new sends; sends in flight end); last the
// task events, which persist the reports in hand within their timeout. Every
// service's Stop is safe when it never started (a term that failed early).
func (t *term) stop() {
	t.m.mu.Lock()
	if t.m.cur == t {
		t.m.cur = nil
	}
	t.m.mu.Unlock()
	t.watch.Stop()
	t.pub.Stop()
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
	<-t.writes.exited
	t.kills.Wait() // each bounded by queryTimeout on the cancelled term context
	logicService{t.logic}.Stop()
	t.wheel.Stop()
	t.disp.Stop()
	t.events.Stop()
	t.log.Info("term over")
}

// fenced is called by any service whose write was refused for a newer term;
// the loss is logged here, once per term.
func (t *term) fenced() {
	t.fenceOnce.Do(func() {
		t.log.Warn("lost the leader term: a newer term exists; stopping scheduling and standing by")
		close(t.fencedCh)
	})
}

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
	if leaderWrite(t.ctx, t.log, "adopt unfinished instances", t.fenced, func() error {
		var err error
		insts, err = t.store.AdoptUnfinished(t.ctx, t.m.cfg.Host)
		return err
	}) != written {
		return false
	}
	for _, inst := range insts {
		if err := t.startInstance(inst, true); err != nil {
			t.log.Error("recover workflow instance", logging.Instance(inst.ID, inst.Project, inst.Workflow), zap.Error(err))
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
	t     *term
	grace time.Duration
	life  startstop.Base
}

func newWorkerWatch(t *term, grace time.Duration) *workerWatch {
	w := &workerWatch{t: t, grace: grace}
	w.life.Name, w.life.Log = "worker watch", t.log
	return w
}

func (w *workerWatch) Start(ctx context.Context) error {
	if _, err := w.life.Begin(ctx); err != nil {
		return err
	}
	w.life.Go(w.run)
	return nil
}

func (w *workerWatch) Stop() { _ = w.life.Stop(nil) }

func (w *workerWatch) run(ctx context.Context) {
	changes, unsubscribe := w.t.m.reg.Changes()
	defer unsubscribe()
	type loss struct {
		addr string
		at   time.Time
	}
	var pending []loss
	// The baseline is what the DB says workers hold, not only who is live:
	// a worker that died before or during recovery (registered when its
	// tasks were looked at, gone now) is lost as well.
	var inFlight []model.TaskInstance
	if !retry(ctx, w.t.log, "read the hosts of tasks in flight", func() error {
		var err error
		inFlight, err = w.t.store.InFlight(ctx)
		return err
	}) {
		return
	}
	known := w.snapshot()
	start := time.Now()
	for _, addr := range goneHolders(inFlight, known) {
		w.t.log.Warn("a worker holding tasks is gone; its tasks run elsewhere after the grace period",
			zap.String("worker", addr), zap.Duration("grace", w.grace))
		pending = append(pending, loss{addr, start})
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	if len(pending) > 0 {
		timer.Reset(w.grace)
	}
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

// goneHolders returns, sorted, the hosts that hold tasks in flight by the
// DB but are not among the live workers.
func goneHolders(inFlight []model.TaskInstance, live map[string]time.Time) []string {
	var out []string
	for _, tk := range inFlight {
		if _, ok := live[tk.Host]; ok || tk.Host == "" || slices.Contains(out, tk.Host) {
			continue
		}
		out = append(out, tk.Host)
	}
	slices.Sort(out)
	return out
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
	if leaderWrite(ctx, t.log, "fail over tasks of a lost worker", t.fenced, func() error {
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
		return err
	}) != written {
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
