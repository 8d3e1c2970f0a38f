package master

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeClock advances only when told; After channels fire on Advance.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	armed   chan struct{} // signalled whenever After is called
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), armed: make(chan struct{}, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), ch})
	c.armed <- struct{}{}
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	rest := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			rest = append(rest, w)
		}
	}
	c.waiters = rest
}

func TestWheelFiresInOrderAtTheirTimes(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	fired := make(chan deadline, 10)
	w := newWheel(clock, func(d deadline) { fired <- d })
	w.Start(context.Background())
	defer w.Stop()
	t0 := clock.Now()
	w.Add(deadline{When: t0.Add(30 * time.Second), Kind: retryDue, TaskInstanceID: 3})
	w.Add(deadline{When: t0.Add(10 * time.Second), Kind: taskTimeout, TaskInstanceID: 1})
	w.Add(deadline{When: t0.Add(20 * time.Second), Kind: workflowTimeout, WorkflowID: 2})
	w.Add(deadline{When: t0.Add(-time.Second), Kind: retryDue, TaskInstanceID: 9}) // already due: a clock that survived a failover
	if d := recv(t, fired); d.TaskInstanceID != 9 {
		t.Fatalf("overdue deadline fired second: %+v", d)
	}
	waitArmed(t, clock, w, 3)
	select {
	case d := <-fired:
		t.Fatalf("fired before its time: %+v", d)
	default:
	}
	clock.Advance(10 * time.Second)
	if d := recv(t, fired); d.TaskInstanceID != 1 || d.Kind != taskTimeout {
		t.Fatalf("at +10s: %+v", d)
	}
	waitArmed(t, clock, w, 2)
	clock.Advance(15 * time.Second) // +25s: only the workflow timeout
	if d := recv(t, fired); d.WorkflowID != 2 {
		t.Fatalf("at +25s: %+v", d)
	}
	waitArmed(t, clock, w, 1)
	select {
	case d := <-fired:
		t.Fatalf("retry fired early: %+v", d)
	default:
	}
	clock.Advance(5 * time.Second)
	if d := recv(t, fired); d.TaskInstanceID != 3 {
		t.Fatalf("at +30s: %+v", d)
	}
}

func recv(t *testing.T, ch <-chan deadline) deadline {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no deadline fired")
		return deadline{}
	}
}

// waitArmed waits until the wheel holds n deadlines and has asked the
// clock for a timer, so an Advance cannot slip in before the timer exists.
func waitArmed(t *testing.T, c *fakeClock, w *wheel, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-c.armed:
			if w.Len() == n {
				return
			}
		case <-deadline:
			t.Fatalf("wheel never armed with %d deadlines (has %d)", n, w.Len())
		}
	}
}
