package master

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/remote/message"
)

const (
	dispatchBatch     = 256             // items marked dispatched per transaction
	maxSendsPerWorker = 32              // dispatch requests in flight to one worker
	sendTimeout       = 5 * time.Second // one dispatch request
	blacklistFor      = 3 * time.Second // a worker that failed a send is skipped this long
)

// dispatcher owns the global priority queue. It pops the most urgent task
// instances, picks a worker of their group, records the choice in the DB and
// only then sends the dispatch frame (docs/architecture.md, "Lifecycle of a run", step 5). Sends run on their
// own goroutines so a slow worker never stalls the queue; their outcomes come
// back through a mailbox to this goroutine, which alone touches the queue.
type dispatcher struct {
	log   *zap.Logger
	store dispatchStore
	reg   registry.Registry
	// workers sends the dispatch frames (the term's one talker to workers,
	// workers.go).
	workers *workers
	box     *secret.Box // seals secret params for the link (sealForLink); nil: none
	// failed reports a task failed on addr without running (its dispatch
	// was refused as invalid), through the result path.
	failed func(it *taskItem, addr, why string)

	inbox   *mailbox[*taskItem]
	results *mailbox[sendResult]
	freed   *mailbox[int64] // tasks that finished: their places are free
	forces  *mailbox[int64] // tasks to let through a full task group

	// owned by run()
	queue     taskQueue
	parked    map[string]*taskQueue // waiting for a worker of a group, or for a limit; each in priority order
	rr        map[string]int
	blacklist map[string]time.Time
	warned    map[string]bool  // groups already logged as waiting for a worker
	places    *places          // tasks in flight per worker, task group and in total
	groups    *taskGroups      // task group capacities
	maxTotal  int              // platform cap on tasks in flight (0: none)
	forced    map[int64]bool   // task instances let through a full task group
	waiting   map[int64]string // instances whose reason says why they wait: that reason
	reasons   map[int64]string // reasons noted this round, written by flushReasons
	sending   map[string]int   // dispatch requests in flight per worker
	selector  Selector
	gauge     dispatchGauges // the slow gauges' state (metrics.go)

	sends sync.WaitGroup
	life  startstop.Base
}

type sendResult struct {
	item *taskItem
	addr string
	err  error
}

func newDispatcher(log *zap.Logger, st dispatchStore, reg registry.Registry, w *workers) *dispatcher {
	return &dispatcher{log: log.Named("dispatcher"), store: st, reg: reg, workers: w,
		inbox: newMailbox[*taskItem](), results: newMailbox[sendResult](), freed: newMailbox[int64](), forces: newMailbox[int64](),
		places: newPlaces(), waiting: map[int64]string{}, forced: map[int64]bool{}, selector: SelectRoundRobin,
		parked: map[string]*taskQueue{}, rr: map[string]int{}, blacklist: map[string]time.Time{}, warned: map[string]bool{},
		sending: map[string]int{}}
}

// Submit queues task instances that are written to the DB in state submitted.
func (d *dispatcher) Submit(items ...*taskItem) {
	stampQueued(items)
	d.inbox.Put(items...)
}

func (d *dispatcher) Start(ctx context.Context) error {
	d.life.Name, d.life.Log = "dispatcher", d.log
	if _, err := d.life.Begin(ctx); err != nil {
		return err
	}
	d.life.Go(d.run)
	return nil
}

// Stop stops popping, then waits for in-flight sends (each bounded by
// sendTimeout, and cancelled with the loop's context); their tasks stay in
// the DB as dispatched or submitted for recovery to settle.
func (d *dispatcher) Stop() { _ = d.life.Stop(d.sends.Wait) }

