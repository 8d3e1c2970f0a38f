package main

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/common/metrics"
)

// metricsFlags adds --metrics-token-file (every server command) and, for a
// master or worker, --metrics-listen (the API and standalone serve /metrics
// on the API port).
func metricsFlags(s *settings, listen bool) {
	if listen {
		s.str("metrics-listen", "address of GET /metrics (Prometheus; default 127.0.0.1:0, loopback) (env BELUGA_METRICS_LISTEN)",
			func(c *config.Config, v string) { c.Metrics.Listen = v })
	}
	s.str("metrics-token-file", "file holding the bearer token GET /metrics requires; without it every scrape gets 401 "+
		"(standalone: default <data-dir>/metrics-token, made 0600 if absent) (env BELUGA_METRICS_TOKEN_FILE)",
		func(c *config.Config, v string) { c.Metrics.TokenFile = v })
}

// metricsToken reads the token file the settings name; "" (and a warning)
// when none is set, so that every scrape is refused.
func metricsToken(c config.Config, log *zap.Logger) (string, error) {
	if c.Metrics.TokenFile == "" {
		log.Warn("no --metrics-token-file: GET /metrics refuses every scrape (401)")
		return "", nil
	}
	tok, err := metrics.ReadToken(c.Metrics.TokenFile)
	if err != nil {
		return "", usageError{err}
	}
	return tok, nil
}

// startMetrics serves GET /metrics on --metrics-listen (master, worker).
func startMetrics(c config.Config, log *zap.Logger) (*metrics.Server, error) {
	tok, err := metricsToken(c, log)
	if err != nil {
		return nil, err
	}
	srv, err := metrics.Listen(c.Metrics.Listen, tok, log)
	if err != nil {
		return nil, usageError{fmt.Errorf("--metrics-listen: %w", err)}
	}
	return srv, nil
}
