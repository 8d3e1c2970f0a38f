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
)

// liveProxy sits in front of the API: it records each request the browser
// makes (path, query, Last-Event-ID) and can cut the event streams open
// through it, as a proxy or a network drop does.
type liveProxy struct {
	mu      sync.Mutex
	reqs    []seenReq
	streams []context.CancelFunc
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
