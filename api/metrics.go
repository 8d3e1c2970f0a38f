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

// withMetrics serves GET /metrics in front of the API's middleware chain:
// the process's registry to a scraper with the metrics bearer token. It is
// not a REST route (not in openapi.yaml's /api/v1 table) and stays outside
// the users' auth and the Host policy: scrapers hold this token, not a
// user account, and the token is what a rebinding page cannot send.
func withMetrics(next http.Handler, token string) http.Handler {
	m := metrics.Handler(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "metrics: method "+r.Method+" is not allowed; use GET", http.StatusMethodNotAllowed)
			return
		}
		m.ServeHTTP(w, r)
	})
}
