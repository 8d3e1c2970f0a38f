package master

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
)

// runnerWrites gathers the runners' new attempts and instance ends into
// shared transactions (store.TaskWriteRunnerBatch): a thousand concurrent
// chains each write one attempt per step, and one commit per write was
// most of their cost. It adds no wait: what queued while the last
// transaction ran goes in the next one. A runner still goes on only once
// its own write committed, so crash points see what they saw before.
// Its goroutines own the queue's taking; callers block on their reply.
type runnerWrites struct {
	store  writeStore
	log    *zap.Logger
	reqs   *mailbox[*runnerWrite]
	exited chan struct{} // closed when run returns: no request is taken after
}

// runnerWrite is one runner's write and where its result goes.
type runnerWrite struct {
	attempt *store.AttemptWrite
	end     *store.InstanceEnd
	done    chan error // buffered: the writer never blocks on a reply
}

func newRunnerWrites(st writeStore, log *zap.Logger) *runnerWrites {
	return &runnerWrites{store: st, log: log.Named("runner writes"), reqs: newMailbox[*runnerWrite](), exited: make(chan struct{})}
}

// batchRows bounds the rows one shared transaction writes (as flushMax
// bounds one runner's): a long write holds SQLite's only write lock.
const batchRows = flushMax

// run runs the writers until ctx ends: as many as the store writes at
// once (SQLite one; a server database several in parallel, as the runners'
// own transactions did), each gathering what queued meanwhile.
func (w *runnerWrites) run(ctx context.Context) {
	defer close(w.exited)
	var wg sync.WaitGroup
	for range w.store.WriteConcurrency() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.writer(ctx)
		}()
	}
	wg.Wait()
}

// writer takes what is queued, writes it, and looks again; an idle writer
// is woken by the queue (mailbox: a Put wakes one taker, and a busy one
// finds the wake-up when it looks again).
func (w *runnerWrites) writer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			for _, q := range w.reqs.Drain() {
				q.done <- ctx.Err()
			}
			return
		case <-w.reqs.Ready():
		}
		for batch := w.reqs.Drain(); len(batch) > 0; {
			n := takeBatch(batch)
			w.write(ctx, batch[:n])
			batch = batch[n:]
		}
	}
}

// takeBatch is how many of qs (at least one) go in one transaction.
func takeBatch(qs []*runnerWrite) int {
	rows := 0
	for i, q := range qs {
		if q.attempt != nil {
			rows += len(q.attempt.Next)
		}
		if i > 0 && rows > batchRows {
			return i
		}
	}
	return len(qs)
}

// write commits qs together; when that fails for another reason than a
// newer term, each is written alone so that one bad write fails only its
// own runner (which retries it).
func (w *runnerWrites) write(ctx context.Context, qs []*runnerWrite) {
	err := w.writeAll(ctx, qs)
	if err == nil || len(qs) == 1 || errors.Is(err, store.ErrFenced) {
		for _, q := range qs {
			q.done <- err
		}
		return
	}
	w.log.Warn("shared write failed; writing each alone", zap.Int("writes", len(qs)), zap.Error(err))
	for i, q := range qs {
		q.done <- w.writeAll(ctx, qs[i:i+1])
	}
}

func (w *runnerWrites) writeAll(ctx context.Context, qs []*runnerWrite) error {
	var as []store.AttemptWrite
	var es []store.InstanceEnd
	for _, q := range qs {
		if q.attempt != nil {
			as = append(as, *q.attempt)
		}
		if q.end != nil {
			es = append(es, *q.end)
		}
	}
	return w.store.TaskWriteRunnerBatch(ctx, as, es)
}

// do queues q and waits for its result; after the writer stopped (the
// term ended) it answers ctx's error.
func (w *runnerWrites) do(ctx context.Context, q *runnerWrite) error {
	q.done = make(chan error, 1)
	w.reqs.Put(q)
	select {
	case err := <-q.done:
		return err
	case <-w.exited:
		select {
		case err := <-q.done:
			return err
		default:
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return context.Canceled
	}
}

// attempts is store.TaskInsertAttempts through the shared writer.
func (w *runnerWrites) attempts(ctx context.Context, a store.AttemptWrite) error {
	return w.do(ctx, &runnerWrite{attempt: &a})
}

// finish is store.InstanceFinish through the shared writer.
func (w *runnerWrites) finish(ctx context.Context, e store.InstanceEnd) error {
	return w.do(ctx, &runnerWrite{end: &e})
}
