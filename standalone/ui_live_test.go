package standalone_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// liveProxy sits in front of the API: it records each request the browser
// makes (path, query, Last-Event-ID) and can cut the event streams open
// through it, as a proxy or a network drop does.
type liveProxy struct {
	mu      sync.Mutex
	reqs    []seenReq
	streams []context.CancelFunc
	refuse  bool // answer the event stream 503, as a proxy that cannot stream does
}

type seenReq struct {
	path        string
	query       url.Values
	lastEventID string
}

func newLiveProxy(t *testing.T, target string) (*liveProxy, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &liveProxy{}
	rp := httputil.NewSingleHostReverseProxy(u) // flushes text/event-stream at once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.reqs = append(p.reqs, seenReq{r.URL.Path, r.URL.Query(), r.Header.Get("Last-Event-ID")})
		if r.URL.Path == "/api/v1/events" && p.refuse {
			p.mu.Unlock()
			http.Error(w, "no streams here", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == "/api/v1/events" {
			ctx, cancel := context.WithCancel(r.Context())
			p.streams = append(p.streams, cancel)
			r = r.WithContext(ctx)
		}
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.drop()
		srv.Close()
	})
	return p, srv.URL
}

// drop ends every event stream open through the proxy; it returns how many.
func (p *liveProxy) drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.streams)
	for _, c := range p.streams {
		c()
	}
	p.streams = nil
	return n
}

func (p *liveProxy) since(i int) []seenReq {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seenReq(nil), p.reqs[i:]...)
}

// count is how many of the requests since i went to path.
func (p *liveProxy) count(i int, path string) int {
	n := 0
	for _, r := range p.since(i) {
		if r.path == path {
			n++
		}
	}
	return n
}

func (p *liveProxy) n() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// fullReads are the reads of the whole instance (every task) among reqs:
// GET /api/v1/instances/{id} without a task page smaller than tasks.
func fullReads(reqs []seenReq, id int64, tasks int) int {
	n := 0
	for _, r := range reqs {
		if r.path != fmt.Sprintf("/api/v1/instances/%d", id) {
			continue
		}
		limit, err := strconv.Atoi(r.query.Get("tasks_limit"))
		if r.query.Get("tasks_limit") == "" || (err == nil && limit >= tasks && r.query.Get("tasks_offset") == "") {
			n++
		}
	}
	return n
}

// liveSpec: a waits for gate a, b fails once and is retried, after gate b,
// and c runs last.
func liveSpec(dir string) string {
	return fmt.Sprintf(`name: live
tasks:
  - {name: a, command: "while [ ! -f %[1]s/a ]; do sleep 0.05; done"}
  - {name: b, command: "while [ ! -f %[1]s/b ]; do sleep 0.05; done; [ -f %[1]s/failed ] || { touch %[1]s/failed; exit 1; }", retries: 1, retry_interval: 100ms, depends_on: [a]}
  - {name: c, command: "true", depends_on: [b]}
`, dir)
}

