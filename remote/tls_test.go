package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/testkit/testcert"
)

// testCA is one CA per test binary: key generation is the slow part.
var testCA = sync.OnceValues(func() (*testcert.CA, error) { return testcert.NewCA("beluga test CA") })

// tlsFor returns a TLS of a certificate for 127.0.0.1 signed by ca (the
// shared test CA when nil), trusting trust (ca when nil).
func tlsFor(t testing.TB, ca, trust *testcert.CA) *TLS {
	t.Helper()
	if ca == nil {
		var err error
		if ca, err = testCA(); err != nil {
			t.Fatal(err)
		}
	}
	if trust == nil {
		trust = ca
	}
	kp, err := ca.KeyPair("node", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	return NewTLS(kp, trust.Pool())
}

// TLS and the HMAC handshake together: frames flow both ways, including
// one larger than a TLS record, and the server knows the client's role.
func TestTLSPeersExchangeFramesWithAuth(t *testing.T) {
	var rec recorder
	s := startServer(t, "127.0.0.1:0", func(p Peer, reqID uint64, m message.Message) {
		rec.handle(p, 0, m)
		serve(p, reqID, m)
		if _, ok := m.(message.Ping); ok {
			_ = p.Send(0, message.Nudge{}) // a push back to the client
		}
	}, Options{Auth: testAuth(testKey, RoleWorker, "w1:1"), TLS: tlsFor(t, nil, nil)})
	var back recorder
	c := startClient(t, back.handle, Options{Auth: testAuth(testKey, RoleMaster, "m1:1"), TLS: tlsFor(t, nil, nil)})

	if _, err := c.Request(ctxT(t), s.Addr(), message.Ping{}); err != nil {
		t.Fatalf("ping over TLS: %v", err)
	}
	big := strings.Repeat("x", 300<<10) // many TLS records
	r, err := c.Request(ctxT(t), s.Addr(), message.Dispatch{TaskInstanceID: 7, Command: big})
	if err != nil {
		t.Fatalf("dispatch over TLS: %v", err)
	}
	if got := r.(message.DispatchReply); got.TaskInstanceID != 7 || !got.Accepted {
		t.Fatalf("reply %+v", got)
	}
	r2, err := c.Request(ctxT(t), s.Addr(), message.LogRequest{TaskInstanceID: 1, Limit: 200 << 10})
	if err != nil || len(r2.(message.LogResponse).Data) != 200<<10 {
		t.Fatalf("log response over TLS: %v", err)
	}
	wait.Until(t, 10*time.Second, "the server's push", func() bool { return back.count() == 1 })

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ids[0] != (Identity{RoleMaster, "m1:1"}) {
		t.Fatalf("server saw peer %v, want master m1:1", rec.ids[0])
	}
	if d := rec.msgs[1].(message.Dispatch); d.Command != big {
		t.Fatalf("dispatch command of %d bytes arrived as %d", len(big), len(d.Command))
	}
}

// A TLS server refuses plain-text peers: a raw Dispatch frame, a plain
// client with the right secret. Nothing reaches the handler, and each
// refusal is one log line.
func TestTLSServerRefusesPlainPeer(t *testing.T) {
	log, logs := observed()
	var rec recorder
	s := startServer(t, "127.0.0.1:0", rec.handle,
		Options{Auth: testAuth(testKey, RoleWorker, "w1:1"), TLS: tlsFor(t, nil, nil), Log: log})

	body, _ := message.Encode(message.Dispatch{TaskInstanceID: 1, Command: "touch /tmp/pwned"})
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(frame.Append(nil, frame.Frame{Type: message.TypeDispatch, RequestID: 1, Body: body})); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, nc)

	plain := startClient(t, nil, Options{Auth: testAuth(testKey, RoleMaster, "m1:1")})
	if _, err := plain.Request(ctxT(t), s.Addr(), message.Ping{}); err == nil {
		t.Fatal("a plain-text client was answered by a TLS server")
	}

	wait.Until(t, 10*time.Second, "two refusals logged", func() bool {
		return logs.FilterMessage("closing connection: TLS handshake failed").Len() == 2
	})
	if n := rec.count(); n != 0 {
		t.Fatalf("%d messages reached the handler from plain-text peers", n)
	}
}

