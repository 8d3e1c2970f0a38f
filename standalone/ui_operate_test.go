package standalone_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
)

// diamond is a → b, a → c, b → d, c → d: b and c share a column.
const diamond = `name: diamond
params: {day: today}
tasks:
  - {name: a, command: "echo a"}
  - {name: b, command: "echo from-b", depends_on: [a]}
  - {name: c, command: "echo c", depends_on: [a]}
  - {name: d, command: "echo d", depends_on: [b, c]}
`

// TestWebUIOperate is an operator's day with the mouse and real keys: the
// empty pages say what to do first; a run's graph walked with the arrow
// keys and a log opened with Enter; "rerun downstream" and "rerun from
// here" from a node; the Gantt's time axis; the grid's dates and
// durations; the task-instance list across runs filtered by typing; the
// dark theme chosen and kept; axe on every page in both themes.
func TestWebUIOperate(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())

	t.Run("empty pages say what to do", func(t *testing.T) {
		b.step(t, 60*time.Second, func(s *session) {
			s.open("#/task-instances")
			s.until("the empty list", `!!document.querySelector('#ti-empty')`)
			if txt := s.text(`#ti-empty`); !strings.Contains(txt, "No task has run yet") || !strings.Contains(txt, "Workflows") {
				t.Fatalf("empty task list says %q", txt)
			}
		})
	})

	e.do("PUT", "/api/v1/projects/demo/workflows/diamond", diamond, http.StatusCreated, nil)
	first := e.run("diamond", map[string]string{"day": "2026-12-06"})
	if iv := e.wait(first, 60*time.Second); iv.State != "succeeded" {
		t.Fatalf("diamond: %s", iv.State)
	}
	var second int64

	t.Run("keyboard on the graph, reruns from a node", func(t *testing.T) {
		b.step(t, 90*time.Second, func(s *session) {
			s.open(fmt.Sprintf("#/instances/%d", first))
			s.until("four succeeded nodes", `document.querySelectorAll('.dag .node[data-state=succeeded]').length === 4`)
			// A click on the graph's empty space gives it the keyboard.
			s.click(`.dagkeys .react-flow__pane`)
			s.until("the graph focused", `document.activeElement === document.querySelector('.dagkeys')`)
			s.keys(kb.ArrowRight)
			s.until("the cursor on a", `document.querySelector('.dagkeys').dataset.cursor === 'a'`)
			s.keys(kb.ArrowRight)
			s.until("the cursor on b or c", `['b', 'c'].includes(document.querySelector('.dagkeys').dataset.cursor)`)
			var at string
			s.eval(`document.querySelector('.dagkeys').dataset.cursor`, &at)
			s.keys(kb.ArrowDown + kb.ArrowUp)
			s.until("back where it was", fmt.Sprintf(`document.querySelector('.dagkeys').dataset.cursor === %q`, at))
			if at != "b" {
				s.keys(kb.ArrowDown)
				s.until("the cursor on b", `document.querySelector('.dagkeys').dataset.cursor === 'b'`)
			}
			s.until("b chosen, not yet opened", `document.querySelector('.dag .node[data-task=b]').classList.contains('selected') && !document.querySelector('.sidepanel')`)
			s.keys(kb.Enter)
			s.until("b's log", `!!document.querySelector('.sidepanel') && `+logText+`.includes('from-b')`)

			// Rerun downstream of a: a new run starting at b and c.
			s.keys(kb.ArrowLeft)
			s.until("the cursor on a", `document.querySelector('#node-bar').dataset.task === 'a'`)
			// It is previewed as a plan: one new run of b, c and d.
			s.click(`#rerun-downstream`)
			s.until("the plan", `document.querySelectorAll('.planpanel tr[data-new]').length === 1 && !document.querySelector('#plan-apply').disabled`)
			if txt := s.text(`#plan-what`); !strings.Contains(txt, "starts at b, c") {
				t.Fatalf("the plan says %q", txt)
			}
			if txt := s.text(`.planpanel tr[data-new] .plantasks`); txt != "b, c, d" {
				t.Fatalf("planned tasks %q", txt)
			}
			s.click(`#plan-apply`)
			s.until("the new run's page", fmt.Sprintf(`/^#\/instances\/\d+$/.test(location.hash) && location.hash !== '#/instances/%d'`, first))
			var hash string
			s.eval(`location.hash`, &hash)
			fmt.Sscanf(hash, "#/instances/%d", &second)
			var got struct {
				StartNodes []string          `json:"start_nodes"`
				Scope      string            `json:"scope"`
				Params     map[string]string `json:"params"`
			}
			e.do("GET", fmt.Sprintf("/api/v1/instances/%d", second), "", http.StatusOK, &got)
			slices.Sort(got.StartNodes)
			if strings.Join(got.StartNodes, ",") != "b,c" || got.Scope != "downstream" || got.Params["day"] != "2026-12-06" {
				t.Fatalf("rerun downstream made %+v", got)
			}
			if iv := e.wait(second, 60*time.Second); iv.State != "succeeded" || iv.task("a").ID != 0 || iv.task("d").State != "succeeded" {
				t.Fatalf("rerun downstream ran %+v", iv)
			}

			// Rerun from here on d, chosen with the mouse: d alone.
			s.until("the new run's nodes", `document.querySelectorAll('.dag .node').length === 4`)
			s.click(`.dag .node[data-task=d]`)
			s.until("d's bar", `document.querySelector('#node-bar')?.dataset.task === 'd'`)
			var why string
			s.eval(`document.querySelector('#rerun-downstream').disabled + ' ' + document.querySelector('#rerun-downstream').title`, &why)
			if why != "true no task depends on d" {
				t.Fatalf("rerun downstream of d: %q", why)
			}
			s.click(`#rerun-from`)
			s.until("the plan of d", `document.querySelector('.planpanel tr[data-new] .plantasks')?.textContent === 'd' && !document.querySelector('#plan-apply').disabled`)
			s.click(`#plan-apply`)
			s.until("the third run's page", fmt.Sprintf(`/^#\/instances\/\d+$/.test(location.hash) && location.hash !== '#/instances/%d'`, second))
			var third int64
			s.eval(`location.hash`, &hash)
			fmt.Sscanf(hash, "#/instances/%d", &third)
			if iv := e.wait(third, 60*time.Second); iv.State != "succeeded" || len(iv.Tasks) != 1 || iv.task("d").ID == 0 {
				t.Fatalf("rerun from d ran %+v", iv)
			}
		})
	})

	t.Run("Gantt axis and grid dates", func(t *testing.T) {
		b.step(t, 60*time.Second, func(s *session) {
			s.open(fmt.Sprintf("#/instances/%d", first))
			s.until("the tabs", `!!document.querySelector('#tab-gantt')`)
			s.click(`#tab-gantt`)
			s.until("an axis with ticks", `document.querySelectorAll('.gantt .axis .tick').length >= 2`)
			var labels []string
			s.eval(`[...document.querySelectorAll('.gantt .axis .tick text')].map(x => x.textContent)`, &labels)
			for _, l := range labels {
				if !strings.Contains(l, ":") {
					t.Fatalf("tick labels %q", labels)
				}
			}
			s.open("#/grid/demo/diamond")
			s.until("three runs", `document.querySelectorAll('.runsgrid th.run').length === 3`)
			var head []string
			s.eval(`[...document.querySelectorAll('.runsgrid th.run')].map(x => x.querySelector('.when time')?.getAttribute('datetime') + '|' + x.querySelector('.took').textContent)`, &head)
			for _, h := range head {
				if strings.HasPrefix(h, "null") || strings.HasSuffix(h, "|–") || strings.HasSuffix(h, "|") {
					t.Fatalf("run headers %q", head)
				}
			}
			s.until("a duration in every cell of the first run", `[...document.querySelectorAll('.runsgrid tr[data-task] td.cell:nth-child(2)')].every(c => /\d(\.\d)?s$/.test(c.dataset.took))`)
		})
	})

	t.Run("task instances across runs", func(t *testing.T) {
		b.step(t, 90*time.Second, func(s *session) {
			s.open("#/task-instances")
			s.until("the list", `document.querySelectorAll('#ti-table tbody tr').length === 8`)
			s.typeInto(`#ti-name`, "d", false)
			s.click(`#ti-latest`)
			s.click(`#ti-apply`)
			s.until("the d of each run", `document.querySelectorAll('#ti-table tbody tr').length === 3 && [...document.querySelectorAll('#ti-table tbody tr')].every(r => r.dataset.task === 'd')`)
			s.typeInto(`#ti-name`, "", true)
			s.typeInto(`#ti-name`, "b", false)
			s.click(`#ti-apply`)
			s.until("the b of two runs", `document.querySelectorAll('#ti-table tbody tr[data-task=b]').length === 2 && document.querySelectorAll('#ti-table tbody tr').length === 2`)
			s.click(fmt.Sprintf(`#ti-table a[href="#/instances/%d?task=b"]`, first))
			s.until("b's log on its run's page", `!!document.querySelector('.sidepanel') && `+logText+`.includes('from-b')`)
			s.open("#/task-instances")
			s.until("the list", `!!document.querySelector('#ti-table')`)
			s.typeInto(`#ti-workflow`, "nope", false)
			s.click(`#ti-apply`)
			s.until("nothing matches", `document.querySelector('#ti-empty')?.textContent.includes('No task instance matches')`)
		})
	})

	// Each page and a part of its title, to know it is drawn.
	pages := [][2]string{{"#/instances", "Instances"}, {"#/task-instances", "Task instances"}, {"#/workflows/demo", "Workflows"},
		{"#/workflows/demo/diamond", "diamond"}, {"#/edit/demo/diamond", "Edit demo/diamond"}, {"#/grid/demo/diamond", "Grid:"},
		{"#/overview", "Overview"}, {"#/schedules", "Schedules"}, {"#/backfills", "Backfills"}, {"#/cluster", "Cluster"},
		{"#/admin/users", "Users"}, {"#/admin/grants", "Project grants"}, {"#/admin/audit", "Audit"},
		{"#/tokens", "Personal access tokens"}, {fmt.Sprintf("#/instances/%d", first), fmt.Sprintf("Instance #%d", first)}}
	for _, theme := range []string{"light", "dark"} {
		t.Run("axe on every page, "+theme, func(t *testing.T) {
			b.step(t, 180*time.Second, func(s *session) {
				s.open("#/task-instances")
				s.until("the theme button", `!!document.querySelector('#theme-toggle')`)
				var cur string
				s.eval(`document.documentElement.dataset.theme`, &cur)
				if cur != theme {
					s.click(`#theme-toggle`)
					s.until("the "+theme+" theme", fmt.Sprintf(`document.documentElement.dataset.theme === %q`, theme))
				}
				for _, p := range pages {
					s.open(p[0])
					s.until(p[0]+" drawn", fmt.Sprintf(`[...document.querySelectorAll('main h1')].some(h => h.textContent.includes(%q)) &&
						![...document.querySelectorAll('main p')].some(x => x.textContent === 'Loading…')`, p[1]))
					var still bool
					s.eval(fmt.Sprintf(`document.documentElement.dataset.theme === %q`, theme), &still)
					if !still {
						t.Fatalf("%s: the %s theme was not kept", p[0], theme)
					}
					s.axe()
				}
				var bg string
				s.eval(`getComputedStyle(document.documentElement).backgroundColor`, &bg)
				if (theme == "dark") != (bg == "rgb(13, 17, 23)") {
					t.Fatalf("%s theme: the page's background is %s", theme, bg)
				}
			})
		})
	}
}
