package remote

import (
	"bytes"
	"errors"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
)

var (
	testKey  = bytes.Repeat([]byte{'k'}, 32)
	otherKey = bytes.Repeat([]byte{'o'}, 32)
)

func testAuth(key []byte, role, id string) *Auth {
	return &Auth{Key: key, Role: role, ID: func() string { return id }}
}

// recorder is a handler that records what reaches it and who sent it.
type recorder struct {
	mu   sync.Mutex
	msgs []message.Message
	ids  []Identity
}

func (r *recorder) handle(p Peer, reqID uint64, m message.Message) {
	id, _ := PeerIdentity(p)
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.ids = append(r.ids, id)
	r.mu.Unlock()
	if reqID != 0 {
		_ = p.Send(reqID, message.Pong{})
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

func TestAuthenticatedPeersExchangeFramesWithIdentity(t *testing.T) {
	var rec recorder
	s := startServer(t, "127.0.0.1:0", rec.handle, Options{Auth: testAuth(testKey, RoleWorker, "w1:1")})
	var back recorder
	c := startClient(t, back.handle, Options{Auth: testAuth(testKey, RoleMaster, "m1:1")})
	if _, err := c.Request(ctxT(t), s.Addr(), message.Ping{}); err != nil {
		t.Fatalf("request over an authenticated connection: %v", err)
	}
	rec.mu.Lock()
	got := rec.ids[0]
	rec.mu.Unlock()
	if got != (Identity{RoleMaster, "m1:1"}) {
		t.Fatalf("server saw peer %v, want master m1:1", got)
	}
}

// A peer without the secret, or with another, never reaches the handler:
// not with a well-formed Dispatch sent first, not after a forged handshake.
func TestUnauthenticatedFramesNeverReachHandler(t *testing.T) {
	log, logs := observed()
	var rec recorder
	s := startServer(t, "127.0.0.1:0", rec.handle, Options{Auth: testAuth(testKey, RoleWorker, "w1:1"), Log: log})

	// 1. No handshake at all: a Dispatch frame, as today's attacker sends.
	body, _ := message.Encode(message.Dispatch{TaskInstanceID: 1, Command: "touch /tmp/pwned", MasterAddr: "x:1", Epoch: 1 << 60})
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(frame.Append(nil, frame.Frame{Type: message.TypeDispatch, RequestID: 1, Body: body})); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, nc)

	// 2. A transport without auth (no secret).
	plain := startClient(t, nil, Options{})
	if _, err := plain.Request(ctxT(t), s.Addr(), message.Kill{TaskInstanceID: 1}); err == nil {
		t.Fatal("kill over a connection without the handshake was answered")
	}

	// 3. The wrong secret: the dial fails (the client sees the server's
	// proof is wrong and leaves; the server logs the connection that left
	// before authenticating).
	wrong := startClient(t, nil, Options{Auth: testAuth(otherKey, RoleMaster, "m1:1")})
	_, err = wrong.Request(ctxT(t), s.Addr(), message.Query{MasterAddr: "evil:1", Epoch: 1 << 60})
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("request with the wrong secret: %v, want a refused handshake", err)
	}

	// 4. A replayed proof: a server's challenge MAC sent back as the proof.
	nc2, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	_, _ = nc2.Write(handshakeFrame(typeHello, []byte(RoleMaster), []byte("m1:1"), bytes.Repeat([]byte{1}, nonceLen)))
	ch := readFrame(t, nc2)
	fs, err := splitFields(ch.Body, 4)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = nc2.Write(handshakeFrame(typeProof, fs[3]))
	expectClosed(t, nc2)

	defer func() {
		for _, e := range logs.All() {
			t.Log(e.Message, e.ContextMap())
		}
	}()
	wait.Until(t, 10*time.Second, "four rejections logged", func() bool {
		return logs.FilterMessage("closing unauthenticated connection").Len() >= 4
	})
	if n := rec.count(); n != 0 {
		t.Fatalf("%d frames from unauthenticated peers reached the handler: %v", n, rec.msgs)
	}
	if n := logs.FilterMessage("closing unauthenticated connection").Len(); n != 4 {
		t.Fatalf("%d rejection lines, want one per attempt (4)", n)
	}
}

// The server does not trust the client's challenge either way: a client
// dialling a listener with another secret refuses it (mutual).
func TestClientRefusesServerWithOtherSecret(t *testing.T) {
	var rec recorder
	s := startServer(t, "127.0.0.1:0", rec.handle, Options{Auth: testAuth(otherKey, RoleWorker, "w1:1")})
	log, logs := observed()
	c := startClient(t, nil, Options{Auth: testAuth(testKey, RoleMaster, "m1:1"), Log: log})
	if err := c.Send(ctxT(t), s.Addr(), message.Ping{}); err == nil {
		t.Fatal("send to a server with another secret succeeded")
	}
	if logs.FilterMessage("closing unauthenticated connection").Len() != 1 {
		t.Fatalf("client did not log the failed server proof once: %v", logs.All())
	}
	if rec.count() != 0 {
		t.Fatal("frame reached the server handler")
	}
}

