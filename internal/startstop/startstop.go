// Package startstop is the one lifecycle contract of Beluga's long-running
// parts: Start once (a second Start is an error, not a second set of
// goroutines), Stop idempotent and safe before Start, and Stop returning only
// once the part's goroutines have exited, or once its bound has passed (then
// it says so). Composites start their parts in order with StartAll and stop
// them in reverse with StopAll.
package startstop

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ErrStarted is returned by a second Start.
var ErrStarted = errors.New("already started")

// ErrStopped is returned by a Start after Stop (or after a failed Start: a
// half-started part is not restarted).
var ErrStopped = errors.New("stopped")

// ErrStopTimeout says Stop gave up waiting: some goroutine of the part did
// not exit within the bound.
var ErrStopTimeout = errors.New("goroutines did not exit before the stop deadline")

// DefaultStopTimeout bounds Stop when Base.StopTimeout is zero. It is a
// backstop: the parts bound their own blocking calls (store writes in stop
// paths use a timeout context) well below it.
const DefaultStopTimeout = 30 * time.Second

// Service is a long-running part.
type Service interface {
	Start(ctx context.Context) error
	Stop()
}

type state uint8

const (
	idle state = iota
	started
	stopped
)

// Base implements the contract for the part that holds it. The part's Start
// calls Begin first and runs its goroutines with Go; its Stop calls
// Base.Stop, passing the work to do once the goroutines have exited. The
// zero value is ready; set Name (for errors and logs), Log and StopTimeout
// before Start.
type Base struct {
	Name        string
	Log         *zap.Logger
	StopTimeout time.Duration

	mu      sync.Mutex
	state   state
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	inStart chan struct{} // closed when StartWith's start returned
	done    chan struct{} // closed when the first Stop has finished
}

// Begin marks the part started and returns the context its goroutines run
// on: ctx's values and cancellation, ended by Stop. Callers that want a part
// to outlive ctx pass context.WithoutCancel(ctx).
func (b *Base) Begin(ctx context.Context) (context.Context, error) { return b.begin(ctx, nil) }

func (b *Base) begin(ctx context.Context, inStart chan struct{}) (context.Context, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case started:
		return nil, fmt.Errorf("%s: %w", b.name(), ErrStarted)
	case stopped:
		return nil, fmt.Errorf("%s: %w", b.name(), ErrStopped)
	}
	b.state = started
	b.inStart = inStart
	b.ctx, b.cancel = context.WithCancel(ctx)
	return b.ctx, nil
}

// StartWith is Begin, then start (which starts the part's pieces and its
// goroutines with Go; it uses the caller's ctx for start-up work). A Stop
// arriving meanwhile waits for start to return, so it never undoes a part
// half-way through its start. When start fails the part is stopped at once
// (as Stop(undo): its goroutines waited for, then undo, which must cope with
// a partial start) and spent; the error is returned.
func (b *Base) StartWith(ctx context.Context, start func() error, undo func()) error {
	in := make(chan struct{})
	if _, err := b.begin(ctx, in); err != nil {
		return err
	}
	err := start()
	close(in)
	if err != nil {
		_ = b.Stop(undo)
	}
	return err
}

// Go runs f on a goroutine the part owns: Stop cancels f's context and waits
// for f to return. It reports false, without running f, when the part is not
// running (before Begin, or once Stop began).
func (b *Base) Go(f func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != started {
		return false
	}
	b.wg.Add(1) // under mu, so never after Stop's Wait began
	go func() {
		defer b.wg.Done()
		f(b.ctx)
	}()
	return true
}

// Running reports whether the part was started and Stop has not begun.
func (b *Base) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == started
}

// Stop cancels the goroutines' context, waits for them (at most the bound),
// then runs after, if the part was started and after is not nil. Only the
// first call does this; later and concurrent calls wait for it to finish
// (bounded the same way). Before Start, it only makes a later Start fail.
// It returns ErrStopTimeout when goroutines were still running at the bound;
// that is logged as well.
func (b *Base) Stop(after func()) error {
	b.mu.Lock()
	if b.done != nil {
		done := b.done
		b.mu.Unlock()
		return b.await(done)
	}
	b.done = make(chan struct{})
	done := b.done
	wasStarted := b.state == started
	b.state = stopped
	cancel, in := b.cancel, b.inStart
	b.mu.Unlock()
	defer close(done)
	if !wasStarted {
		return nil
	}
	if in != nil {
		if err := b.await(in); err != nil {
			return err // a start that hangs: nothing of it can be undone safely
		}
	}
	cancel()
	exited := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(exited)
	}()
	err := b.await(exited)
	if err != nil && b.Log != nil {
		b.Log.Error("stop: goroutines still running at the deadline; going on", zap.String("component", b.name()),
			zap.Duration("bound", b.bound()))
	}
	if after != nil {
		after()
	}
	return err
}

func (b *Base) await(ch <-chan struct{}) error {
	t := time.NewTimer(b.bound())
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return fmt.Errorf("%s: %w (%s)", b.name(), ErrStopTimeout, b.bound())
	}
}

func (b *Base) bound() time.Duration {
	if b.StopTimeout > 0 {
		return b.StopTimeout
	}
	return DefaultStopTimeout
}

func (b *Base) name() string {
	if b.Name == "" {
		return "component"
	}
	return b.Name
}

// StartAll starts svcs in order. If one fails, those already started are
// stopped in reverse order and its error is returned.
func StartAll(ctx context.Context, svcs ...Service) error {
	for i, s := range svcs {
		if err := s.Start(ctx); err != nil {
			StopAll(svcs[:i]...)
			return err
		}
	}
	return nil
}

// StopAll stops svcs in reverse order, each after the one started after it
// has returned; nil entries (parts never built) are skipped.
func StopAll(svcs ...Service) {
	for i := len(svcs) - 1; i >= 0; i-- {
		if !isNil(svcs[i]) {
			svcs[i].Stop()
		}
	}
}

// isNil catches a nil interface and a typed nil (a *T field never set) behind
// it, which a composite stopping after a partial start may pass.
func isNil(s Service) bool {
	if s == nil {
		return true
	}
	v := reflect.ValueOf(s)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
