package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/beluga-scheduler/beluga/common/metrics"
)

// instrument counts a route's requests by status code and times them,
// labelled with the route's pattern (never the raw path: ids would make a
// family per instance).
func instrument(route string, h http.Handler) http.Handler {
	labels := prometheus.Labels{"route": route}
	return promhttp.InstrumentHandlerDuration(metrics.HTTPDuration.MustCurryWith(labels),
		promhttp.InstrumentHandlerCounter(metrics.HTTPRequests.MustCurryWith(labels), h))
}

// mountMetrics serves GET /metrics: the process's registry to a scraper
// with the metrics bearer token. It is not a REST route (not in
// openapi.yaml's /api/v1 table) and is outside the users' auth: scrapers
// hold the token, not a user account.
func mountMetrics(mux *http.ServeMux, token string) {
	mux.Handle("GET /metrics", metrics.Handler(token))
}