// Certificates must chain to the cluster CA, both ways: a client with a
// certificate of another CA (or none) is refused by the server, and a
// client refuses a server whose certificate is of another CA.
func TestTLSRefusesCertificateFromAnotherCA(t *testing.T) {
	ca, err := testCA()
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcert.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	log, logs := observed()
	var rec recorder
	s := startServer(t, "127.0.0.1:0", rec.handle,
		Options{Auth: testAuth(testKey, RoleWorker, "w1:1"), TLS: tlsFor(t, ca, nil), Log: log})

	// Signed by another CA, trusting ours (so the client would go on).
	foreign := startClient(t, nil, Options{Auth: testAuth(testKey, RoleMaster, "m1:1"), TLS: tlsFor(t, other, ca)})
	if _, err := foreign.Request(ctxT(t), s.Addr(), message.Ping{}); err == nil {
		t.Fatal("a client with another CA's certificate was answered")
	}
	// No certificate at all.
	nc, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err == nil {
		_, err = nc.Write(handshakeFrame(typeHello, []byte(RoleMaster), []byte("m1:1"), make([]byte, nonceLen)))
		if err == nil {
			_, err = nc.Read(make([]byte, 1))
		}
		nc.Close()
	}
	if err == nil {
		t.Fatal("a client without a certificate got an answer")
	}
	wait.Until(t, 10*time.Second, "two refusals logged", func() bool {
		return logs.FilterMessage("closing connection: TLS handshake failed").Len() == 2
	})

	// A server of another CA: our client refuses it.
	s2 := startServer(t, "127.0.0.1:0", rec.handle, Options{Auth: testAuth(testKey, RoleWorker, "w2:1"), TLS: tlsFor(t, other, other)})
	c := startClient(t, nil, Options{Auth: testAuth(testKey, RoleMaster, "m1:1"), TLS: tlsFor(t, ca, nil)})
	_, err = c.Request(ctxT(t), s2.Addr(), message.Ping{})
	var unknown x509UnknownAuthority
	if err == nil || !errors.As(err, &unknown) {
		t.Fatalf("request to a server of another CA: %v, want an unknown-authority error", err)
	}
	if n := rec.count(); n != 0 {
		t.Fatalf("%d messages reached a handler across CAs", n)
	}
}

// A TLS client to a plain server fails with an error that says so.
func TestTLSClientToPlainServer(t *testing.T) {
	var rec recorder
	s := startServer(t, "127.0.0.1:0", rec.handle, Options{Auth: testAuth(testKey, RoleWorker, "w1:1")})
	c := startClient(t, nil, Options{Auth: testAuth(testKey, RoleMaster, "m1:1"), TLS: tlsFor(t, nil, nil)})
	_, err := c.Request(ctxT(t), s.Addr(), message.Ping{})
	if err == nil {
		t.Fatal("a TLS client was answered by a plain server")
	}
	if rec.count() != 0 {
		t.Fatal("a TLS client's bytes reached a plain server's handler")
	}
}

// Stop with TLS connections open ends every bridge (TestMain checks that
// no goroutine outlives the tests).
func TestTLSStopClosesBridges(t *testing.T) {
	s := NewServer("127.0.0.1:0", serve, Options{TLS: tlsFor(t, nil, nil)})
	if err := s.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	c := NewClient(nil, Options{TLS: tlsFor(t, nil, nil)})
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctxT(t), s.Addr(), message.Ping{}); err != nil {
		t.Fatal(err)
	}
	// A handshake left hanging: Stop must not wait for its timeout.
	hang, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	s.Stop()
	if _, err := c.Request(ctxT(t), s.Addr(), message.Ping{}); !errors.Is(err, ErrClosed) && err == nil {
		t.Fatalf("request after server stop: %v", err)
	}
	c.Stop()
}

type x509UnknownAuthority = x509.UnknownAuthorityError
