package standalone_test

import (
	"fmt"
	"testing"
	"time"
)

// TestUIShowsSkipped: the instance page shows a branch not taken as a
// skipped task (badge and DAG node) and lists skipped in its legend.
func TestUIShowsSkipped(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	e.apply(`name: branchy
tasks:
  - {name: a, command: "true"}
  - {name: check, type: conditions, depends_on: [a], on_success: [yes], on_failure: ["no"]}
  - {name: "yes", command: "true", depends_on: [check]}
  - {name: "no", command: "true", depends_on: [check]}
`)
	id := e.run("branchy", nil)
	e.succeeded(id, 30*time.Second)
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 30*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", id))
		s.until("the instance succeeded", `document.querySelector('h1 .badge')?.textContent === 'succeeded'`)
		s.until("no skipped in the DAG", `(() => {
			const n = document.querySelector('.dag .dagnode[data-task="no"]');
			return !!n && n.dataset.state === 'skipped' && n.classList.contains('st-skipped');
		})()`)
		s.until("a skipped badge in the task list", `[...document.querySelectorAll('table.tasks tbody tr[data-task="no"]')].some(r => r.dataset.state === 'skipped' && r.querySelector('.badge.st-skipped')?.textContent === 'skipped')`)
		s.until("skipped in the legend", `(() => { const l = document.querySelector('.legend li.badge.st-skipped[data-state="skipped"]'); return !!l && l.textContent.includes('skipped'); })()`)
	})
}