func (d *dispatcher) run(ctx context.Context) {
	changes, unsubscribe := d.reg.Changes()
	defer unsubscribe()
	var retry *time.Timer
	var retryC <-chan time.Time
	for {
		for _, it := range d.inbox.Drain() {
			d.queue.Push(it)
		}
		sent := 0 // send places freed at workers that had none left
		for _, r := range d.results.Drain() {
			if d.sending[r.addr] >= maxSendsPerWorker {
				sent++
			}
			if d.sending[r.addr]--; d.sending[r.addr] <= 0 {
				delete(d.sending, r.addr)
			}
			if r.err != nil {
				d.handleResult(ctx, r)
			}
		}
		if sent > 0 {
			d.unparkTop(sent, nil)
		}
		freed, freedGroups := 0, map[string]int{}
		for _, id := range d.freed.Drain() {
			if pl, ok := d.places.release(id); ok {
				freed++
				if pl.group != "" {
					freedGroups[pl.group]++
				}
			}
		}
		for _, id := range d.forces.Drain() {
			d.forced[id] = true
			d.unparkAll() // the forced task may be anywhere in its list
		}
		if freed > 0 {
			d.unparkTop(freed, freedGroups)
		}
		wait := d.dispatchSome(ctx)
		d.gauges()
		if d.queue.Len() > 0 && wait == 0 {
			continue // more to pop right away
		}
		if wait > 0 && retryC == nil {
			retry = time.NewTimer(wait)
			retryC = retry.C
		}
		select {
		case <-ctx.Done():
			if retry != nil {
				retry.Stop()
			}
			return
		case <-d.inbox.Ready():
		case <-d.results.Ready():
		case <-d.freed.Ready():
		case <-d.forces.Ready():
		case <-changes:
			// Every heartbeat is a change: put back only as many parked tasks
			// as the workers now have places for, not all of them (re-parking
			// 100,000 waiting tasks every heartbeat cost a third of the
			// master's CPU in a fan-out of 100,000).
			d.unparkTop(d.freePlaces(time.Now()), nil)
		case <-retryC:
			retryC = nil
			d.unparkAll()
		}
	}
}

// dispatchSome pops up to one batch, records the chosen workers in one
// transaction and starts the sends. It returns how long to wait before
// retrying when only blacklisted workers were available.
func (d *dispatcher) dispatchSome(ctx context.Context) (wait time.Duration) {
	if d.queue.Len() == 0 {
		return 0
	}
	defer d.flushReasons(ctx)
	now := time.Now()
	var batch []*taskItem
	var ds []model.Dispatch
	var addrs []string
	for d.queue.Len() > 0 && len(batch) < dispatchBatch {
		it := d.queue.Pop()
		if key, why := d.admit(ctx, it); key != "" {
			d.park(ctx, key, why, it)
			continue
		}
		addr, retryIn, none, busy := d.pick(it.Group, it.isolated, now)
		if addr == "" {
			if retryIn > 0 && (wait == 0 || retryIn < wait) {
				wait = retryIn
			}
			if none {
				d.waitingForGroup(ctx, it)
			} else {
				d.noteWaiting(ctx, it.WorkflowInstanceID, busy.reason(it.Group))
			}
			d.parkAs("group:"+it.Group, it)
			continue
		}
		if d.waiting[it.WorkflowInstanceID] != "" {
			delete(d.waiting, it.WorkflowInstanceID)
			d.setReason(ctx, it.WorkflowInstanceID, "")
		}
		delete(d.warned, it.Group)
		delete(d.forced, it.TaskInstanceID)
		d.places.take(it.TaskInstanceID, addr, it.TaskGroup) // counted now, so the rest of this batch sees it
		batch = append(batch, it)
		ds = append(ds, model.Dispatch{ID: it.TaskInstanceID, Host: addr, Time: now.UTC()})
		addrs = append(addrs, addr)
	}
	if len(batch) == 0 {
		return wait
	}
	failpoint.Hit(failpoint.BeforeRecordDispatch)
	ok, err := d.store.TaskMarkDispatched(ctx, ds)
	if errors.Is(err, store.ErrFenced) {
		return 0 // never send what a newer term may own; the store view told the term
	}
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("record dispatch failed; retrying", zap.Error(err), zap.Int("tasks", len(batch)))
		}
		for _, it := range batch {
			d.places.release(it.TaskInstanceID)
			d.queue.Push(it)
		}
		return time.Second
	}
	failpoint.Hit(failpoint.BeforeSendDispatch)
	for i, it := range batch {
		if !ok[i] {
			// No longer submitted (killed, or taken by another term): never send.
			d.places.release(it.TaskInstanceID)
			continue
		}
		countDispatched(it, now)
		d.send(ctx, it, addrs[i])
	}
	return wait
}

