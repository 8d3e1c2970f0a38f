package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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
