package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

// TestMain fails the run if goroutines outlive the tests: every Server and
// Client a test starts is stopped by its cleanup, and Stop must wait for
// everything it started.
func TestMain(m *testing.M) {
	if os.Getenv(fdChildEnv) != "" {
		os.Exit(fdChild())
	}
	os.Exit(leakcheck.Run(m))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// serve answers requests the way a worker would: Ping -> Pong, Dispatch ->
// accepted, Kill -> an Error reply, LogRequest -> a body of Limit bytes.
func serve(p Peer, reqID uint64, m message.Message) {
	var reply message.Message
	switch m := m.(type) {
	case message.Ping:
		reply = message.Pong{}
	case message.Dispatch:
		reply = message.DispatchReply{TaskInstanceID: m.TaskInstanceID, Accepted: true}
	case message.Kill:
		reply = message.Error{Code: "not_found", Message: fmt.Sprintf("task %d", m.TaskInstanceID)}
	case message.LogRequest:
		reply = message.LogResponse{TaskInstanceID: m.TaskInstanceID, Data: bytes.Repeat([]byte{'x'}, int(m.Limit)), EOF: true}
	default:
		return
	}
	_ = p.Send(reqID, reply)
}

func startServer(t testing.TB, addr string, h Handler, o Options) *Server {
	t.Helper()
	s := NewServer(addr, h, o)
	if err := s.Start(ctxT(t)); err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func startClient(t testing.TB, h Handler, o Options) *Client {
	t.Helper()
	c := NewClient(h, o)
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

func TestRequestReply(t *testing.T) {
	t.Parallel()
	s := startServer(t, "127.0.0.1:0", serve, Options{})
	if strings.HasSuffix(s.Addr(), ":0") || s.Addr() == "" {
		t.Fatalf("Addr() = %q, want the bound port", s.Addr())
	}
	c := startClient(t, nil, Options{})
	ctx := ctxT(t)

	r, err := c.Request(ctx, s.Addr(), message.Ping{})
	if err != nil || r != (message.Pong{}) {
		t.Fatalf("ping: %v, %v", r, err)
	}
	r, err = c.Request(ctx, s.Addr(), message.Dispatch{TaskInstanceID: 7, Command: "echo hi"})
	if err != nil || r != (message.DispatchReply{TaskInstanceID: 7, Accepted: true}) {
		t.Fatalf("dispatch: %v, %v", r, err)
	}
	_, err = c.Request(ctx, s.Addr(), message.Kill{TaskInstanceID: 9})
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != "not_found" || re.Addr != s.Addr() {
		t.Fatalf("kill: err = %v, want a not_found RemoteError", err)
	}
	// A body of many reads (well over gnet's 64KB read buffer).
	r, err = c.Request(ctx, s.Addr(), message.LogRequest{TaskInstanceID: 1, Limit: 2 << 20})
	if lr, ok := r.(message.LogResponse); err != nil || !ok || len(lr.Data) != 2<<20 {
		t.Fatalf("log: %T, %v", r, err)
	}

	// Concurrent requests on the one connection are matched by request id.
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Request(ctx, s.Addr(), message.Dispatch{TaskInstanceID: int64(i)})
			if err == nil && r.(message.DispatchReply).TaskInstanceID != int64(i) {
				err = fmt.Errorf("request %d got reply %+v", i, r)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A routed address is dialled at its route; the error of a request to it
// names the address asked for.
func TestClientRoutes(t *testing.T) {
	t.Parallel()
	s := startServer(t, "127.0.0.1:0", serve, Options{})
	const advertised, dead = "192.0.2.1:7000", "192.0.2.2:7000" // TEST-NET-1: never reached
	c := startClient(t, nil, Options{Routes: map[string]string{advertised: s.Addr(), dead: "127.0.0.1:1"}})
	ctx := ctxT(t)
	if r, err := c.Request(ctx, advertised, message.Ping{}); err != nil || r != (message.Pong{}) {
		t.Fatalf("ping through the route: %v, %v", r, err)
	}
	_, err := c.Request(ctx, dead, message.Ping{})
	if err == nil || !strings.Contains(err.Error(), dead) {
		t.Fatalf("ping through a route to a closed port: %v, want an error naming %s", err, dead)
	}
}

func TestRequestTimeoutAndTooLarge(t *testing.T) {
	t.Parallel()
	silent := func(Peer, uint64, message.Message) {}
	s := startServer(t, "127.0.0.1:0", silent, Options{})
	c := startClient(t, nil, Options{MaxBody: 100})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Request(ctx, s.Addr(), message.Ping{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered request: err = %v, want deadline exceeded", err)
	}
	err := c.Send(ctxT(t), s.Addr(), message.Dispatch{Command: strings.Repeat("x", 200)})
	if !errors.Is(err, frame.ErrTooLarge) {
		t.Fatalf("oversized send: err = %v, want ErrTooLarge", err)
	}
}

func TestPushBothDirections(t *testing.T) {
	t.Parallel()
	peers := make(chan Peer, 1)
	s := startServer(t, "127.0.0.1:0", func(p Peer, reqID uint64, m message.Message) {
		if a, ok := m.(message.Ack); ok && reqID == 0 && a.TaskInstanceID == 5 {
			peers <- p
		}
	}, Options{})
	got := make(chan message.Message, 1)
	c := startClient(t, func(p Peer, reqID uint64, m message.Message) {
		if reqID == 0 && p.RemoteAddr() == s.Addr() {
			got <- m
		}
	}, Options{})

	if err := c.Send(ctxT(t), s.Addr(), message.Ack{TaskInstanceID: 5, Host: "w1"}); err != nil {
		t.Fatal(err)
	}
	var p Peer
	p = wait.Signal(t, 10*time.Second, "the server to get the push", peers)
	// The server pushes back over the client's connection, from another goroutine.
	want := message.DBAck{TaskInstanceID: 5, Kind: message.KindAck}
	if err := p.Send(0, want); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != want {
			t.Fatalf("client got %+v, want %+v", m, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client did not get the push")
	}

	// After the client drops the connection, pushes to that peer fail.
	c.Forget(s.Addr())
	wait.Until(t, 10*time.Second, "peer send to fail", func() bool { return errors.Is(p.Send(0, want), ErrClosed) })
}

func TestServerRestartRedial(t *testing.T) {
	t.Parallel()
	s := startServer(t, "127.0.0.1:0", serve, Options{})
	addr := s.Addr()
	c := startClient(t, nil, Options{})
	if _, err := c.Request(ctxT(t), addr, message.Ping{}); err != nil {
		t.Fatal(err)
	}

	s.Stop()
	start := time.Now()
	if _, err := c.Request(ctxT(t), addr, message.Ping{}); err == nil {
		t.Fatal("request to a stopped server succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("request to a stopped server took %v", d)
	}

	startServer(t, addr, serve, Options{})
	// The old connection is gone, so the client dials the new server.
	if _, err := c.Request(ctxT(t), addr, message.Ping{}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

func TestSendToDeadAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()

	c := startClient(t, nil, Options{DialTimeout: time.Second})
	start := time.Now()
	if err := c.Send(ctxT(t), dead, message.Ping{}); err == nil {
		t.Fatal("send to a dead address succeeded")
	}
	if _, err := c.Request(ctxT(t), dead, message.Ping{}); err == nil {
		t.Fatal("request to a dead address succeeded")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("dead address took %v to fail", d)
	}
}

func rawFrame(typ message.Type, body []byte) []byte {
	return frame.Append(nil, frame.Frame{Type: typ, RequestID: 1, Body: body})
}

func TestBadInputClosesOnlyThatConn(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	var mu sync.Mutex
	handled := map[string]int{} // remote addr -> messages handled
	s := startServer(t, "127.0.0.1:0", func(p Peer, reqID uint64, m message.Message) {
		mu.Lock()
		handled[p.RemoteAddr()]++
		mu.Unlock()
		serve(p, reqID, m)
	}, Options{MaxBody: 1024, Log: zap.New(core)})

	oversized := rawFrame(message.TypeLogResponse, nil)
	binary.BigEndian.PutUint32(oversized[12:], 1<<20)
	badVersion := rawFrame(message.TypePing, nil)
	badVersion[2] = 9
	cases := map[string][]byte{
		"bad magic":      append([]byte{0xCA, 0xFE}, rawFrame(message.TypePing, nil)[2:]...),
		"bad version":    badVersion,
		"oversized":      oversized,
		"garbage":        []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"unknown type":   rawFrame(200, []byte("{}")),
		"malformed body": rawFrame(message.TypeDispatch, []byte("{not json")),
		// A good frame first: it reaches the handler although the bad one
		// closes the conn right after (too soon for the reply to be sent).
		"good then bad": append(rawFrame(message.TypePing, nil), 0xde, 0xad),
	}
	for name, payload := range cases {
		t.Run(name, func(t *testing.T) {
			nc, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(payload); err != nil {
				t.Fatal(err)
			}
			// The server closes the connection: reads end (after any reply).
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadAll(nc); err != nil && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("read: %v (want the server to close)", err)
			}
			local := nc.LocalAddr().String()
			if name == "good then bad" {
				wait.Until(t, 10*time.Second, "good frame handled", func() bool { mu.Lock(); defer mu.Unlock(); return handled[local] == 1 })
			}
			warns := func() int {
				return logs.FilterLevelExact(zapcore.WarnLevel).FilterField(zap.String("remote", local)).Len()
			}
			wait.Until(t, 10*time.Second, "warn line", func() bool { return warns() >= 1 })
			if n := warns(); n != 1 {
				t.Fatalf("%d warn lines for %s, want 1: %v", n, local, logs.All())
			}
		})
	}

	// The server still serves a well-behaved client.
	c := startClient(t, nil, Options{})
	if _, err := c.Request(ctxT(t), s.Addr(), message.Ping{}); err != nil {
		t.Fatalf("good client after bad ones: %v", err)
	}
}

func TestSlowHandlerQueueLimit(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.WarnLevel)
	release := make(chan struct{})
	s := NewServer("127.0.0.1:0", func(Peer, uint64, message.Message) { <-release }, Options{Log: zap.New(core)})
	s.ev.queueLimit = 10
	if err := s.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	defer close(release) // before Stop, which waits for the handler

	c := startClient(t, nil, Options{})
	ctx := ctxT(t)
	// One message blocks the handler, ten fill the queue, the next is refused.
	wait.Until(t, 10*time.Second, "queue-full close", func() bool {
		_ = c.Send(ctx, s.Addr(), message.Ack{})
		return logs.FilterMessage("closing connection").FilterField(zap.String("reason", "handler queue full")).Len() == 1
	})
}

func TestOrderingPreserved(t *testing.T) {
	t.Parallel()
	const n = 10000
	var mu sync.Mutex
	var got []int64
	s := startServer(t, "127.0.0.1:0", func(p Peer, _ uint64, m message.Message) {
		if a, ok := m.(message.Ack); ok {
			mu.Lock()
			got = append(got, a.TaskInstanceID)
			mu.Unlock()
		}
	}, Options{})
	c := startClient(t, nil, Options{})
	ctx := ctxT(t)
	for i := range int64(n) {
		if err := c.Send(ctx, s.Addr(), message.Ack{TaskInstanceID: i}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	wait.Until(t, 10*time.Second, "all pushes", func() bool { return count() >= n })
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n {
		t.Fatalf("got %d messages, want %d", len(got), n)
	}
	for i, id := range got {
		if id != int64(i) {
			t.Fatalf("message %d has id %d: order lost", i, id)
		}
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	// Stop before Start, twice, and Start after Stop.
	s := NewServer("127.0.0.1:0", serve, Options{})
	s.Stop()
	s.Stop()
	if err := s.Start(ctxT(t)); !errors.Is(err, ErrStopped) {
		t.Fatalf("start after stop: %v", err)
	}
	c := NewClient(nil, Options{})
	c.Stop()
	if err := c.Start(ctxT(t)); !errors.Is(err, ErrStopped) {
		t.Fatalf("client start after stop: %v", err)
	}

	// A bind error comes back from Start.
	s1 := startServer(t, "127.0.0.1:0", serve, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s2 := NewServer(ln.Addr().String(), serve, Options{})
	if err := s2.Start(ctxT(t)); err == nil {
		t.Fatal("start on a taken port succeeded")
	}
	s2.Stop()

	// A request in flight when the client stops fails with ErrClosed.
	block := make(chan struct{})
	s3 := startServer(t, "127.0.0.1:0", func(Peer, uint64, message.Message) { <-block }, Options{})
	defer close(block) // lets s3's handler return so its Stop can finish
	c2 := NewClient(nil, Options{})
	if err := c2.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c2.Request(ctxT(t), s3.Addr(), message.Ping{})
		errc <- err
	}()
	wait.Until(t, 10*time.Second, "request pending", func() bool {
		c2.mu.Lock()
		defer c2.mu.Unlock()
		l := c2.conns[s3.Addr()]
		if l == nil {
			return false
		}
		select {
		case <-l.ready:
		default:
			return false
		}
		l.c.pmu.Lock()
		defer l.c.pmu.Unlock()
		return len(l.c.pending) == 1
	})
	c2.Stop()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending request at stop: %v, want ErrClosed", err)
	}
	if err := c2.Send(ctxT(t), s1.Addr(), message.Ping{}); !errors.Is(err, ErrStopped) {
		t.Fatalf("send after stop: %v, want ErrStopped", err)
	}
	c2.Stop()
}

func TestStopNoGoroutineLeak(t *testing.T) {
	// Not parallel: it counts goroutines.
	before := runtime.NumGoroutine()
	for range 3 {
		s := NewServer("127.0.0.1:0", serve, Options{})
		if err := s.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		c := NewClient(func(Peer, uint64, message.Message) {}, Options{})
		if err := c.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if _, err := c.Request(ctxT(t), s.Addr(), message.Dispatch{TaskInstanceID: int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		s.Stop()
		c.Stop()
	}
	// Stop waited for everything it started; allow only runtime stragglers.
	wait.Until(t, 10*time.Second, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}

func TestHandlerPanicKeepsServing(t *testing.T) {
	calls := 0
	srv := NewServer("127.0.0.1:0", func(p Peer, reqID uint64, m message.Message) {
		calls++
		if calls == 1 {
			panic("boom")
		}
		_ = p.Send(reqID, message.Pong{})
	}, Options{Log: zap.NewNop()})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	cli := NewClient(func(Peer, uint64, message.Message) {}, Options{Log: zap.NewNop()})
	if err := cli.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer cli.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := cli.Request(ctx, srv.Addr(), message.Ping{}); err == nil {
		t.Fatal("first request should get no reply: its handler panicked")
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if m, err := cli.Request(ctx2, srv.Addr(), message.Ping{}); err != nil {
		t.Fatalf("server stopped serving after a handler panic: %v", err)
	} else if _, ok := m.(message.Pong); !ok {
		t.Fatalf("reply %T", m)
	}
}
