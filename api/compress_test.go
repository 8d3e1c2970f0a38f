package api

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCompressed: an answer of 1 KiB or more is gzipped for a client that
// takes gzip and sent as it is to one that does not; the event stream is
// never gzipped (its first bytes must go out when flushed).
func TestCompressed(t *testing.T) {
	t.Parallel()
	big := strings.Repeat(`{"name":"task","state":"succeeded"},`, 100)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, big)
	})
	get := func(route, enc string) *http.Response {
		req := httptest.NewRequest("GET", "/x", nil)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		rec := httptest.NewRecorder()
		compressed(route, h).ServeHTTP(rec, req)
		return rec.Result()
	}
	r := get("GET /api/v1/instances/{id}", "gzip, br")
	if r.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(r.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("with gzip: headers %v", r.Header)
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || string(b) != big {
		t.Fatalf("unzipped %d bytes (%v), want the %d written", len(b), err, len(big))
	}
	if r := get("GET /api/v1/instances/{id}", ""); r.Header.Get("Content-Encoding") != "" {
		t.Errorf("without Accept-Encoding: Content-Encoding %q", r.Header.Get("Content-Encoding"))
	}
	if r := get("GET /api/v1/events", "gzip"); r.Header.Get("Content-Encoding") != "" {
		t.Errorf("the event stream: Content-Encoding %q", r.Header.Get("Content-Encoding"))
	}
}

// TestAPIAnswersGzipped: through the whole handler, a list read with
// Accept-Encoding: gzip arrives gzipped and unzips to the plain answer.
func TestAPIAnswersGzipped(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	for i := 0; i < 30; i++ {
		b.mustProject(strings.Repeat("p", 1) + string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	plain := b.request("GET", "/api/v1/projects", "", "", nil).want(t, http.StatusOK)
	zipped := b.request("GET", "/api/v1/projects", "", "", nil, "Accept-Encoding", "gzip").want(t, http.StatusOK)
	if zipped.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q for %d bytes of JSON", zipped.header.Get("Content-Encoding"), len(plain.body))
	}
	zr, err := gzip.NewReader(strings.NewReader(string(zipped.body)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(zr); err != nil || string(got) != string(plain.body) {
		t.Fatalf("unzipped %q (%v), want %q", got, err, plain.body)
	}
	t.Logf("projects list: %d bytes, %d gzipped", len(plain.body), len(zipped.body))
}
