package standalone_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// counter is a reverse proxy in front of the API that counts the requests
// the browser makes, by method and path.
type counter struct {
	mu   sync.Mutex
	seen map[string]int
}

func countingProxy(t *testing.T, target string) (*counter, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{seen: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u) // keeps the browser's Host: a loopback name the API answers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.seen[r.Method+" "+r.URL.Path]++
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (c *counter) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[key]
}

// quiet wakes every poll of the page three times, as a tab coming back
// into view does, then watches for a while (the observation window is the
// point: a poll that stopped must not come back on its own), and returns
// how many requests key got meanwhile.
func (s *session) quiet(c *counter, key string, window time.Duration) int {
	s.t.Helper()
	before := c.count(key)
	for range 3 {
		s.hideAndShow()
	}
	timer := time.NewTimer(window)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.ctx.Done():
		s.t.Fatalf("watching %s: %v", key, s.ctx.Err())
	}
	return c.count(key) - before
}

// waking wakes the page's polls until cond holds or the scenario's
// deadline passes.
func (s *session) waking(what string, cond func() bool) {
	s.t.Helper()
	s.poll(what, cond, true)
}

// waitFor waits until cond holds or the scenario's deadline passes.
func (s *session) waitFor(what string, cond func() bool) {
	s.t.Helper()
	s.poll(what, cond, false)
}

func (s *session) poll(what string, cond func() bool, wake bool) {
	s.t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if wake {
			s.hideAndShow()
		}
		select {
		case <-s.ctx.Done():
			s.t.Fatalf("waiting for %s: %v", what, s.ctx.Err())
		case <-tick.C:
		}
	}
}

// TestUIPolling404 checks that the UI stops asking for what is not there: a
// missing instance is shown as not found and no longer polled, and a
// workflow without a schedule shows none, with no error and no repeated
// 404s from the schedule endpoint (until a schedule is set there).
func TestUIPolling404(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	c, base := countingProxy(t, e.base)
	b := newBrowser(t, base, e.sessionToken())

	t.Run("missing instance", func(t *testing.T) {
		const path = "GET /api/v1/instances/999999"
		b.step(t, 30*time.Second, func(s *session) {
			s.open("#/instances/999999")
			s.waitFor("the first request", func() bool { return c.count(path) > 0 })
			if n := s.quiet(c, path, 5*time.Second); n != 0 {
				t.Fatalf("the missing instance was asked for %d more times in 3 wakes and 2.5 polling periods; want polling stopped", n)
			}
			if n := c.count(path); n != 1 {
				t.Fatalf("%d requests for the missing instance, want 1", n)
			}
			s.until("not found shown", `document.querySelector('#main h1')?.textContent.includes('not found')`)
			var errs int
			s.eval(`document.querySelectorAll('.flash.error').length`, &errs)
			if errs != 0 {
				t.Fatalf("not found shown as %d error banner(s): %q", errs, s.text(`.flash.error`))
			}
		})
	})

	t.Run("workflow without a schedule", func(t *testing.T) {
		e := e.with(t)
		e.do("PUT", "/api/v1/projects/demo/workflows/unscheduled", "tasks:\n  - name: a\n    command: 'true'\n", http.StatusCreated, nil)
		const path = "GET /api/v1/projects/demo/workflows/unscheduled/schedule"
		b.step(t, 30*time.Second, func(s *session) {
			s.open("#/workflows/demo/unscheduled")
			s.until("no schedule shown", `!!document.querySelector('#schedule-set') && document.querySelector('#schedule-panel').textContent.includes('Not scheduled')`)
			if n := c.count(path); n != 1 {
				t.Fatalf("%d schedule requests before none was shown, want 1", n)
			}
			if n := s.quiet(c, path, time.Second); n != 0 {
				t.Fatalf("a workflow without a schedule had its schedule asked for %d more times in 3 wakes; want no repeated 404s", n)
			}
			var errs int
			s.eval(`document.querySelectorAll('.flash.error').length`, &errs)
			if errs != 0 {
				t.Fatalf("no schedule shown as an error: %q", s.text(`.flash.error`))
			}

			// Setting one there makes the panel follow it again.
			s.click(`#schedule-set`)
			s.run("the form", chromedp.WaitVisible(`#schedule-cron`, chromedp.ByQuery))
			s.typeInto(`#schedule-cron`, "0 3 * * *", false)
			s.click(`#schedule-save`)
			s.until("the schedule shown", `!!document.querySelector('#schedule-panel .next-fire time')`)
			n := c.count(path)
			s.waking("the set schedule read again", func() bool { return c.count(path) > n })
		})
	})
}

// TestUIDisabledActions checks that an action the instance's state does
// not allow is a disabled button: it says why on hover and to screen
// readers, and a click opens no confirm and sends nothing.
func TestUIDisabledActions(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	c, base := countingProxy(t, e.base)
	e.apply("name: quick\ntasks:\n  - name: a\n    command: 'true'\n")
	id := e.run("quick", nil)
	e.wait(id, 30*time.Second)
	actions := fmt.Sprintf("POST /api/v1/instances/%d/actions", id)
	b := newBrowser(t, base, e.sessionToken())
	b.step(t, 30*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", id))
		s.until("the instance succeeded", `document.querySelector('h1 .badge')?.textContent === 'succeeded'`)
		type button struct {
			Action, Title, Description string
			Disabled                   bool
		}
		var got []button
		s.eval(`[...document.querySelectorAll('.actions button[data-action]')].map(b => ({Action: b.dataset.action,
			Disabled: b.disabled, Title: b.title,
			Description: (b.getAttribute('aria-describedby') || '').split(' ').filter(Boolean).map(id => document.getElementById(id)?.textContent || '').join(' ')}))`, &got)
		want := map[string]bool{"stop": true, "pause": true, "resume": true, "rerun": false, "recover_failed": false}
		if len(got) != len(want) {
			t.Fatalf("action buttons %+v", got)
		}
		for _, b := range got {
			if b.Disabled != want[b.Action] {
				t.Errorf("%s: disabled %v on a succeeded instance, want %v", b.Action, b.Disabled, want[b.Action])
			}
			if b.Disabled && (!strings.Contains(b.Title, "succeeded") || !strings.Contains(b.Description, "succeeded")) {
				t.Errorf("%s: disabled without its reason: title %q, description %q", b.Action, b.Title, b.Description)
			}
		}

		s.click(`.actions button[data-action=stop]`)
		var open bool
		s.eval(`!!document.querySelector('dialog[open]')`, &open)
		if open {
			t.Fatal("clicking the disabled Stop opened a confirm")
		}
		if n := c.count(actions); n != 0 {
			t.Fatalf("clicking the disabled Stop sent %d action request(s)", n)
		}
	})
}
