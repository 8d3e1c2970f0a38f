package standalone_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/config"
)

// TestWebUIShowsWaits: the instance page shows why a task waits (no worker
// in its group) and the pending task's upstream; the cluster page marks a
// full worker skipped.
func TestWebUIShowsWaits(t *testing.T) {
	t.Parallel()
	e := startWith(t, func(c *config.Config) { c.Worker.Slots = 1 })
	e.apply("name: ghostly\ntasks:\n  - {name: a, command: \"true\", worker_group: ghost}\n  - {name: b, command: \"true\", depends_on: [a]}\n")
	id := e.run("ghostly", nil)
	e.waitFor(id, "a", "no_worker")
	e.apply("name: busy\ntasks:\n  - {name: x, command: \"sleep 30\"}\n  - {name: y, command: \"sleep 30\"}\n  - {name: z, command: \"sleep 30\"}\n")
	busy := e.run("busy", nil)
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 30*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", id))
		s.until("a's wait in the tasks table", `(() => {
			const w = document.querySelector('table.tasks tr[data-task="a"] [data-wait="no_worker"]');
			return !!w && w.textContent.includes('waiting for a worker in group "ghost" (none registered)');
		})()`)
		s.until("b pending on a", `document.querySelector('ul.pending li[data-task="b"][data-wait="upstream"]')?.textContent.includes('waiting for upstream a')`)
		s.open("#/cluster")
		s.until("the full worker skipped", `!!document.querySelector('tr[data-worker] .tag.skipped')`)
	})
	e.act("instances", id, "stop", http.StatusAccepted)
	e.act("instances", busy, "stop", http.StatusAccepted)
}
