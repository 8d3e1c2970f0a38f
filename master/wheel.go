package master

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// Clock is the time source of the state wheel and the cron scheduler;
// tests inject a fake one.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// wheelKind says what a deadline is for.
type wheelKind uint8

const (
	retryDue        wheelKind = iota + 1 // a delayed attempt may be submitted
	taskTimeout                          // a task ran past its timeout
	workflowTimeout                      // an instance ran past its timeout
)

// deadline is one entry of the state wheel: at When, tell the runner of
// WorkflowID about TaskInstanceID (0 for workflow deadlines).
type deadline struct {
	When           time.Time
	Kind           wheelKind
	WorkflowID     int64
	TaskInstanceID int64
}

// wheel is the state-wheel goroutine of a term (docs/architecture.md, "Retries and timeouts"): one heap of
// deadlines for retries and timeouts of every instance, one timer. Runners
// add deadlines computed from DB times (an attempt's end, a task's start),
// so after a failover the new leader re-adds the same deadlines from the
// same rows and nothing is reset. A fired deadline becomes an event on the
// runner's mailbox; the runner checks it against its current state.
type wheel struct {
	clock Clock
	fire  func(deadline)
	in    *mailbox[deadline]

	mu    sync.Mutex // guards pending for Len (tests, metrics)
	queue deadlineHeap
	life  startstop.Base
}

func newWheel(clock Clock, fire func(deadline)) *wheel {
	if clock == nil {
		clock = realClock{}
	}
	w := &wheel{clock: clock, fire: fire, in: newMailbox[deadline]()}
	w.life.Name = "state wheel"
	return w
}

// Add schedules d; safe from any goroutine, never blocks.
func (w *wheel) Add(d deadline) { w.in.Put(d) }

// Len is the number of pending deadlines.
func (w *wheel) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

func (w *wheel) Start(ctx context.Context) error {
	if _, err := w.life.Begin(ctx); err != nil {
		return err
	}
	w.life.Go(w.run)
	return nil
}

// Stop ends the loop; pending deadlines are dropped (the next term rebuilds
// them from the DB).
func (w *wheel) Stop() { _ = w.life.Stop(nil) }

func (w *wheel) run(ctx context.Context) {
	for {
		w.mu.Lock()
		for _, d := range w.in.Drain() {
			heap.Push(&w.queue, d)
		}
		now := w.clock.Now()
		var due []deadline
		for len(w.queue) > 0 && !w.queue[0].When.After(now) {
			due = append(due, heap.Pop(&w.queue).(deadline))
		}
		var timer <-chan time.Time
		if len(w.queue) > 0 {
			timer = w.clock.After(w.queue[0].When.Sub(now))
		}
		w.mu.Unlock()
		for _, d := range due {
			w.fire(d)
		}
		if len(due) > 0 {
			continue // time moved on while firing
		}
		select {
		case <-ctx.Done():
			return
		case <-w.in.Ready():
		case <-timer:
		}
	}
}

type deadlineHeap []deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].When.Before(h[j].When) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}
