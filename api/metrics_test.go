package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/testkit/metricstest"
)

// TestMetricsRoute: /metrics wants its bearer token (401 without, 405 for
// another method), answers in front of the Host policy, and counts the API's
// requests by route pattern and code.
func TestMetricsRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	srv := httptest.NewServer(NewHandler(Deps{Store: b.store, MetricsToken: "tok"}))
	defer srv.Close()
	if code, _, err := metricstest.Get(nil, srv.URL+"/metrics", ""); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("no token: %d %v", code, err)
	}
	if code, _, err := metricstest.Get(nil, srv.URL+"/metrics", "nope"); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %v", code, err)
	}
	resp, err := http.Post(srv.URL+"/metrics", "text/plain", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /metrics: %d", resp.StatusCode)
	}
	_, before, err := metricstest.Get(nil, srv.URL+"/metrics", "tok")
	if err != nil || before == nil {
		t.Fatalf("scrape: %v", err)
	}
	route := "route=GET /api/v1/projects/{project}"
	for range 3 {
		r, err := http.Get(srv.URL + "/api/v1/projects/none")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
	// A Host the policy refuses still gets /metrics (the token guards it).
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer tok")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("/metrics with a foreign Host: %d", r.StatusCode)
	}
	_, after, _ := metricstest.Get(nil, srv.URL+"/metrics", "tok")
	if d := after.Value("beluga_http_requests_total", route, "code=401") - before.Value("beluga_http_requests_total", route, "code=401"); d != 3 {
		t.Fatalf("%s code 401 moved by %v, want 3 (anonymous calls)", route, d)
	}
}