// Worker selection (docs/architecture.md, "Dispatch: queue, limits and worker
// selection"). Workers are skipped while blacklisted after a failed send,
// while maxSendsPerWorker dispatch requests to them are unanswered, while
// overloaded (their last heartbeat says so: each worker decides with its own
// thresholds, off by default), or while full: this
// master has limit = queueFactor x capacity of their tasks in flight
// (dispatched and not finished), so that under contention tasks wait in the
// priority queue, in priority order, instead of in a worker's FIFO. Among
// the rest:
//   - round_robin (default): in turn;
//   - random: uniformly;
//   - lower_weight: the lowest weight =
//     0.35 x CPU% + 0.25 x memory% + 0.40 x (100 x in flight / limit).
const queueFactor = 2

// Selector names a worker selection strategy.
type Selector string

// Selectors.
const (
	SelectRoundRobin  Selector = "round_robin"
	SelectRandom      Selector = "random"
	SelectLowerWeight Selector = "lower_weight"
)

// ParseSelector checks a strategy name; "" is round_robin.
func ParseSelector(s string) (Selector, error) {
	switch Selector(s) {
	case "", SelectRoundRobin:
		return SelectRoundRobin, nil
	case SelectRandom, SelectLowerWeight:
		return Selector(s), nil
	}
	return "", fmt.Errorf("worker selector %q: want round_robin, random or lower_weight", s)
}

// pick chooses a worker of group. It returns "" and the time until a
// blacklisted worker is usable again when none is usable now (0: wait for
// a registry change or a finished task), and then why the group's workers
// are busy (none: there is no worker in the group).
//
// isolated skips the workers whose tasks run as their own OS user
// (registry.Node.TasksRunAsServer); they count as busy, so the task waits
// with a reason naming them.
func (d *dispatcher) pick(group string, isolated bool, now time.Time) (addr string, retryIn time.Duration, none bool, busy busyWorkers) {
	type cand struct {
		addr   string
		weight float64
	}
	var live []cand
	var soonest time.Duration
	none = true
	for _, n := range d.reg.Nodes(registry.RoleWorker) {
		if !n.InGroup(group) {
			continue
		}
		none = false
		if isolated && n.TasksRunAsServer {
			busy.unisolated++
			continue
		}
		if until, bad := d.blacklist[n.Addr]; bad {
			if now.Before(until) {
				if left := until.Sub(now); soonest == 0 || left < soonest {
					soonest = left
				}
				busy.failing++
				continue
			}
			delete(d.blacklist, n.Addr)
		}
		if d.sending[n.Addr] >= maxSendsPerWorker {
			busy.sending++ // its requests are slow to answer: it may be hung
			continue
		}
		hb := n.Heartbeat
		if hb.Overloaded {
			busy.overloaded++
			continue
		}
		load := 0.0
		if hb.Capacity > 0 {
			limit := queueFactor * hb.Capacity
			if d.places.worker[n.Addr] >= limit {
				busy.full++
				continue
			}
			load = 100 * float64(d.places.worker[n.Addr]) / float64(limit)
		}
		live = append(live, cand{n.Addr, 0.35*hb.CPU + 0.25*hb.Memory + 0.40*load})
	}
	if len(live) == 0 {
		return "", soonest, none, busy
	}
	switch d.selector {
	case SelectRandom:
		return live[rand.IntN(len(live))].addr, 0, false, busy
	case SelectLowerWeight:
		best := live[0]
		for _, c := range live[1:] {
			if c.weight < best.weight {
				best = c
			}
		}
		return best.addr, 0, false, busy
	}
	i := d.rr[group] % len(live)
	d.rr[group] = i + 1
	return live[i].addr, 0, false, busy
}

// busyWorkers counts why the workers of a group cannot take a task now.
type busyWorkers struct{ overloaded, full, sending, failing, unisolated int }

// reason is the instance reason for a task waiting on such workers.
func (b busyWorkers) reason(group string) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{b.overloaded, "overloaded"}, {b.full, "full"}, {b.sending, "not answering dispatches"}, {b.failing, "retried after a failed dispatch"},
		{b.unisolated, "running tasks as their own OS user (a non-admin's shell or python task waits for a worker that isolates it: " + model.SettingUnsandboxedCode + " is 0)"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return model.WaitBusyReason(group, strings.Join(parts, ", "))
}

