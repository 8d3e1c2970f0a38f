package metrics

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Handler serves the registry in the Prometheus text format to a scraper
// that sends "Authorization: Bearer <token>": nothing on a Beluga port is
// anonymous, and the figures say what the cluster runs. Anything else gets
// 401. An empty token refuses every scrape.
func Handler(token string) http.Handler {
	inner := promhttp.HandlerFor(Registry, promhttp.HandlerOpts{})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="beluga metrics"`)
			http.Error(w, "metrics: a bearer token (the --metrics-token-file's) is required", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// ReadToken reads the scrape token from path (surrounding space trimmed); an
// empty file is an error.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("metrics token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("metrics token file %s is empty", path)
	}
	return tok, nil
}

// EnsureToken reads the token at path, or makes one there (0600) when the
// file does not exist.
func EnsureToken(path string) (string, error) {
	tok, err := ReadToken(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return tok, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("metrics token: %w", err)
	}
	tok = hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // made meanwhile
			return ReadToken(path)
		}
		return "", fmt.Errorf("metrics token file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("metrics token file: %w", err)
	}
	return tok, f.Close()
}

// Server serves /metrics on its own address (a master's or worker's
// --metrics-listen).
type Server struct {
	ln  net.Listener
	srv *http.Server
	log *zap.Logger
	end chan struct{}
}

// Listen starts serving /metrics on addr with token.
func Listen(addr, token string, log *zap.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", Handler(token))
	// A liveness probe for supervisors (a container's health check): it
	// says only that the process serves HTTP, so it needs no token and
	// tells a stranger nothing. A TCP connect to the RPC port would do as
	// much but logs an unauthenticated connection each time.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	s := &Server{ln: ln, log: log.Named("metrics"), end: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.end)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("metrics server", zap.Error(err))
		}
	}()
	s.log.Info("metrics listening", zap.String("addr", ln.Addr().String()))
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Stop closes the listener and waits (up to 5 s) for scrapes in flight.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.end
}
