package api

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/testcert"
)

func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Stop before Start, and twice.
	idle := NewServer("127.0.0.1:0", http.NotFoundHandler(), nil)
	idle.Stop()
	idle.Stop()
	if err := idle.Start(ctx); err == nil {
		t.Fatal("start after stop succeeded")
	}

	entered := make(chan struct{})
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	s := NewServer("127.0.0.1:0", mux, nil)
	if s.Addr() != "" {
		t.Fatalf("addr before start %q", s.Addr())
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err == nil {
		t.Fatal("second start succeeded")
	}
	base := "http://" + s.Addr()
	// Listening when Start returns: no retry needed.
	res, err := http.Get(base + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	// A request in flight finishes during Stop.
	got := make(chan string, 1)
	go func() {
		res, err := http.Get(base + "/slow")
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		got <- string(b)
	}()
	<-entered
	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()
	// A second Stop waits for the first.
	second := make(chan struct{})
	go func() { s.Stop(); close(second) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a request was in flight")
	case <-second:
		t.Fatal("second Stop returned before the first")
	case <-time.After(50 * time.Millisecond): // only bounds the negative check
	}
	close(release)
	if g := <-got; g != "done" {
		t.Fatalf("in-flight request got %q", g)
	}
	<-stopped
	<-second
	if _, err := http.Get(base + "/fast"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("after stop: %v", err)
	}

	// A taken port is an error naming it.
	busy := NewServer("127.0.0.1:0", mux, nil)
	if err := busy.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer busy.Stop()
	clash := NewServer(busy.Addr(), mux, nil)
	if err := clash.Start(ctx); err == nil || !strings.Contains(err.Error(), busy.Addr()) {
		t.Fatalf("port clash: %v", err)
	}
}

// With TLS the API serves HTTPS to a client that trusts the CA, and a
// plain-HTTP request gets net/http's 400 without reaching a handler.
func TestServerHTTPS(t *testing.T) {
	t.Parallel()
	ca, err := testcert.NewCA("api test CA")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.KeyPair("api", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	s := NewServer("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "ok")
	}), nil)
	s.UseTLS(&tls.Config{Certificates: []tls.Certificate{kp}})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + s.Addr() + "/x")
	if err != nil {
		t.Fatalf("https with the CA: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(b) != "ok" || res.TLS == nil {
		t.Fatalf("https answer %d %q (tls %v)", res.StatusCode, b, res.TLS != nil)
	}

	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	res, err = plain.Get("http://" + s.Addr() + "/x")
	if err == nil {
		b, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain http to the https API: %d %q, want 400", res.StatusCode, b)
		}
	}
	// Without the CA the certificate is not trusted.
	if _, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}).Get("https://" + s.Addr() + "/x"); err == nil {
		t.Fatal("https without the CA succeeded")
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1 (only the https request)", n)
	}
}
