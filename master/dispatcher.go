package master

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

const (
	dispatchBatch    = 256             // items marked dispatched per transaction
	maxInflightSends = 64              // concurrent dispatch requests
	sendTimeout      = 5 * time.Second // one dispatch request
	blacklistFor     = 3 * time.Second // a worker that failed a send is skipped this long
)

// dispatcher owns the global priority queue. It pops the most urgent task
// instances, picks a worker of their group, records the choice in the DB and
// only then sends the dispatch frame (DESIGN.md step 5). Sends run on their
// own goroutines so a slow worker never stalls the queue; their outcomes come
// back through a mailbox to this goroutine, which alone touches the queue.
type dispatcher struct {
	log    *zap.Logger
	store  *store.Store
	reg    registry.Registry
	client *remote.Client
	self   string // master address for worker reports
	epoch  int64
	fenced func() // a write was refused for a newer term

	inbox   *mailbox[*taskItem]
	results *mailbox[sendResult]
	freed   *mailbox[string] // workers that finished a task

	// owned by run()
	queue     taskQueue
	parked    map[string][]*taskItem // by group: no live worker yet
	rr        map[string]int
	blacklist map[string]time.Time
	warned    map[string]bool // groups already logged as waiting for a worker
	inflight  map[string]int  // tasks of this term dispatched to a worker and not finished
	waiting   map[int64]bool  // instances whose reason says they wait for a worker group
	selector  Selector

	sends  sync.WaitGroup
	sem    chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

type sendResult struct {
	item *taskItem
	addr string
	err  error
}

func newDispatcher(log *zap.Logger, st *store.Store, reg registry.Registry, client *remote.Client, self string, epoch int64, fenced func()) *dispatcher {
	return &dispatcher{log: log.Named("dispatcher"), store: st, reg: reg, client: client, self: self, epoch: epoch, fenced: fenced,
		inbox: newMailbox[*taskItem](), results: newMailbox[sendResult](), freed: newMailbox[string](),
		inflight: map[string]int{}, waiting: map[int64]bool{}, selector: SelectRoundRobin,
		parked: map[string][]*taskItem{}, rr: map[string]int{}, blacklist: map[string]time.Time{}, warned: map[string]bool{},
		sem: make(chan struct{}, maxInflightSends)}
}

// Submit queues task instances that are written to the DB in state submitted.
func (d *dispatcher) Submit(items ...*taskItem) { d.inbox.Put(items...) }

func (d *dispatcher) Start(ctx context.Context) {
	ctx, d.cancel = context.WithCancel(ctx)
	d.done = make(chan struct{})
	go d.run(ctx)
}

// Stop stops popping, then waits for in-flight sends; their tasks stay in
// the DB as dispatched or submitted for recovery to settle.
func (d *dispatcher) Stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	<-d.done
	d.sends.Wait()
}

func (d *dispatcher) run(ctx context.Context) {
	defer close(d.done)
	changes, unsubscribe := d.reg.Changes()
	defer unsubscribe()
	var retry *time.Timer
	var retryC <-chan time.Time
	for {
		for _, it := range d.inbox.Drain() {
			d.queue.Push(it)
		}
		for _, r := range d.results.Drain() {
			d.handleResult(ctx, r)
		}
		freed := false
		for _, addr := range d.freed.Drain() {
			if d.inflight[addr] > 0 {
				d.inflight[addr]--
			}
			freed = true
		}
		if freed {
			d.unpark()
		}
		wait := d.dispatchSome(ctx)
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
		case <-changes:
			d.unpark()
		case <-retryC:
			retryC = nil
			d.unpark()
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
	now := time.Now()
	var batch []*taskItem
	var ds []store.Dispatch
	var addrs []string
	for d.queue.Len() > 0 && len(batch) < dispatchBatch {
		it := d.queue.Pop()
		addr, retryIn, none := d.pick(it.Group, now)
		if addr == "" {
			if retryIn > 0 && (wait == 0 || retryIn < wait) {
				wait = retryIn
			}
			if none {
				d.waitingForGroup(ctx, it)
			}
			d.parked[it.Group] = append(d.parked[it.Group], it)
			continue
		}
		if d.waiting[it.WorkflowInstanceID] {
			delete(d.waiting, it.WorkflowInstanceID)
			d.setReason(ctx, it.WorkflowInstanceID, "")
		}
		delete(d.warned, it.Group)
		d.inflight[addr]++ // counted now, so the rest of this batch sees it
		batch = append(batch, it)
		ds = append(ds, store.Dispatch{ID: it.TaskInstanceID, Host: addr, Time: now.UTC()})
		addrs = append(addrs, addr)
	}
	if len(batch) == 0 {
		return wait
	}
	failpoint.Hit(failpoint.BeforeRecordDispatch)
	ok, err := d.store.MarkDispatched(ctx, ds)
	if errors.Is(err, store.ErrFenced) {
		d.fenced() // never send what a newer term may own
		return 0
	}
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("record dispatch failed; retrying", zap.Error(err), zap.Int("tasks", len(batch)))
		}
		for i, it := range batch {
			d.inflight[addrs[i]]--
			d.queue.Push(it)
		}
		return time.Second
	}
	failpoint.Hit(failpoint.BeforeSendDispatch)
	for i, it := range batch {
		if !ok[i] {
			// No longer submitted (killed, or taken by another term): never send.
			d.inflight[addrs[i]]--
			continue
		}
		d.send(ctx, it, addrs[i])
	}
	return wait
}

