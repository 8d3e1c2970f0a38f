package standalone_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebUIBigPagesFigures prints the time to the first useful paint of
// the workflow page (its DAG drawn) and the editor (its graph's first
// nodes) of 1,000- and 5,000-task workflows from a fresh page load, and
// how tall the workflow page is. The times are figures (docs/
// performance.md), not pass marks; the test fails when a page does not
// draw its graph at all. The times are read by a 50 ms poll, so they are
// up to one poll late.
func TestWebUIBigPagesFigures(t *testing.T) {
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := e.with(t)
			name := fmt.Sprintf("big%d", n)
			e.do("PUT", "/api/v1/projects/demo/workflows/"+name, bigSpec(n), http.StatusCreated, nil)
			b.step(t, 8*time.Minute, func(s *session) {
				for _, p := range []struct{ what, hash, drawn string }{
					{"workflow page", "#/workflows/demo/" + name, `!!window.belugaPerf?.ready.length && !!document.querySelector('.dagbox .node, .dagbox canvas.overview:not([hidden])')`},
					{"editor", "#/edit/demo/" + name, `document.querySelectorAll('.editflow .node').length > 0`},
				} {
					s.run("blank", chromedp.Navigate("about:blank"))
					s.open(p.hash)
					s.until(p.what+" drawn", p.drawn)
					var at struct{ Ms, Height, Nodes float64 }
					// The workflow page marks its DAG ready (perf.ts); the
					// editor is read at the poll that saw its nodes.
					s.eval(`({Ms: window.belugaPerf?.ready.length ? window.belugaPerf.ready[0].at : performance.now(), Height: document.documentElement.scrollHeight,
						Nodes: document.querySelectorAll('.dagbox .node, .editflow .node').length})`, &at)
					t.Logf("FIGURE %d-task %s: first useful paint (graph drawn) %.0f ms after navigation; page %.0f px tall, %.0f nodes in the DOM",
						n, p.what, at.Ms, at.Height, at.Nodes)
				}
				// The step's axe runs on a small page: TestWebUIOperate checks
				// these pages; on thousands of nodes axe takes minutes.
				s.open("#/task-instances")
				s.until("the task list", `!!document.querySelector('#ti-table, #ti-empty')`)
			})
		})
	}
}