// TestHandshakeTimeoutIsTheSetting: a silent peer that never starts the
// handshake is closed after Limits.HandshakeTimeout (the setting
// remote.handshake_timeout), with one log line for it.
func TestHandshakeTimeoutIsTheSetting(t *testing.T) {
	t.Parallel()
	const hs = 300 * time.Millisecond
	log, logs := observed()
	s := startServer(t, "127.0.0.1:0", nil, Options{Auth: testAuth(testKey, RoleWorker, "w1:1"), Log: log,
		Limits: Limits{HandshakeTimeout: hs, IdleTimeout: time.Minute}})
	// Timed from before the dial: the server's clock starts at its accept,
	// which a loaded machine may run well before Dial returns here (once
	// the close came 297 ms after a start taken after Dial).
	start := time.Now()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	waitClosedByServer(t, nc, 5*time.Second)
	if d := time.Since(start); d < hs || d > 3*time.Second {
		t.Fatalf("silent unauthenticated connection closed after %v, want about %v", d, hs)
	}
	wait.Until(t, 10*time.Second, "the close logged", func() bool { return logs.Len() > 0 })
	var lines []string
	for _, e := range logs.All() {
		if e.Level >= zapcore.WarnLevel {
			lines = append(lines, e.Message)
		}
	}
	if len(lines) != 1 || lines[0] != "closing unauthenticated connection" {
		t.Fatalf("want one line for the timed-out peer, got %q", lines)
	}
}

// TestClientHandshakeTimeout: a client whose peer accepts but never answers
// the hello gives up after Limits.HandshakeTimeout, not only at the end of a
// (longer) dial timeout.
func TestClientHandshakeTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	const hs = 300 * time.Millisecond
	c := startClient(t, nil, Options{Auth: testAuth(testKey, RoleMaster, "m1:1"), DialTimeout: 20 * time.Second,
		Limits: Limits{HandshakeTimeout: hs}})
	start := time.Now()
	_, err = c.Request(ctxT(t), ln.Addr().String(), message.Ping{})
	if d := time.Since(start); err == nil || d < hs || d > 5*time.Second {
		t.Fatalf("request to a silent peer: %v after %v, want a handshake error after about %v", err, d, hs)
	}
}

func TestLogLimit(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	for _, tc := range []struct {
		burst int
		every time.Duration
	}{{authLogBurst, time.Second / authLogRate}, {1, 10 * time.Second}} {
		r := newLogLimit(tc.burst, tc.every)
		for i := range tc.burst {
			if _, ok := r.allow(now); !ok {
				t.Fatalf("%+v: line %d of the burst suppressed", tc, i)
			}
		}
		if _, ok := r.allow(now); ok {
			t.Fatalf("%+v: line after the burst allowed", tc)
		}
		if _, ok := r.allow(now.Add(tc.every / 2)); ok {
			t.Fatalf("%+v: line half an interval later allowed", tc)
		}
		n, ok := r.allow(now.Add(tc.every))
		if !ok || n != 2 {
			t.Fatalf("%+v: after an interval: allowed %v with %d suppressed, want true, 2", tc, ok, n)
		}
	}
}

func expectClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue // handshake bytes the server sent first
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("connection not closed by the server")
		}
		return
	}
}

func readFrame(t *testing.T, nc net.Conn) frame.Frame {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf []byte
	tmp := make([]byte, 512)
	for {
		n, err := nc.Read(tmp)
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		buf = append(buf, tmp[:n]...)
		if f, n, err := frame.Decode(buf, maxHandshakeBody); err != nil {
			t.Fatal(err)
		} else if n > 0 {
			return f
		}
	}
}

// FuzzHandshake feeds arbitrary frames to both sides of the handshake at
// every step: never a panic, and never authenticated without the key.
func FuzzHandshake(f *testing.F) {
	hello := handshakeFrame(typeHello, []byte(RoleMaster), []byte("m:1"), bytes.Repeat([]byte{1}, nonceLen))
	f.Add(hello, []byte{})
	f.Add(handshakeFrame(typeProof, bytes.Repeat([]byte{2}, macLen)), hello)
	f.Add(handshakeFrame(typeChallenge, []byte(RoleWorker), []byte("w:1"), bytes.Repeat([]byte{3}, nonceLen), bytes.Repeat([]byte{4}, macLen)), []byte{})
	f.Add(handshakeFrame(typeOK), []byte{0xBE})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), []byte{})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, server := range []bool{true, false} {
			hs := &handshake{server: server, self: Identity{RoleWorker, "w:1"}, nonceC: bytes.Repeat([]byte{9}, nonceLen)}
			hs.step = typeChallenge
			if server {
				hs.step = typeHello
			}
			for _, in := range [][]byte{a, b} {
				fr, n, err := frame.Decode(in, maxHandshakeBody)
				if err != nil || n == 0 {
					break
				}
				if _, err := hs.step1(testKey, fr); err != nil {
					break
				}
				if hs.step == 0 {
					t.Fatalf("handshake (server %v) authenticated a peer from fuzz input %x %x", server, a, b)
				}
			}
		}
	})
}

// The transport's frames decode as messages only after the handshake; the
// handshake frame types must never be message types.
func TestHandshakeTypesAreNotMessages(t *testing.T) {
	for _, typ := range []message.Type{typeHello, typeChallenge, typeProof, typeOK} {
		if _, err := message.Decode(typ, []byte("{}")); err == nil || !strings.Contains(err.Error(), "unknown") {
			t.Fatalf("type %#x decodes as a message (%v)", typ, err)
		}
	}
}
