package standalone_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestWebUIWorkflowPage drives the React workflow page, a backfill's page
// and a cursor-paged list as a person does, with the mouse and real keys:
// a 5,000-task workflow found into, start nodes picked by search and from
// the graph, a run started from them; a schedule with its own alerts and
// deadline typed in; a backfill's page; the workflows of a project paged
// through and searched by prefix. axe checks each scenario's last page.
func TestWebUIWorkflowPage(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())

	// The first useful paint at 1,000 tasks, a figure (docs/performance.md).
	t.Run("1000 tasks", func(t *testing.T) {
		e := e.with(t)
		e.do("PUT", "/api/v1/projects/demo/workflows/big1000", bigSpec(1000), http.StatusCreated, nil)
		b.step(t, 5*time.Minute, func(s *session) {
			s.run("a fresh page load", chromedp.Navigate("about:blank"))
			s.open("#/workflows/demo/big1000")
			s.until("the DAG ready", `!!window.belugaPerf?.ready.length && !!document.querySelector('#run-form')`)
			var at struct{ Ready, Height, Nodes float64 }
			s.eval(`({Ready: window.belugaPerf.ready[0].at, Height: document.documentElement.scrollHeight,
				Nodes: document.querySelectorAll('.dagbox .node').length})`, &at)
			t.Logf("FIGURE 1000-task workflow page: first useful paint (DAG ready) %.0f ms after navigation (%s); page %.0f px tall, %.0f nodes in the DOM",
				at.Ready, s.perfMarks(`window.belugaPerf.marks`), at.Height, at.Nodes)
			s.open("#/task-instances")
			s.until("the task list", `!!document.querySelector('#ti-table, #ti-empty')`)
		})
	})

	t.Run("5000 tasks", func(t *testing.T) {
		e := e.with(t)
		e.do("PUT", "/api/v1/projects/demo/workflows/big5000", bigSpec(5000), http.StatusCreated, nil)
		b.step(t, 8*time.Minute, func(s *session) {
			s.run("a fresh page load", chromedp.Navigate("about:blank"))
			s.open("#/workflows/demo/big5000")
			s.until("the DAG ready", `!!window.belugaPerf?.ready.length && !!document.querySelector('#run-form')`)
			var at struct{ Ready, Height, Nodes, Checks float64 }
			s.eval(`({Ready: window.belugaPerf.ready[0].at, Height: document.documentElement.scrollHeight,
				Nodes: document.querySelectorAll('.dagbox .node').length, Checks: document.querySelectorAll('input[type=checkbox]').length})`, &at)
			t.Logf("FIGURE 5000-task workflow page: first useful paint (DAG ready) %.0f ms after navigation (%s); page %.0f px tall, %.0f nodes in the DOM",
				at.Ready, s.perfMarks(`window.belugaPerf.marks`), at.Height, at.Nodes)
			// Readable: one screen of graph, not a column of 5,000 boxes
			// and a checkbox per task (the legacy page: 279,898 px, 5,002).
			if at.Height > 4000 || at.Nodes > 1000 || at.Checks > 10 {
				t.Fatalf("the 5,000-task page is %.0f px tall with %.0f nodes and %.0f checkboxes in the DOM", at.Height, at.Nodes, at.Checks)
			}

			// axe on the big page as it opens: the overview is one canvas,
			// so the DOM is small however many tasks.
			s.axe()

			// The spec of 5,000 tasks is written out when asked for.
			s.click(`#spec-show`)
			s.until("the whole spec", `document.querySelector('#spec-text')?.textContent.includes('name: p4997')`)

			// Find a task: typed into the search, Enter chooses it.
			s.typeInto(`#dag-search`, "p4321", false)
			s.until("one match", `document.querySelector('#dag-hits')?.textContent === '1 match'`)
			s.keys(kb.Enter)
			s.until("p4321 chosen and drawn", `document.querySelector('#node-bar')?.dataset.task === 'p4321' &&
				!!document.querySelector('.dagbox .node.hit[data-task=p4321]')`)
			// Start there, from the graph's bar, with the mouse.
			s.click(`#node-start`)
			s.until("p4321 a start node", `!!document.querySelector('#start-chosen li[data-task=p4321]') &&
				document.querySelector('.dagbox .node[data-task=p4321]')?.dataset.state === 'submitted'`)
			// And from the run form: a name typed, the match clicked.
			s.typeInto(`#start-find`, "p1234", false)
			s.until("the matches of p1234", `!!document.querySelector('#start-matches button[data-task=p1234]')`)
			s.click(`#start-matches button[data-task=p1234]`)
			s.until("two start nodes", `[...document.querySelectorAll('#start-chosen li')].map(l => l.dataset.task).join() === 'p4321,p1234'`)
			// Too broad a search lists a few and says how many more.
			s.typeInto(`#start-find`, "p4", false)
			s.until("a capped list", `document.querySelectorAll('#start-matches button').length === 20 &&
				document.querySelector('#start-matches li.muted')?.textContent.includes('more')`)
			var cleared int
			s.eval(`document.querySelector('#start-find').value.length`, &cleared)
			s.keys(strings.Repeat(kb.Backspace, cleared))
			if s.value(`#run-scope`) != "only" {
				t.Fatalf("scope %q, want only", s.value(`#run-scope`))
			}
			s.click(`#run-submit`)
			s.until("the instance page", `/^#\/instances\/\d+$/.test(location.hash)`)
			var id int64
			var hash string
			s.eval(`location.hash`, &hash)
			fmt.Sscanf(hash, "#/instances/%d", &id)
			var got struct {
				StartNodes []string `json:"start_nodes"`
				Scope      string   `json:"scope"`
			}
			e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &got)
			slices.Sort(got.StartNodes)
			if strings.Join(got.StartNodes, ",") != "p1234,p4321" || got.Scope != "only" {
				t.Fatalf("the run started with %+v", got)
			}
			if iv := e.wait(id, 2*time.Minute); iv.State != "succeeded" || len(iv.Tasks) != 2 || iv.task("start").ID != 0 {
				t.Fatalf("the run from two start nodes ran %s: %+v", iv.State, iv.Tasks)
			}
			// axe runs on a small page: on thousands of nodes it takes minutes.
			s.open("#/task-instances")
			s.until("the task list", `!!document.querySelector('#ti-table, #ti-empty')`)
		})
	})

	t.Run("schedule overrides", func(t *testing.T) {
		e := e.with(t)
		e.do("PUT", "/api/v1/alert-channels/oncall", `{"kind":"webhook","url":"http://127.0.0.1:9/hook"}`, http.StatusCreated, nil)
		e.do("PUT", "/api/v1/projects/demo/workflows/nightly2", "tasks:\n  - name: a\n    command: 'true'\n", http.StatusCreated, nil)
		b.step(t, 90*time.Second, func(s *session) {
			s.open("#/workflows/demo/nightly2")
			s.until("the schedule panel", `!!document.querySelector('#schedule-set')`)
			s.click(`#schedule-set`)
			s.until("the form", `!!document.querySelector('#schedule-cron') && !!document.querySelector('#schedule-alerts input[name=alert_channel]')`)
			s.typeInto(`#schedule-cron`, "0 6 * * *", false)
			s.typeInto(`#schedule-tz`, "Europe/Paris", false)
			s.click(`#schedule-alerts input[name=alert_on][value=failure]`)
			s.click(`#schedule-alerts input[name=alert_channel][value=oncall]`)
			// A bad deadline: the API's message names it, nothing is stored.
			s.typeInto(`#schedule-deadline`, "soon", false)
			s.click(`#schedule-save`)
			s.until("the deadline refused", `!document.querySelector('#schedule-error').hidden && document.querySelector('#schedule-error').textContent.includes('soon')`)
			e.do("GET", "/api/v1/projects/demo/workflows/nightly2/schedule", "", http.StatusNotFound, nil)
			s.typeInto(`#schedule-deadline`, "07:30", true)
			s.click(`#schedule-save`)
			s.until("the schedule shown with its overrides", `document.querySelector('#schedule-panel .deadline')?.textContent === '07:30' &&
				document.querySelector('#schedule-panel .alerts')?.textContent === 'on failure to oncall'`)
			type sched struct {
				Enabled bool `json:"enabled"`
				Alerts  *struct {
					On       []string `json:"on"`
					Channels []string `json:"channels"`
				} `json:"alerts"`
				Deadline string `json:"deadline"`
				Timezone string `json:"timezone"`
			}
			var sc sched
			e.do("GET", "/api/v1/projects/demo/workflows/nightly2/schedule", "", http.StatusOK, &sc)
			if sc.Alerts == nil || strings.Join(sc.Alerts.On, ",") != "failure" || strings.Join(sc.Alerts.Channels, ",") != "oncall" ||
				sc.Deadline != "07:30" || sc.Timezone != "Europe/Paris" {
				t.Fatalf("stored schedule %+v", sc)
			}
			// Disabling it keeps the overrides (the PUT carries them back).
			s.click(`#schedule-toggle`)
			s.until("disabled", `document.querySelector('#schedule-panel .badge')?.textContent === 'disabled'`)
			sc = sched{}
			e.do("GET", "/api/v1/projects/demo/workflows/nightly2/schedule", "", http.StatusOK, &sc)
			if sc.Enabled || sc.Alerts == nil || sc.Deadline != "07:30" {
				t.Fatalf("after disable: %+v", sc)
			}
			s.click(`#schedule-edit`)
			s.until("the form with the overrides", `document.querySelector('#schedule-deadline')?.value === '07:30' &&
				document.querySelector('#schedule-alerts input[value=failure]').checked`)
		})
	})

	t.Run("backfill page", func(t *testing.T) {
		e := e.with(t)
		e.do("PUT", "/api/v1/projects/demo/workflows/filled", "tasks:\n  - name: a\n    command: 'true'\n", http.StatusCreated, nil)
		day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
		var bf struct{ ID int64 }
		e.do("POST", "/api/v1/projects/demo/workflows/filled/backfill", fmt.Sprintf(`{"start":%q,"end":%q,"cron":"0 2 * * *","dry_run":true}`,
			day.Format(time.RFC3339), day.AddDate(0, 0, 1).Add(3*time.Hour).Format(time.RFC3339)), http.StatusCreated, &bf)
		b.step(t, 90*time.Second, func(s *session) {
			s.open(fmt.Sprintf("#/backfills/%d", bf.ID))
			s.until("done, two times each with its run", `document.querySelector('h1 .badge')?.textContent === 'done' &&
				[...document.querySelectorAll('table.times tbody tr')].filter(r => r.dataset.state === 'succeeded' && r.querySelector('a[href^="#/instances/"]')).length === 2`)
			if got := s.text(`.head`); !strings.Contains(got, "yes: tasks are recorded as succeeded") || !strings.Contains(got, "filled") {
				t.Fatalf("the backfill's head: %q", got)
			}
			s.axe()
			s.click(`table.times tbody tr a[href^="#/instances/"]`)
			s.until("its run, linking back", fmt.Sprintf(`/^#\/instances\/\d+$/.test(location.hash) && !!document.querySelector('a[href="#/backfills/%d"]')`, bf.ID))
			s.open(fmt.Sprintf("#/backfills/%d", bf.ID+1000))
			s.until("a missing backfill named", `document.querySelector('h1')?.textContent.includes('not found')`)
		})
	})

	t.Run("list by cursor", func(t *testing.T) {
		e := e.with(t)
		e.do("POST", "/api/v1/projects", `{"name":"many"}`, http.StatusCreated, nil)
		for i := 0; i < 120; i++ {
			e.do("PUT", fmt.Sprintf("/api/v1/projects/many/workflows/wf%03d", i), "tasks:\n  - name: a\n    command: 'true'\n", http.StatusCreated, nil)
		}
		for _, w := range []string{"wf005", "wf110", "wf111"} {
			e.do("PUT", "/api/v1/projects/many/workflows/"+w+"/schedule", `{"cron":"0 3 * * *"}`, http.StatusCreated, nil)
		}
		rows := `[...document.querySelectorAll('table.workflows tbody tr[data-workflow]')].map(r => r.dataset.workflow)`
		page := func(s *session, first, last string, n int) {
			s.t.Helper()
			s.until(fmt.Sprintf("%s..%s", first, last), fmt.Sprintf(`(r => r.length === %d && r[0] === %q && r[r.length - 1] === %q)(%s)`, n, first, last, rows))
		}
		b.step(t, 2*time.Minute, func(s *session) {
			s.open("#/workflows/many")
			page(s, "wf000", "wf049", 50)
			s.click(`#page-next`)
			page(s, "wf050", "wf099", 50)
			s.click(`#page-next`)
			page(s, "wf100", "wf119", 20)
			var last bool
			s.eval(`document.querySelector('#page-next').disabled`, &last)
			if !last {
				t.Fatal("Next is enabled on the last page")
			}
			s.click(`#page-prev`)
			page(s, "wf050", "wf099", 50)
			s.axe()
			// A prefix: the first page of the names starting with it, in
			// the address so it can be linked.
			s.typeInto(`#wf-prefix`, "wf11", false)
			page(s, "wf110", "wf119", 10)
			s.until("the prefix in the address", `location.hash === '#/workflows/many?prefix=wf11'`)
			s.until("no pager for one page", `!document.querySelector('#page-next')`)
			// A prefix no name can start with: the API's message.
			s.typeInto(`#wf-prefix`, " x", false)
			s.until("the prefix refused", `[...document.querySelectorAll('.apierror')].some(p => p.textContent.includes('prefix'))`)
			s.keys(kb.Backspace + kb.Backspace + "9")
			s.until("nothing starting with wf119 but itself", fmt.Sprintf(`%s.join() === 'wf119'`, rows))

			// The schedules list: the same cursors, searched by workflow name.
			s.open("#/schedules?project=many")
			s.until("three schedules", `document.querySelectorAll('table.schedules tbody tr[data-workflow]').length === 3`)
			s.typeInto(`#sc-prefix`, "wf11", false)
			s.until("the two starting with wf11", `[...document.querySelectorAll('table.schedules tbody tr[data-workflow]')].map(r => r.dataset.workflow).join() === 'many/wf110,many/wf111'`)
		})
	})
}