// Worker selection (DESIGN.md step 5). Workers are skipped while
// blacklisted after a failed send, while overloaded (CPU or memory at or
// above overloadPercent in their last heartbeat), or while full: this
// master has limit = queueFactor x capacity of their tasks in flight
// (dispatched and not finished), so that under contention tasks wait in the
// priority queue, in priority order, instead of in a worker's FIFO. Among
// the rest:
//   - round_robin (default): in turn;
//   - random: uniformly;
//   - lower_weight: the lowest weight =
//     0.35 x CPU% + 0.25 x memory% + 0.40 x (100 x in flight / limit).
const (
	overloadPercent = 95.0
	queueFactor     = 2
)

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
// a registry change or a finished task).
func (d *dispatcher) pick(group string, now time.Time) (addr string, retryIn time.Duration, none bool) {
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
		if until, bad := d.blacklist[n.Addr]; bad {
			if now.Before(until) {
				if left := until.Sub(now); soonest == 0 || left < soonest {
					soonest = left
				}
				continue
			}
			delete(d.blacklist, n.Addr)
		}
		hb := n.Heartbeat
		if hb.CPU >= overloadPercent || hb.Memory >= overloadPercent {
			continue
		}
		load := 0.0
		if hb.Capacity > 0 {
			limit := queueFactor * hb.Capacity
			if d.inflight[n.Addr] >= limit {
				continue
			}
			load = 100 * float64(d.inflight[n.Addr]) / float64(limit)
		}
		live = append(live, cand{n.Addr, 0.35*hb.CPU + 0.25*hb.Memory + 0.40*load})
	}
	if len(live) == 0 {
		return "", soonest, none
	}
	switch d.selector {
	case SelectRandom:
		return live[rand.IntN(len(live))].addr, 0, false
	case SelectLowerWeight:
		best := live[0]
		for _, c := range live[1:] {
			if c.weight < best.weight {
				best = c
			}
		}
		return best.addr, 0, false
	}
	i := d.rr[group] % len(live)
	d.rr[group] = i + 1
	return live[i].addr, 0, false
}

// waitingForGroup logs once per group, and records once per instance (its
// reason field), that a task waits for a worker of a group with none.
func (d *dispatcher) waitingForGroup(ctx context.Context, it *taskItem) {
	if !d.warned[it.Group] {
		d.warned[it.Group] = true
		d.log.Warn("no worker in group; its tasks wait until one joins",
			zap.String("group", it.Group), zap.Int64("task_instance_id", it.TaskInstanceID))
	}
	if !d.waiting[it.WorkflowInstanceID] {
		d.waiting[it.WorkflowInstanceID] = true
		d.setReason(ctx, it.WorkflowInstanceID, fmt.Sprintf("waiting for a worker in group %q (none registered)", it.Group))
	}
}

func (d *dispatcher) setReason(ctx context.Context, id int64, reason string) {
	if err := d.store.SetInstanceReason(ctx, id, reason); err != nil {
		d.log.Warn("record instance reason", zap.Int64("workflow_instance_id", id), zap.Error(err))
		d.checkFenced(err)
	}
}

func (d *dispatcher) checkFenced(err error) {
	if errors.Is(err, store.ErrFenced) {
		d.fenced()
	}
}

// Finished tells the dispatcher that a task it sent to addr ended (result,
// failover or take-back), freeing a place on that worker.
func (d *dispatcher) Finished(addr string) { d.freed.Put(addr) }

func (d *dispatcher) send(ctx context.Context, it *taskItem, addr string) {
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	msg := it.Dispatch
	msg.MasterAddr = d.self
	msg.Epoch = d.epoch
	d.sends.Add(1)
	go func() {
		defer d.sends.Done()
		defer func() { <-d.sem }()
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		defer cancel()
		reply, err := d.client.Request(sctx, addr, msg)
		if err == nil {
			if r, ok := reply.(message.DispatchReply); !ok || !r.Accepted {
				err = refusedError(reply)
			}
		}
		if err != nil {
			d.results.Put(sendResult{item: it, addr: addr, err: err})
		}
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
	reset, err := d.store.ResetDispatch(ctx, r.item.TaskInstanceID, r.addr)
	if errors.Is(err, store.ErrFenced) {
		d.fenced()
		return
	}
	if err != nil {
		d.log.Error("take back failed dispatch", zap.Int64("task_instance_id", r.item.TaskInstanceID), zap.Error(err))
		return
	}
	if !reset {
		return // acked by that worker after all: it runs there
	}
	d.log.Warn("dispatch failed; trying another worker", zap.String("worker", r.addr),
		zap.Int64("task_instance_id", r.item.TaskInstanceID), zap.Error(r.err))
	d.blacklist[r.addr] = time.Now().Add(blacklistFor)
	if d.inflight[r.addr] > 0 {
		d.inflight[r.addr]--
	}
	d.client.Forget(r.addr)
	d.queue.Push(r.item)
}

func (d *dispatcher) unpark() {
	for g, items := range d.parked {
		for _, it := range items {
			d.queue.Push(it)
		}
		delete(d.parked, g)
	}
}

type refusedErr struct{ reason string }

func (e refusedErr) Error() string { return "worker refused dispatch: " + e.reason }

func refusedError(reply message.Message) error {
	if r, ok := reply.(message.DispatchReply); ok {
		return refusedErr{r.Reason}
	}
	return refusedErr{"unexpected reply"}
}
