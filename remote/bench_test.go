package remote

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/beluga-scheduler/beluga/remote/message"
)

// BenchmarkRequestReply measures Dispatch -> DispatchReply round trips over
// loopback, one at a time and from many callers sharing one connection.
func BenchmarkRequestReply(b *testing.B) {
	s := startServer(b, "127.0.0.1:0", serve, Options{})
	c := startClient(b, nil, Options{})
	ctx := context.Background()
	m := message.Dispatch{TaskInstanceID: 1, WorkflowInstanceID: 2, Name: "t", TaskType: "shell", Command: "echo hi"}
	if _, err := c.Request(ctx, s.Addr(), m); err != nil { // dial outside the timing
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Request(ctx, s.Addr(), m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(8) // 8 callers per CPU share the connection
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Request(ctx, s.Addr(), m); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkPushThroughput measures one-way pushes (Ack) from a client to a
// server handler; the clock stops once the handler has seen all of them.
func BenchmarkPushThroughput(b *testing.B) {
	var got atomic.Int64
	done := make(chan struct{}, 1)
	var want atomic.Int64
	s := startServer(b, "127.0.0.1:0", func(_ Peer, _ uint64, m message.Message) {
		if got.Add(1) == want.Load() {
			done <- struct{}{}
		}
	}, Options{})
	c := startClient(b, nil, Options{})
	ctx := context.Background()
	m := message.Ack{TaskInstanceID: 1, Host: "worker-1", LogPath: "/var/log/beluga/1.log"}

	run := func(b *testing.B, send func(n int)) {
		got.Store(0)
		want.Store(int64(b.N))
		b.ResetTimer()
		send(b.N)
		<-done
		b.StopTimer()
	}
	b.Run("serial", func(b *testing.B) {
		run(b, func(n int) {
			for range n {
				if err := c.Send(ctx, s.Addr(), m); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("parallel", func(b *testing.B) {
		run(b, func(int) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Send(ctx, s.Addr(), m); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	})
}

// BenchmarkHandshake measures connect to first reply: TCP connect, the
// authentication handshake (or none) and one Ping round trip.
func BenchmarkHandshake(b *testing.B) {
	for _, tc := range []struct {
		name string
		auth func(role string) *Auth
		tls  bool
	}{
		{"open", func(string) *Auth { return nil }, false},
		{"auth", func(role string) *Auth { return testAuth(testKey, role, "127.0.0.1:1") }, false},
		{"auth+tls", func(role string) *Auth { return testAuth(testKey, role, "127.0.0.1:1") }, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var st, ct *TLS
			if tc.tls {
				st, ct = tlsFor(b, nil, nil), tlsFor(b, nil, nil)
			}
			s := startServer(b, "127.0.0.1:0", serve, Options{Auth: tc.auth(RoleWorker), TLS: st})
			c := startClient(b, nil, Options{Auth: tc.auth(RoleMaster), TLS: ct})
			ctx := context.Background()
			for b.Loop() {
				if _, err := c.Request(ctx, s.Addr(), message.Ping{}); err != nil {
					b.Fatal(err)
				}
				c.Forget(s.Addr())
			}
		})
	}
}

// BenchmarkRequestReplyAuth is BenchmarkRequestReply's serial case over an
// authenticated connection: the per-message cost of auth (none expected:
// the check is one flag per connection), and of TLS on top (the bridge of
// tls.go: encryption and a local copy each way).
func BenchmarkRequestReplyAuth(b *testing.B) {
	for _, tc := range []struct {
		name      string
		auth, tls bool
	}{{"open", false, false}, {"auth", true, false}, {"auth+tls", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var so, co Options
			if tc.auth {
				so.Auth, co.Auth = testAuth(testKey, RoleWorker, "w:1"), testAuth(testKey, RoleMaster, "m:1")
			}
			if tc.tls {
				so.TLS, co.TLS = tlsFor(b, nil, nil), tlsFor(b, nil, nil)
			}
			s := startServer(b, "127.0.0.1:0", serve, so)
			c := startClient(b, nil, co)
			ctx := context.Background()
			m := message.Dispatch{TaskInstanceID: 1, WorkflowInstanceID: 2, Name: "t", TaskType: "shell", Command: "echo hi"}
			if _, err := c.Request(ctx, s.Addr(), m); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := c.Request(ctx, s.Addr(), m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
