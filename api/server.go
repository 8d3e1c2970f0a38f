package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// ShutdownTimeout bounds how long Stop waits for requests in flight.
const ShutdownTimeout = 10 * time.Second

// Server serves an http.Handler on a TCP address.
type Server struct {
	listen string
	srv    *http.Server
	log    *zap.Logger

	life startstop.Base // owns the serve and shutdown goroutines
	mu   sync.Mutex
	ln   net.Listener
	tls  bool // UseTLS: serve HTTPS only
}

// NewServer prepares a server for listen (host:port; ":0" picks a port).
func NewServer(listen string, h http.Handler, log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("api")
	s := &Server{
		listen: listen,
		log:    log,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       time.Minute, // a 1 MiB spec on a slow link, not a slowloris
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			// A flood of failed TLS handshakes must not flood the log.
			ErrorLog: stdlog.New(&handshakeLogLimit{w: zap.NewStdLog(log.Named("http")).Writer(), every: 10 * time.Second}, "", 0),
		},
	}
	s.life.Name, s.life.Log = "api server", log
	closing := make(chan struct{})
	var once sync.Once
	s.srv.BaseContext = func(net.Listener) context.Context {
		return context.WithValue(context.Background(), closingKey{}, (<-chan struct{})(closing))
	}
	s.srv.RegisterOnShutdown(func() { once.Do(func() { close(closing) }) })
	return s
}

type closingKey struct{}

// serverClosing is closed when the server begins to shut down: streams
// that never end on their own (GET /api/v1/events) end then, so shutdown
// does not wait for them (nil outside a Server).
func serverClosing(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(closingKey{}).(<-chan struct{})
	return ch
}

// UseTLS makes the server serve HTTPS only, with cfg (before Start). A
// plain-HTTP request is answered 400 by net/http and reaches no handler.
func (s *Server) UseTLS(cfg *tls.Config) {
	s.srv.TLSConfig = cfg
	s.tls = true
}

// Start listens and serves in the background; the address accepts
// connections when it returns. ctx bounds start-up only. A second Start is
// an error; so is a Start after Stop or after a failed Start.
func (s *Server) Start(ctx context.Context) error {
	return s.life.StartWith(context.WithoutCancel(ctx), func() error { return s.start(ctx) }, nil)
}

func (s *Server) start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.listen)
	if err != nil {
		return fmt.Errorf("api server: listen on %s: %w", s.listen, err)
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.life.Go(func(context.Context) {
		serve := func() error { return s.srv.Serve(ln) }
		if s.tls {
			serve = func() error { return s.srv.ServeTLS(ln, "", "") } // certificates in TLSConfig
		}
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve failed", zap.String("addr", ln.Addr().String()), zap.Error(err))
		}
	})
	s.life.Go(s.shutdown)
	s.log.Info("listening", zap.String("addr", ln.Addr().String()), zap.Bool("https", s.tls))
	return nil
}

// shutdown waits for Stop, then closes the listener first (no new requests),
// lets requests in flight finish for up to ShutdownTimeout, then closes what
// is left; Serve returns meanwhile.
func (s *Server) shutdown(ctx context.Context) {
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.log.Warn("graceful shutdown timed out; closing connections", zap.Error(err))
		_ = s.srv.Close()
	}
}

// Addr is the address listened on ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stop shuts the server down (see shutdown) and returns after the serve
// goroutine exited. Safe twice and before Start; a second call waits for the
// first to finish.
func (s *Server) Stop() { _ = s.life.Stop(nil) }

// handshakeLogLimit passes net/http's error lines through, except "TLS
// handshake error" ones: one per interval, with a count of those dropped.
type handshakeLogLimit struct {
	w       io.Writer
	every   time.Duration
	mu      sync.Mutex
	last    time.Time
	dropped int
}

func (h *handshakeLogLimit) Write(p []byte) (int, error) {
	n := len(p)
	if !bytes.Contains(p, []byte("TLS handshake error")) {
		return h.w.Write(p)
	}
	h.mu.Lock()
	now := time.Now()
	if !h.last.IsZero() && now.Sub(h.last) < h.every {
		h.dropped++
		h.mu.Unlock()
		return n, nil
	}
	h.last, p = now, bytes.TrimRight(p, "\n")
	if h.dropped > 0 {
		p = fmt.Appendf(p, " (and %d more since the last such line)", h.dropped)
		h.dropped = 0
	}
	h.mu.Unlock()
	_, err := h.w.Write(p)
	return n, err
}