func gate(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWebUILiveStream: the instance page follows the event stream. While
// the run goes its nodes, counts and attempts change (b's retry a new row)
// with no read of the whole instance; when the stream is cut mid-run, it
// reconnects with Last-Event-ID and still ends showing the final states.
func TestWebUILiveStream(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	p, base := newLiveProxy(t, e.base)
	b := newBrowser(t, base, e.sessionToken())

	final := `document.querySelector('h1 .badge')?.textContent === 'succeeded' &&
		['a', 'b', 'c'].every(n => document.querySelector('.dag .node[data-task=' + n + ']')?.dataset.state === 'succeeded') &&
		document.querySelector('.dag .node[data-task=b] .sub')?.textContent.startsWith('succeeded · #2') &&
		document.querySelectorAll('table.tasks tr[data-task=b]').length === 2 &&
		document.querySelector('table.tasks tr[data-task=b][data-state=failed]') &&
		document.querySelector('#state-counts li[data-state=succeeded] .n')?.textContent === '3'`

	for _, cut := range []bool{false, true} {
		t.Run(map[bool]string{false: "follows", true: "stream cut mid-run"}[cut], func(t *testing.T) {
			e := e.with(t)
			dir := t.TempDir()
			e.apply(liveSpec(dir))
			id := e.run("live", nil)
			e.waitTask(id, "a", "running")
			b.step(t, 90*time.Second, func(s *session) {
				s.open(fmt.Sprintf("#/instances/%d", id))
				s.until("a running, c not started", `document.querySelector('.dag .node[data-task=a]')?.dataset.state === 'running' &&
					document.querySelector('.dag .node[data-task=c]')?.dataset.state === ''`)
				// The stream is open (the page read the instance once it was).
				s.waitFor("the stream open", func() bool {
					for _, r := range p.since(0) {
						if r.path == "/api/v1/events" && r.query.Get("instance") == strconv.FormatInt(id, 10) {
							return true
						}
					}
					return false
				})
				loaded := p.n()
				gate(t, dir, "a")
				s.until("a succeeded, b running", `document.querySelector('.dag .node[data-task=a]')?.dataset.state === 'succeeded' &&
					document.querySelector('.dag .node[data-task=b]')?.dataset.state === 'running'`)
				if cut {
					if n := p.drop(); n == 0 {
						t.Fatal("no event stream open to cut")
					}
				}
				gate(t, dir, "b")
				s.until("the final states", final)
				reqs := p.since(loaded)
				if n := fullReads(reqs, id, 3); n != 0 {
					t.Fatalf("the page read the whole instance %d time(s) while the stream was up: %+v", n, reqs)
				}
				if cut {
					resumed := false
					for _, r := range reqs {
						if r.path == "/api/v1/events" && r.lastEventID != "" && r.lastEventID != "0" {
							resumed = true
						}
					}
					if !resumed {
						t.Fatalf("the cut stream was not reopened with Last-Event-ID: %+v", reqs)
					}
				}
				s.axe()
			})
		})
	}
}

// TestWebUIInstancesLive: the instances list follows the event stream of
// instance events (kinds=instance) and does not poll: no read of the list
// while nothing happens, a new run and its end shown as they happen. With
// no stream (refused) it polls.
func TestWebUIInstancesLive(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	p, base := newLiveProxy(t, e.base)
	b := newBrowser(t, base, e.sessionToken())
	const list = "/api/v1/instances"
	dir := t.TempDir()
	e.apply(liveSpec(dir))
	first := e.run("live", nil)
	gate(t, dir, "a")
	gate(t, dir, "b")
	if iv := e.wait(first, time.Minute); iv.State != "succeeded" {
		t.Fatalf("first run %s", iv.State)
	}
	row := func(id int64, state string) string {
		return fmt.Sprintf(`document.querySelector('tr[data-id="%d"] .badge')?.textContent === %q`, id, state)
	}
	// watch returns the reads of the list during window (no wake-ups: a
	// page that polls reads it every 2 s by itself).
	watch := func(s *session, window time.Duration) int {
		at := p.n()
		select {
		case <-time.After(window):
		case <-s.ctx.Done():
			t.Fatal(s.ctx.Err())
		}
		return p.count(at, list)
	}
	t.Run("follows", func(t *testing.T) {
		os.Remove(filepath.Join(dir, "a"))
		os.Remove(filepath.Join(dir, "b"))
		b.step(t, 90*time.Second, func(s *session) {
			s.open("#/instances")
			s.until("the first run listed", row(first, "succeeded"))
			opened := -1
			s.waitFor("the stream of instance events open", func() bool {
				for i, r := range p.since(0) {
					if r.path == "/api/v1/events" && r.query.Get("kinds") == "instance" && r.query.Get("instance") == "" {
						opened = i
						return true
					}
				}
				return false
			})
			// The list is read once when the stream opens (the gap since
			// the first read): wait for that read before the quiet window.
			s.waitFor("the list read after the stream opened", func() bool { return p.count(opened+1, list) > 0 })
			s.until("settled", row(first, "succeeded"))
			if n := watch(s, 5*time.Second); n != 0 {
				t.Fatalf("the list was read %d time(s) in 5 s with nothing happening: it polls", n)
			}
			at := p.n()
			id := e.run("live", nil)
			s.until("the new run listed, running", row(id, "running"))
			gate(t, dir, "a")
			gate(t, dir, "b")
			s.until("the new run succeeded", row(id, "succeeded"))
			// One read per burst of instance events (submitted, running,
			// succeeded), none per task event.
			if n := p.count(at, list); n == 0 || n > 6 {
				t.Fatalf("the list was read %d time(s) for a run's three instance events", n)
			}
		})
	})
	t.Run("no stream: polls", func(t *testing.T) {
		p.mu.Lock()
		p.refuse = true
		p.mu.Unlock()
		p.drop()
		b.step(t, 90*time.Second, func(s *session) {
			s.run("blank", chromedp.Navigate("about:blank"))
			s.open("#/instances")
			s.until("the first run listed", row(first, "succeeded"))
			at := p.n()
			s.waitFor("two polls", func() bool { return p.count(at, list) >= 2 })
		})
	})
}
