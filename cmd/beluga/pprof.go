package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"

	"go.uber.org/zap"
)

// startPprof serves the profiler on BELUGA_PPROF (e.g. 127.0.0.1:6060) when
// set: it is how benchmark figures are explained. Off by default, and only
// on a loopback address: profiles show what the process holds.
func startPprof(log *zap.Logger) error {
	addr := os.Getenv("BELUGA_PPROF")
	if addr == "" {
		return nil
	}
	_, err := servePprof(addr, log)
	return err
}

// servePprof listens on addr, which must be loopback, and serves the
// profiles until the listener is closed. The command line is left out: it
// can hold a database password.
func servePprof(addr string, log *zap.Logger) (net.Listener, error) {
	if err := loopbackAddr(addr); err != nil {
		return nil, fmt.Errorf("BELUGA_PPROF %q: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("BELUGA_PPROF: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/cmdline", http.NotFound)
	log.Info("pprof listening", zap.String("addr", ln.Addr().String()))
	go func() {
		if err := http.Serve(ln, mux); err != nil && !errors.Is(err, net.ErrClosed) {
			log.Warn("pprof server", zap.Error(err))
		}
	}()
	return ln, nil
}

// loopbackAddr accepts host:port whose host is localhost or a loopback IP.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("the profiler listens on loopback only (127.0.0.1, ::1 or localhost), not %q", host)
}
