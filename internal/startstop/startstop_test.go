package startstop_test

import (
	"context"
	"errors"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }

// part is a minimal component on Base: one goroutine that runs until its
// context ends (or, with hang, until release is closed).
type part struct {
	life    startstop.Base
	hang    bool
	release chan struct{}
	loops   atomic.Int32
	exited  atomic.Int32
	after   atomic.Int32
}

func newPart() *part {
	p := &part{release: make(chan struct{})}
	p.life.Name = "part"
	return p
}

func (p *part) Start(ctx context.Context) error {
	if _, err := p.life.Begin(ctx); err != nil {
		return err
	}
	p.life.Go(func(ctx context.Context) {
		defer p.exited.Add(1)
		p.loops.Add(1)
		if p.hang {
			<-p.release // ignores ctx: a goroutine stuck in a call that cannot be cancelled
			return
		}
		<-ctx.Done()
	})
	return nil
}

func (p *part) Stop() { _ = p.life.Stop(func() { p.after.Add(1) }) }

func TestStartTwiceIsAnError(t *testing.T) {
	p := newPart()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	err := p.Start(context.Background())
	if !errors.Is(err, startstop.ErrStarted) || !strings.Contains(err.Error(), "part") {
		t.Fatalf("second Start = %v, want ErrStarted naming the part", err)
	}
	wait.Until(t, 5*time.Second, "the part's loop running", func() bool { return p.loops.Load() > 0 })
	p.Stop()
	if n := p.loops.Load(); n != 1 {
		t.Fatalf("%d goroutines started, want 1", n)
	}
}

func TestStopBeforeStart(t *testing.T) {
	p := newPart()
	p.Stop()
	if p.after.Load() != 0 {
		t.Fatal("after ran for a part that never started")
	}
	if err := p.Start(context.Background()); !errors.Is(err, startstop.ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
	if p.life.Go(func(context.Context) { t.Error("ran") }) {
		t.Fatal("Go ran a goroutine on a stopped part")
	}
}

func TestStopTwice(t *testing.T) {
	p := newPart()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	p.Stop()
	if n := p.after.Load(); n != 1 {
		t.Fatalf("after ran %d times, want 1", n)
	}
	if p.life.Running() {
		t.Fatal("running after Stop")
	}
}

func TestStopWaitsForGoroutines(t *testing.T) {
	p := newPart()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var sawExit atomic.Bool
	p.life.Go(func(ctx context.Context) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // time is the subject: work after cancellation that Stop must wait for
		sawExit.Store(true)
	})
	if err := p.life.Stop(nil); err != nil {
		t.Fatal(err)
	}
	if !sawExit.Load() || p.exited.Load() != 1 {
		t.Fatal("Stop returned before the goroutines exited")
	}
}

func TestConcurrentStopWaitsForTheFirst(t *testing.T) {
	p := newPart()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	slow := make(chan struct{})
	first := make(chan struct{})
	go func() {
		defer close(first)
		_ = p.life.Stop(func() { <-slow })
	}()
	second := make(chan struct{})
	go func() {
		defer close(second)
		// Not wait.Until: this goroutine is not the test's, so it cannot end it.
		if err := wait.Poll(5*time.Second, "the first Stop under way", func() bool { return !p.life.Running() }); err != nil {
			t.Error(err)
		}
		_ = p.life.Stop(nil)
	}()
	select {
	case <-second:
		t.Fatal("a second Stop returned while the first was still stopping")
	case <-time.After(100 * time.Millisecond):
	}
	close(slow)
	<-first
	<-second
}

func TestStopIsBoundedWhenAGoroutineHangs(t *testing.T) {
	p := newPart()
	p.hang = true
	p.life.StopTimeout = 200 * time.Millisecond
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer close(p.release) // let it go, so the leak check passes
	began := time.Now()
	err := p.life.Stop(func() { p.after.Add(1) })
	took := time.Since(began)
	if !errors.Is(err, startstop.ErrStopTimeout) {
		t.Fatalf("Stop = %v, want ErrStopTimeout", err)
	}
	if took > 2*time.Second {
		t.Fatalf("Stop took %s with a bound of 200ms", took)
	}
	if p.after.Load() != 1 {
		t.Fatal("the stop work after the goroutines did not run at the bound")
	}
}

func TestStartCancelledByItsContext(t *testing.T) {
	p := newPart()
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	wait.Until(t, 5*time.Second, "the goroutine to exit on cancel", func() bool { return p.exited.Load() == 1 })
	p.Stop()
}

// failing fails its Start.
type failing struct{ stopped *[]string }

func (f failing) Start(context.Context) error { return errors.New("boom") }
func (f failing) Stop()                       { *f.stopped = append(*f.stopped, "failing") }

// named records the order of its Start and Stop.
type named struct {
	name string
	log  *[]string
}

func (n named) Start(context.Context) error { *n.log = append(*n.log, "start "+n.name); return nil }
func (n named) Stop()                       { *n.log = append(*n.log, "stop "+n.name) }

func TestStartAllStopsTheStartedOnFailure(t *testing.T) {
	var log []string
	err := startstop.StartAll(context.Background(), named{"a", &log}, named{"b", &log}, failing{&log}, named{"c", &log})
	if err == nil || err.Error() != "boom" {
		t.Fatalf("StartAll = %v, want boom", err)
	}
	want := "start a,start b,stop b,stop a"
	if got := strings.Join(log, ","); got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
}

func TestStopAllInReverseSkippingNil(t *testing.T) {
	var log []string
	var never *part
	if err := startstop.StartAll(context.Background(), named{"a", &log}, named{"b", &log}); err != nil {
		t.Fatal(err)
	}
	startstop.StopAll(named{"a", &log}, never, nil, named{"b", &log})
	want := "start a,start b,stop b,stop a"
	if got := strings.Join(log, ","); got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
}

// TestStopWaitsForAStartInProgress: a Stop arriving while StartWith's start
// runs waits for it, so it never stops a part half-way through its start.
func TestStopWaitsForAStartInProgress(t *testing.T) {
	var b startstop.Base
	entered, release := make(chan struct{}), make(chan struct{})
	var startReturned, afterRan atomic.Bool
	started := make(chan error, 1)
	go func() {
		started <- b.StartWith(context.Background(), func() error {
			close(entered)
			<-release
			startReturned.Store(true)
			return nil
		}, nil)
	}()
	<-entered
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = b.Stop(func() { afterRan.Store(startReturned.Load()) })
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned while Start was still starting")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-stopped
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if !afterRan.Load() {
		t.Fatal("Stop's work ran before the start had returned")
	}
}

// TestFailedStartWithUndoes: a start that fails is undone once, its
// goroutines waited for, and the part cannot start again.
func TestFailedStartWithUndoes(t *testing.T) {
	var b startstop.Base
	var undone, exited atomic.Int32
	err := b.StartWith(context.Background(), func() error {
		b.Go(func(ctx context.Context) { <-ctx.Done(); exited.Add(1) })
		return errors.New("bind: address in use")
	}, func() { undone.Add(1) })
	if err == nil || exited.Load() != 1 || undone.Load() != 1 {
		t.Fatalf("StartWith = %v; goroutine exited %d, undo ran %d; want error, 1, 1", err, exited.Load(), undone.Load())
	}
	_ = b.Stop(func() { undone.Add(1) })
	if undone.Load() != 1 {
		t.Fatal("Stop after a failed start undid it again")
	}
	if err := b.StartWith(context.Background(), func() error { return nil }, nil); !errors.Is(err, startstop.ErrStopped) {
		t.Fatalf("second StartWith = %v, want ErrStopped", err)
	}
}
