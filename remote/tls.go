package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// TLS on the cluster links (docs/architecture.md, "Wire protocol").
//
// gnet has no TLS, so TLS terminates in front of the engine: each TLS
// connection is a crypto/tls conn on Go's net package, and its plaintext
// reaches the engine over a Unix socketpair, whose other end is enrolled
// into gnet exactly like a plain TCP conn. Two goroutines per connection
// copy between the two (a bridge). Framing, buffer limits, idle timeouts
// and the HMAC handshake are the engine's, unchanged: they run on the
// plaintext, inside TLS, and the plain path has no TLS code in it at all.
// The price is two goroutines, two descriptors and one local copy per TLS
// connection; bench_test.go measures it.

// TLS holds a process's certificate and the cluster CA. Cluster links are
// mutual: a server asks for the client's certificate and both sides check
// the other's against the CA (a client also checks the server's name
// against the address it dialled).
type TLS struct {
	cert tls.Certificate
	cas  *x509.CertPool
}

// NewTLS builds TLS from a certificate (with its key) and the CA pool.
func NewTLS(cert tls.Certificate, cas *x509.CertPool) *TLS { return &TLS{cert: cert, cas: cas} }

// LoadTLS reads a PEM certificate, its key and the CA certificate(s) that
// peers' certificates must chain to.
func LoadTLS(certFile, keyFile, caFile string) (*TLS, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls certificate %s / key %s: %w", certFile, keyFile, err)
	}
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls ca %s: no PEM certificate in it", caFile)
	}
	return &TLS{cert: cert, cas: pool}, nil
}

// CAs is the pool of the CA, for clients of the HTTPS API.
func (t *TLS) CAs() *x509.CertPool { return t.cas }

// serverConfig is a cluster port's: TLS 1.3 (both ends are Beluga) and a
// client certificate from the CA required.
func (t *TLS) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    t.cas,
	}
}

// clientConfig is for dialling addr on a cluster port.
func (t *TLS) clientConfig(addr string) *tls.Config {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.cert},
		RootCAs:      t.cas,
		ServerName:   host,
	}
}

// HTTPSConfig is the API server's: its certificate, no client certificate
// asked (browsers and the CLI authenticate otherwise), TLS 1.2 or later.
func (t *TLS) HTTPSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{t.cert}}
}

// bridge copies one TLS connection's plaintext to and from its socketpair
// end; the other end belongs to the engine. Either side ending ends both.
type bridge struct {
	tc   *tls.Conn
	mine net.Conn
	once sync.Once
}

// newBridge makes the socketpair for tc and returns the end to enroll.
func newBridge(tc *tls.Conn) (net.Conn, *bridge, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", os.NewSyscallError("socketpair", err))
	}
	ends := make([]net.Conn, 0, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "beluga-tls")
		c, err := net.FileConn(f) // dups the descriptor
		f.Close()
		if err != nil {
			for _, e := range ends {
				e.Close()
			}
			if i == 0 {
				syscall.Close(fds[1])
			}
			return nil, nil, fmt.Errorf("socketpair: %w", err)
		}
		ends = append(ends, c)
	}
	return ends[0], &bridge{tc: tc, mine: ends[1]}, nil
}

// start runs the two copies; wg counts them.
func (b *bridge) start(wg *sync.WaitGroup) {
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(b.mine, b.tc); b.close() }()
	go func() { defer wg.Done(); _, _ = io.Copy(b.tc, b.mine); b.close() }()
}

// close ends both sides: the TLS conn sends its close_notify (bounded by
// crypto/tls, which skips it while a write is blocked), and the engine's
// end then reads EOF and closes the gnet conn.
func (b *bridge) close() {
	b.once.Do(func() {
		_ = b.tc.Close()
		_ = b.mine.Close()
	})
}

// tlsHandshakeTimeout bounds a server's TLS handshake: the engine's
// handshake timeout starts only once the connection is enrolled.
func (l Limits) tlsHandshakeTimeout() time.Duration {
	if l.HandshakeTimeout > 0 {
		return l.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

// admitTLS runs the TLS handshake of an accepted connection off the accept
// loop, then enrolls its plaintext end. A peer that does not complete a
// TLS handshake with a certificate from the CA (a plain-text peer among
// them) is closed with a rate-limited log line; nothing of it reaches the
// engine.
func (s *Server) admitTLS(nc net.Conn, ip string, enroll func(net.Conn, string, string) error) {
	defer s.hsWG.Done()
	ctx, cancel := context.WithTimeout(s.hsCtx, s.limits.tlsHandshakeTimeout())
	defer cancel()
	remote := nc.RemoteAddr().String()
	tc := tls.Server(nc, s.tlsCfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		s.peers.release(ip)
		if s.hsCtx.Err() == nil {
			s.tlsFailed(remote, err)
		}
		return
	}
	end, br, err := newBridge(tc)
	if err != nil {
		tc.Close()
		s.peers.release(ip)
		s.tlsFailed(remote, err)
		return
	}
	if err := enroll(end, remote, ip); err != nil { // enroll released ip
		br.close()
		s.tlsFailed(remote, err)
		return
	}
	br.start(&s.pumps)
}

func (s *Server) tlsFailed(remote string, err error) {
	if n, ok := s.ev.authLog.allow(time.Now()); ok {
		fields := []zap.Field{zap.String("remote", remote), zap.Error(err)}
		if n > 0 {
			fields = append(fields, zap.Int("suppressed_since_last", n))
		}
		s.log.Warn("closing connection: TLS handshake failed", fields...)
	}
}

// dialTLS runs the client's TLS handshake on nc and returns the end to
// enroll and the bridge to start once it is enrolled.
func dialTLS(ctx context.Context, t *TLS, nc net.Conn, addr string) (net.Conn, *bridge, error) {
	tc := tls.Client(nc, t.clientConfig(addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		var rec tls.RecordHeaderError
		if errors.As(err, &rec) {
			return nil, nil, fmt.Errorf("tls handshake: %w (is TLS on at the peer?)", err)
		}
		return nil, nil, fmt.Errorf("tls handshake: %w", err)
	}
	end, br, err := newBridge(tc)
	if err != nil {
		tc.Close()
		return nil, nil, err
	}
	return end, br, nil
}
