package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ShutdownTimeout bounds how long Stop waits for requests in flight.
const ShutdownTimeout = 10 * time.Second

// Server serves an http.Handler on a TCP address.
type Server struct {
	listen string
	srv    *http.Server
	log    *zap.Logger

	mu      sync.Mutex
	ln      net.Listener
	started bool
	stopped bool
	done    chan struct{} // closed when the Serve goroutine has returned
	halted  chan struct{} // closed when the first Stop has finished
}

// NewServer prepares a server for listen (host:port; ":0" picks a port).
func NewServer(listen string, h http.Handler, log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("api")
	return &Server{
		listen: listen,
		log:    log,
		halted: make(chan struct{}),
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       time.Minute, // a 1 MiB spec on a slow link, not a slowloris
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          zap.NewStdLog(log.Named("http")),
		},
	}
}

// Start listens and serves in the background; the address accepts
// connections when it returns.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("api server: start after stop")
	}
	if s.started {
		return errors.New("api server: already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.listen)
	if err != nil {
		return fmt.Errorf("api server: listen on %s: %w", s.listen, err)
	}
	s.ln, s.started, s.done = ln, true, make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve failed", zap.String("addr", ln.Addr().String()), zap.Error(err))
		}
	}()
	s.log.Info("listening", zap.String("addr", ln.Addr().String()))
	return nil
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

// Stop closes the listener first (no new requests), lets requests in flight
// finish for up to ShutdownTimeout, then closes what is left, and returns
// after the serve goroutine exited. Safe twice and before Start; a second
// call waits for the first to finish.
func (s *Server) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.halted
		return
	}
	s.stopped = true
	started := s.started
	s.mu.Unlock()
	defer close(s.halted)
	if !started {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.log.Warn("graceful shutdown timed out; closing connections", zap.Error(err))
		_ = s.srv.Close()
	}
	<-s.done
}
