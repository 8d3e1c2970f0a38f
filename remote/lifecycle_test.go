package remote

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// stopWaitsFor calls stop with a handler blocked in hold, checks stop has
// not returned while it is, then releases the handler: stop must return
// only after it did.
func stopWaitsFor(t *testing.T, what string, stop func(), release chan struct{}, exited *atomic.Bool) {
	t.Helper()
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
		t.Fatalf("%s: Stop returned while a handler goroutine was still running", what)
	case <-time.After(100 * time.Millisecond): // Stop had its chance to return early
	}
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Stop did not return once the handler did", what)
	}
	if !exited.Load() {
		t.Fatalf("%s: Stop returned before the handler", what)
	}
}

// TestServerLifecycleContract: a second Start is ErrStarted, Stop is safe
// twice, and Stop returns only once its handler goroutines exited.
func TestServerLifecycleContract(t *testing.T) {
	release, in := make(chan struct{}), make(chan struct{})
	var exited atomic.Bool
	s := startServer(t, "127.0.0.1:0", func(Peer, uint64, message.Message) {
		close(in)
		<-release
		exited.Store(true)
	}, Options{})
	if err := s.Start(ctxT(t)); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("second Start = %v, want startstop.ErrStarted", err)
	}
	c := NewClient(nil, Options{})
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if err := c.Send(ctxT(t), s.Addr(), message.Ping{}); err != nil {
		t.Fatal(err)
	}
	<-in
	stopWaitsFor(t, "server", s.Stop, release, &exited)
	s.Stop()
	if err := s.Start(ctxT(t)); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

// TestClientLifecycleContract: the same for the client, whose handler gets
// the server's pushes.
func TestClientLifecycleContract(t *testing.T) {
	s := startServer(t, "127.0.0.1:0", func(p Peer, _ uint64, _ message.Message) {
		_ = p.Send(0, message.Pong{}) // a push back to the client
	}, Options{})
	release, in := make(chan struct{}), make(chan struct{})
	var exited atomic.Bool
	c := NewClient(func(Peer, uint64, message.Message) {
		close(in)
		<-release
		exited.Store(true)
	}, Options{})
	c.Stop() // before Start: only makes Start fail
	if err := c.Start(ctxT(t)); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}

	c = NewClient(func(Peer, uint64, message.Message) {
		close(in)
		<-release
		exited.Store(true)
	}, Options{})
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctxT(t)); !errors.Is(err, startstop.ErrStarted) {
		c.Stop()
		t.Fatalf("second Start = %v, want startstop.ErrStarted", err)
	}
	if err := c.Send(ctxT(t), s.Addr(), message.Ping{}); err != nil {
		t.Fatal(err)
	}
	<-in
	stopWaitsFor(t, "client", c.Stop, release, &exited)
	c.Stop()
}
