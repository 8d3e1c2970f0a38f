package master

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// term is one leadership term: the scheduling services and the runners of
// the instances this master owns while it leads. Everything in it writes
// through a store view fenced by the term's epoch.
type term struct {
	// From its master, fixed while it runs (the term holds no pointer to
	// the master: the master alone says which term is current).
	host     string
	box      *secret.Box // opens secret params for dispatches
	asServer bool        // Config.TasksRunAsServer
	reg      registry.Registry
	hook     masterTasks                                       // replaces logic as the master-task hook (tests); nil: logic
	defs     func(context.Context, int64) (*definition, error) // the master's shared cache of parsed versions

	epoch int64
	store TermStore
	log   *zap.Logger

	events *eventService
	disp   *dispatcher
	cons   *consumer
	watch  *workerWatch
	wheel  *wheel
	cron   *scheduler
	// workers is the one talker to workers: dispatches, kills, queries
	// (workers.go); kills in flight are waited for in stop.
	workers *workers
	pub     *publisher        // the event stream's publisher and webhooks (publisher.go)
	writes  *runnerWrites     // the runners' attempts and ends, in shared transactions
	logic   *logicTasks       // master-run task types: the masterTasks hook (logictasks.go)
	retain  *retentionSweep   // the periodic retention purge (retention.go)
	git     *gitPoller        // the periodic Git syncs (gitpoll.go)
	data    *datasetEvaluator // the data-aware trigger (datasets.go)

	ctx    context.Context // ends with the term
	cancel context.CancelFunc

	mu      sync.Mutex
	runners map[int64]*runner

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
	t := &term{host: m.cfg.Host, box: m.box, asServer: m.cfg.TasksRunAsServer, reg: m.reg, hook: m.logic, defs: m.definition,
		epoch: epoch, runners: map[int64]*runner{}, fencedCh: make(chan struct{}),
		log: m.log.With(zap.Int64("epoch", epoch))}
	// The master stops being a leader as the term begins to wind down
	// (standby questions are answered so from then on).
	stop := func() {
		m.drop(t)
		t.stop()
	}
	// The view signals the fence itself: every service writing through it
	// stops the term by getting ErrFenced, without telling anyone.
	t.store = m.store.TermFenced(epoch, t.fenced)
	t.ctx, t.cancel = context.WithCancel(tctx)
	t.workers = newWorkers(t.ctx, t.log, m.client, m.reg, m.cfg.Host, epoch)
	t.writes = newRunnerWrites(t.store, t.log)
	go t.writes.run(t.ctx) // waited in stop
	t.disp = newDispatcher(t.log, t.store, m.reg, t.workers)
	t.disp.selector = m.cfg.Selector
	t.disp.box = m.box
	t.disp.groups = newTaskGroups(t.store, t.log)
	t.disp.maxTotal = m.cfg.MaxRunning
	if held, err := t.store.TaskInFlight(t.ctx); err == nil {
		for _, tk := range held { // what workers hold from earlier terms takes places too
			t.disp.places.take(tk.ID, tk.Host, tk.TaskGroup)
		}
	}
	t.events = newEventService(t.log, t.store, t.deliver, t.taskEnded)
	t.events.about = t.taskRef
	t.disp.failed = func(it *taskItem, addr, why string) {
		t.events.Failed(it.WorkflowInstanceID, it.TaskInstanceID, addr, why)
	}
	t.cons = newConsumer(t, t.store, t.log, m.cfg.Host, epoch, m.cfg.PollInterval)
	t.watch = newWorkerWatch(t.log, m.reg, t.store, t.taskEnded, m.cfg.WorkerLossGrace)
	t.wheel = newWheel(m.cfg.Clock, t.fire)
	t.cron = newScheduler(t, t.store, t.log, m.cfg.Clock)
	t.pub = newPublisher(t.store, t.log, m.cfg.Events, m.definition)
	t.logic = newLogicTasks(t.log, t.store, t.taskEnded, t.cons.Notify)
	t.retain = newRetentionSweep(t.store, m.cfg.Clock, t.log, m.cfg.RetentionCheck)
	t.git = newGitPoller(t.store, m.cfg.GitSync, m.cfg.GitSyncTick, t.log)
	t.data = newDatasetEvaluator(t, t.store, t.log)
	if err := startstop.StartAll(t.ctx, t.events, t.disp, t.wheel, logicService{t.logic}); err != nil {
		t.log.Error("start term services", zap.Error(err))
		stop()
		return
	}
	m.mu.Lock()
	m.cur = t
	m.mu.Unlock()
	t.log.Info("leading: recovering unfinished instances")
	if !t.recover() {
		stop()
		return
	}
	if err := startstop.StartAll(t.ctx, t.cons, t.cron, t.pub, t.git, t.retain, t.data); err != nil {
		t.log.Error("start term services", zap.Error(err))
		stop()
		return
	}
	failpoint.Hit(failpoint.BeforeWorkerWatch)
	if err := startstop.StartAll(t.ctx, t.watch); err != nil {
		t.log.Error("start term services", zap.Error(err))
		stop()
		return
	}
	t.log.Info("leading", zap.String("master", m.cfg.Host))
	select {
	case <-lt.Lost:
		t.log.Warn("leadership lost; stopping scheduling")
	case <-t.fencedCh: // logged by fenced
	case <-ctx.Done():
	}
	stop()
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
	switch leaderWrite(ctx, m.log, "begin leader term", func() error {
		return m.store.TermBegin(ctx, epoch, m.cfg.Host)
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

// drop makes the master a standby if t is its current term.
func (m *Master) drop(t *term) {
	m.mu.Lock()
	if m.cur == t {
		m.cur = nil
	}
	m.mu.Unlock()
}

// stop winds the term down in reverse start order; afterwards the master is
// a standby and nothing of this term acts. Order: stop the retention sweep
// (its batch in hand ends with the term's context); stop intake (worker watch,
// Git syncs, cron, command consumer: nothing new starts); cancel the term's context and
// wait for every runner, then for the kill requests they sent; then the state
// wheel; then the dispatcher (no new sends; sends in flight end); last the
// task events, which persist the reports in hand within their timeout. Every
// service's Stop is safe when it never started (a term that failed early).
func (t *term) stop() {
	t.retain.Stop()
	t.data.Stop()
	t.watch.Stop()
	t.git.Stop()
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
	t.workers.wait() // kills in flight, each bounded by queryTimeout on the cancelled term context
	logicService{t.logic}.Stop()
	t.wheel.Stop()
	t.disp.Stop()
	t.events.Stop()
	t.log.Info("term over")
}

// fenced is called by the term's store view (store.OnFenced) whenever a
// write was refused for a newer term; the loss is logged here, once per term.
func (t *term) fenced() {
	t.fenceOnce.Do(func() {
		t.log.Warn("lost the leader term: a newer term exists; stopping scheduling and standing by")
		close(t.fencedCh)
	})
}

// recover adopts every unfinished instance and starts a runner for each,
// which rebuilds its state from the DB before acting.
func (t *term) recover() bool {
	var insts []model.WorkflowInstance
	if leaderWrite(t.ctx, t.log, "adopt unfinished instances", func() error {
		var err error
		insts, err = t.store.InstanceAdoptUnfinished(t.ctx, t.host)
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
	mode := model.ActionKind("")
	if !restore {
		mode = "start"
	}
	return t.startInstanceMode(inst, mode)
}

// startInstanceMode starts a runner; mode "start" runs a new instance from
// its roots, "" rebuilds from the DB (recovery), and resume, rerun and
// recover_failed rebuild and then apply that action.
func (t *term) startInstanceMode(inst model.WorkflowInstance, mode model.ActionKind) error {
	// The instance is this term's already (claimed, released or adopted):
	// a DB blip here must not leave it without a runner until the next
	// term, so the read is retried as long as the term lasts.
	var def *definition
	var err error
	if !retry(t.ctx, t.log, "read workflow definition", func() error {
		def, err = t.defs(t.ctx, inst.DefinitionID)
		if errors.Is(err, errBadDefinition) {
			return nil
		}
		return err
	}) {
		return t.ctx.Err()
	}
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
	r := newRunner(t, t.log, inst, def, mode)
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

// taskEnded is the one way a task's end (or loss) leaves whoever saw it: a
// worker's result (events), a lost worker (failOver, rebuild), a kill its
// worker had nothing for (killOnWorker), a master-run task's end
// (logicTasks). Its places on a worker, in its task group and in the
// platform are freed first, then its runner hears of it, so a runner that
// starts the next task never finds the place still taken.
func (t *term) taskEnded(workflowID int64, ev taskEvent) {
	t.disp.Finished(ev.TaskInstanceID)
	t.deliver(workflowID, ev)
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
