package standalone_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebUIBigPagesFigures is the web UI's figure printer
// (docs/performance.md): for 1,000- and 5,000-task workflows (bigSpec)
// and a dry run of each, it prints the first useful paint of the
// instance, workflow and editor pages from a fresh page load (the time
// each page marks its graph ready in belugaPerf, with its marks), the
// bytes one update costs each page (what its polls fetch when the tab
// comes back into view, headers included, as transferred), and the
// bundle as the server sends it (brotli, gzip, identity). The times are
// figures, not pass marks; the test fails when a page does not draw its
// graph at all.
func TestWebUIBigPagesFigures(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	bundleAsServed(t, e.base)
	b := newBrowser(t, e.base, e.sessionToken())
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := e.with(t)
			name := fmt.Sprintf("big%d", n)
			e.do("PUT", "/api/v1/projects/demo/workflows/"+name, bigSpec(n), http.StatusCreated, nil)
			var run struct{ ID int64 }
			e.do("POST", "/api/v1/projects/demo/workflows/"+name+"/runs", `{"dry_run":true}`, http.StatusCreated, &run)
			b.step(t, 10*time.Minute, func(s *session) {
				for _, p := range []struct{ what, hash, ready string }{
					{"instance page", fmt.Sprintf("#/instances/%d", run.ID), fmt.Sprintf(`r.tasks === %d && !r.page`, n)},
					{"workflow page", "#/workflows/demo/" + name, fmt.Sprintf(`r.tasks === %d && !r.page`, n)},
					{"editor", "#/edit/demo/" + name, fmt.Sprintf(`r.tasks === %d && r.page === 'editor'`, n)},
				} {
					s.run("blank", chromedp.Navigate("about:blank"))
					s.open(p.hash)
					s.until(p.what+" drawn", `(window.belugaPerf?.ready || []).some(r => `+p.ready+`)`)
					var at struct{ Ms, Drawn, Height, Nodes float64 }
					s.eval(`(() => { const r = window.belugaPerf.ready.find(r => `+p.ready+`);
						return {Ms: r.at, Drawn: r.drawn, Height: document.documentElement.scrollHeight,
							Nodes: document.querySelectorAll('.dagbox .node, .dag .node, .editflow .node').length}; })()`, &at)
					t.Logf("FIGURE %d-task %s: first useful paint %.0f ms after navigation (%.0f nodes drawn, %.0f in the DOM, the page %.0f px tall); of which: %s",
						n, p.what, at.Ms, at.Drawn, at.Nodes, at.Height,
						s.perfMarks(`Object.assign({'script loaded': performance.getEntriesByType('navigation')[0]?.domContentLoadedEventEnd || 0}, window.belugaPerf.marks)`))
					req, bytes := s.updateCost(3 * time.Second)
					t.Logf("FIGURE %d-task %s: one update (the tab shown again) fetched %d requests, %.1f KB", n, p.what, req, float64(bytes)/1024)
				}
				// The step's axe runs on a small page: TestWebUIOperate checks
				// these pages; on thousands of nodes axe takes minutes.
				s.open("#/task-instances")
				s.until("the task list", `!!document.querySelector('#ti-table, #ti-empty')`)
			})
		})
	}
}

// updateCost is what the page fetches when its tab is hidden and shown
// again (every poll wakes then): the requests that finished within window
// of it and their bytes as transferred (headers and compressed bodies;
// the resource timing entries of the page's own origin). The window is
// the measure: a poll answered later is the next update's.
func (s *session) updateCost(window time.Duration) (int, int64) {
	s.t.Helper()
	s.eval(`performance.clearResourceTimings(), performance.setResourceTimingBufferSize(10000), true`, nil)
	s.hideAndShow()
	timer := time.NewTimer(window)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.ctx.Done():
		s.t.Fatalf("measuring an update: %v", s.ctx.Err())
	}
	var got struct{ N, Bytes int64 }
	s.eval(`(() => { const es = performance.getEntriesByType('resource').filter(e => e.responseEnd > 0);
		return {N: es.length, Bytes: es.reduce((a, e) => a + e.transferSize, 0)}; })()`, &got)
	return int(got.N), got.Bytes
}

// bundleAsServed prints the page, its script and its style as the server
// sends them to a browser that takes brotli, gzip or neither.
func bundleAsServed(t *testing.T, base string) {
	t.Helper()
	get := func(path, enc string) ([]byte, string) {
		req, err := http.NewRequest("GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Set by hand, the transport leaves the body as sent.
		req.Header.Set("Accept-Encoding", enc)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return body, resp.Header.Get("Content-Encoding")
	}
	page, _ := get("/", "identity")
	files := []string{"/"}
	for _, m := range regexp.MustCompile(`(?:src|href)="(/(?:ui/)?assets/[^"]+\.(?:js|css))"`).FindAllSubmatch(page, -1) {
		files = append(files, string(m[1]))
	}
	if len(files) < 3 {
		t.Fatalf("the page names %d assets, want its script and style: %s", len(files)-1, page)
	}
	total := map[string]int{}
	for _, f := range files {
		var line string
		for _, enc := range []string{"br", "gzip", "identity"} {
			body, got := get(f, enc)
			if enc != "identity" && got != enc {
				line += fmt.Sprintf(" (asked %s, sent %q)", enc, got)
			}
			total[enc] += len(body)
			line += fmt.Sprintf(" %s %.1f KB", enc, float64(len(body))/1024)
		}
		t.Logf("FIGURE bundle as served: %s:%s", f, line)
	}
	t.Logf("FIGURE bundle as served: in all br %.1f KB, gzip %.1f KB, identity %.1f KB",
		float64(total["br"])/1024, float64(total["gzip"])/1024, float64(total["identity"])/1024)
}
