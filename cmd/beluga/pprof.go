package main

import (
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on the default mux
	"os"

	"go.uber.org/zap"
)

// startPprof serves the profiler on BELUGA_PPROF (e.g. 127.0.0.1:6060) when
// set: it is how benchmark figures are explained. Off by default.
func startPprof(log *zap.Logger) {
	addr := os.Getenv("BELUGA_PPROF")
	if addr == "" {
		return
	}
	go func() {
		log.Info("pprof listening", zap.String("addr", addr))
		if err := http.ListenAndServe(addr, nil); err != nil {
			log.Warn("pprof server", zap.Error(err))
		}
	}()
}
