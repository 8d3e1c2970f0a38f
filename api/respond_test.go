package api

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestFailDatabaseUnreachable: a store error saying the database cannot be
// reached is a 503 with Retry-After whose body names no address and no
// driver text; the detail is logged, once per outage window rather than
// once per request. Anything else stays a 500.
func TestFailDatabaseUnreachable(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	h := &handlers{log: zap.New(core)}
	dial := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 3306},
		Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}
	for range 3 {
		rec := httptest.NewRecorder()
		h.fail(rec, httptest.NewRequest("GET", "/api/v1/projects", nil), fmt.Errorf("authenticate: %w", dial))
		body := rec.Body.String()
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "5" {
			t.Fatalf("got %d, Retry-After %q: want 503 with Retry-After 5; body %s", rec.Code, rec.Header().Get("Retry-After"), body)
		}
		for _, leak := range []string{"10.1.2.3", "dial tcp", "refused", "authenticate"} {
			if strings.Contains(body, leak) {
				t.Fatalf("body shows %q: %s", leak, body)
			}
		}
	}
	if n := logs.FilterMessage("database unreachable: answering 503").Len(); n != 1 {
		t.Fatalf("%d log lines for three failed requests, want 1", n)
	}
	if !strings.Contains(fmt.Sprint(logs.All()[0].ContextMap()["error"]), "10.1.2.3") {
		t.Fatalf("the log line lacks the cause: %v", logs.All()[0].ContextMap())
	}

	rec := httptest.NewRecorder()
	h.fail(rec, httptest.NewRequest("GET", "/api/v1/projects", nil), fmt.Errorf("boom"))
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("a plain error: %d, Retry-After %q, want 500 without it", rec.Code, rec.Header().Get("Retry-After"))
	}
}