// waitingForGroup logs once per group, and records once per instance (its
// reason field), that a task waits for a worker of a group with none.
func (d *dispatcher) waitingForGroup(ctx context.Context, it *taskItem) {
	if !d.warned[it.Group] {
		d.warned[it.Group] = true
		d.log.Warn("no worker in group; its tasks wait until one joins",
			zap.String("group", it.Group), taskRef(it))
	}
	d.noteWaiting(ctx, it.WorkflowInstanceID, model.WaitNoWorkerReason(it.Group))
}

// noteWaiting records why an instance's task waits, when that changed.
func (d *dispatcher) noteWaiting(ctx context.Context, id int64, why string) {
	if d.waiting[id] != why {
		d.waiting[id] = why
		d.setReason(ctx, id, why)
	}
}

// setReason notes instance id's reason for flushReasons, which writes a
// round's reasons together at its end.
func (d *dispatcher) setReason(_ context.Context, id int64, reason string) {
	if d.reasons == nil {
		d.reasons = map[int64]string{}
	}
	d.reasons[id] = reason
}

func (d *dispatcher) flushReasons(ctx context.Context) {
	if len(d.reasons) == 0 {
		return
	}
	if err := d.store.InstanceSetReasons(ctx, d.reasons); err != nil {
		d.log.Warn("record instance reasons", zap.Int("instances", len(d.reasons)), zap.Error(err))
	}
	clear(d.reasons)
}

// Finished tells the dispatcher that a task ended (result, failover, kill),
// freeing its places on its worker, in its task group and in the platform.
func (d *dispatcher) Finished(taskInstanceID int64) { d.freed.Put(taskInstanceID) }

// ForceStart lets a task waiting for a full task group through once.
func (d *dispatcher) ForceStart(taskInstanceID int64) { d.forces.Put(taskInstanceID) }

// admit checks the limits above workers: the platform cap and the task's
// task group. It returns why the task must wait, or "".
func (d *dispatcher) admit(ctx context.Context, it *taskItem) (key, why string) {
	if d.maxTotal > 0 && d.places.total() >= d.maxTotal {
		return "platform", model.WaitPlatformReason(d.maxTotal)
	}
	if it.TaskGroup == "" || d.forced[it.TaskInstanceID] {
		return "", ""
	}
	key = "tg:" + it.TaskGroup
	capacity, known := d.groups.capacity(ctx, it.TaskGroup)
	switch {
	case !known:
		return key, model.WaitTaskGroupReason(it.TaskGroup, 0, -1)
	case d.places.group[it.TaskGroup] >= capacity:
		return key, model.WaitTaskGroupReason(it.TaskGroup, d.places.group[it.TaskGroup], capacity)
	}
	return "", ""
}

// park holds a task back for a limit and records why on its instance. It
// goes back to the queue, in priority order, when places free up.
func (d *dispatcher) park(ctx context.Context, key, why string, it *taskItem) {
	d.parkAs(key, it)
	d.noteWaiting(ctx, it.WorkflowInstanceID, why)
}

// send starts the dispatch request on its own goroutine and never waits:
// the requests in flight to a worker are bounded by pick (maxSendsPerWorker),
// so a hung worker holds only its own sends, not the queue. Every outcome
// comes back through results, which frees the send place.
func (d *dispatcher) send(ctx context.Context, it *taskItem, addr string) {
	msg, err := sealForLink(d.box, it.Dispatch)
	d.sending[addr]++
	if err != nil && it.unsendable == "" {
		it.unsendable = err.Error()
	}
	if it.unsendable != "" { // failed as a worker's refusal of an invalid dispatch is
		d.results.Put(sendResult{item: it, addr: addr, err: refusedErr{it.unsendable, true}})
		return
	}
	d.sends.Add(1)
	go func() {
		defer d.sends.Done()
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		defer cancel()
		err := d.workers.dispatch(sctx, addr, msg)
		d.results.Put(sendResult{item: it, addr: addr, err: err})
	}()
}

