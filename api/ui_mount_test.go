package api

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/api/ui"
)

// TestUIMounted: the API handler serves the web UI at "/" and its assets
// under /ui/, with the UI's security headers, while /api/... keeps
// answering the API's JSON errors.
func TestUIMounted(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})

	r := b.get("/")
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %q", r.status, r.header.Get("Content-Type"))
	}
	if r.header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET /: headers %v", r.header)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Fatal("GET /: the UI does not run through the API middleware")
	}
	app := regexp.MustCompile(`/ui/assets/app-[^"]+\.js`).FindString(string(r.body))
	if app == "" {
		t.Fatalf("GET /: %s", r.body)
	}
	r = b.get(app)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("GET %s: %d %q", app, r.status, r.header.Get("Content-Type"))
	}

	e := b.get("/api/v1/nope").wantError(t, http.StatusNotFound, CodeNotFound)
	if !strings.Contains(e.Message, "/api/v1/nope") {
		t.Fatalf("message %q", e.Message)
	}
	if r := b.get("/api/v1/nope"); r.header.Get("Content-Security-Policy") != "" {
		t.Fatal("an API answer carries the UI's headers")
	}
	b.get("/ui/nope.js").wantError(t, http.StatusNotFound, CodeNotFound)
	b.do("DELETE", "/", "", nil).wantError(t, http.StatusNotFound, CodeNotFound)
}
