package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestPprofLoopbackOnly: the profiler binds only a loopback address, and
// does not serve the command line (which can hold a --db password).
func TestPprofLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:6060", "nonsense"} {
		if ln, err := servePprof(addr, zap.NewNop()); err == nil {
			ln.Close()
			t.Fatalf("servePprof(%q) listened on %s; want it refused", addr, ln.Addr())
		} else if !strings.Contains(err.Error(), "BELUGA_PPROF") {
			t.Fatalf("servePprof(%q): %v; want an error naming BELUGA_PPROF", addr, err)
		}
	}
	ln, err := servePprof("127.0.0.1:0", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/debug/pprof/heap?debug=1"); code != http.StatusOK {
		t.Fatalf("heap profile: %d", code)
	}
	if code, body := get("/debug/pprof/cmdline"); code == http.StatusOK {
		t.Fatalf("cmdline is served: %q", body)
	}
}