// handleResult takes back a task whose send failed, unless the worker acked
// it meanwhile. Workers start a task only after its ack is persisted, so a
// worker that got the frame after all is refused when it acks, and the task
// runs once.
func (d *dispatcher) handleResult(ctx context.Context, r sendResult) {
	if ctx.Err() != nil {
		return
	}
	var ref refusedErr
	if errors.As(r.err, &ref) && ref.invalid {
		d.handleInvalid(ctx, r, ref.reason)
		return
	}
	reset, err := d.store.TaskResetDispatch(ctx, r.item.TaskInstanceID, r.addr)
	if errors.Is(err, store.ErrFenced) {
		return
	}
	if err != nil {
		d.log.Error("take back failed dispatch", taskRef(r.item), zap.Error(err))
		return
	}
	if !reset {
		return // acked by that worker after all: it runs there
	}
	d.log.Warn("dispatch failed; trying another worker", zap.String("worker", r.addr),
		taskRef(r.item), zap.Error(r.err))
	d.blacklist[r.addr] = time.Now().Add(blacklistFor)
	d.places.release(r.item.TaskInstanceID)
	if errors.Is(r.err, context.DeadlineExceeded) {
		// The connection may be hung: redial next time. Only then: the
		// connection carries other dispatches, which a close would fail.
		d.workers.forget(r.addr)
	}
	d.queue.Push(r.item)
}

// handleInvalid fails a task whose dispatch the worker refused as one that
// can run nowhere, with the worker's reason on its instance. The failure
// goes through the result path like a worker's (the runner's retries and
// failure strategy apply; the instance's reason gives why) and frees its
// places there. The worker and its connection are left alone: they are fine.
func (d *dispatcher) handleInvalid(ctx context.Context, r sendResult, reason string) {
	d.log.Warn("worker refused dispatch as invalid; failing the task", zap.String("worker", r.addr),
		taskRef(r.item), zap.String("reason", reason))
	// Freed now: the result may not apply (the task was killed meanwhile),
	// and then no Finished follows.
	d.places.release(r.item.TaskInstanceID)
	if d.failed != nil {
		d.failed(r.item, r.addr, fmt.Sprintf("worker %s refused its dispatch: %s", r.addr, reason))
	}
}

func (d *dispatcher) parkAs(key string, it *taskItem) {
	q := d.parked[key]
	if q == nil {
		q = &taskQueue{}
		d.parked[key] = q
	}
	q.Push(it)
}

// unparkAll puts every parked task back in the queue: the set of workers
// changed, or a blacklist expired.
func (d *dispatcher) unparkAll() {
	for key, q := range d.parked {
		for it := q.Pop(); it != nil; it = q.Pop() {
			d.queue.Push(it)
		}
		delete(d.parked, key)
	}
}

// freePlaces is how many more tasks the usable workers take now, as pick
// counts them; a worker with no capacity of its own counts as unbounded.
func (d *dispatcher) freePlaces(now time.Time) int {
	free := 0
	for _, n := range d.reg.Nodes(registry.RoleWorker) {
		if until, bad := d.blacklist[n.Addr]; bad && now.Before(until) || d.sending[n.Addr] >= maxSendsPerWorker || n.Heartbeat.Overloaded {
			continue
		}
		if n.Heartbeat.Capacity <= 0 {
			return math.MaxInt32
		}
		free += max(queueFactor*n.Heartbeat.Capacity-d.places.worker[n.Addr], 0)
	}
	return free
}

// unparkTop puts back the n most urgent tasks of each list waiting for a
// worker or the platform cap, and of each task group that freed places,
// after n places freed up: enough to fill them in priority order without
// moving every waiting task (10,000 queued behind a full worker stay
// parked).
func (d *dispatcher) unparkTop(n int, groups map[string]int) {
	for key, q := range d.parked {
		k := n
		if g, ok := strings.CutPrefix(key, "tg:"); ok {
			k = groups[g]
		}
		for i := 0; i < k && q.Len() > 0; i++ {
			d.queue.Push(q.Pop())
		}
	}
}

type refusedErr struct {
	reason  string
	invalid bool // the dispatch itself: fail the task
}

func (e refusedErr) Error() string { return "worker refused dispatch: " + e.reason }

func refusedError(reply message.Message) error {
	if r, ok := reply.(message.DispatchReply); ok {
		return refusedErr{r.Reason, r.Invalid}
	}
	return refusedErr{"unexpected reply", false}
}
