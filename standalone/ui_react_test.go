package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// drag presses the mouse on the element from, moves it in steps and
// releases it on the element to, as a user drawing an edge does.
func (s *session) drag(from, to string) {
	s.t.Helper()
	center := func(sel string) (x, y float64) {
		return s.aim(sel, fmt.Sprintf(`document.querySelector(%s)`, js(sel)))
	}
	x0, y0 := center(from)
	x1, y1 := center(to)
	acts := []chromedp.Action{chromedp.MouseEvent(input.MouseMoved, x0, y0),
		chromedp.MouseEvent(input.MousePressed, x0, y0, chromedp.ButtonLeft, chromedp.ClickCount(1))}
	for i := 1; i <= 10; i++ {
		f := float64(i) / 10
		acts = append(acts, chromedp.MouseEvent(input.MouseMoved, x0+(x1-x0)*f, y0+(y1-y0)*f, chromedp.ButtonLeft))
	}
	acts = append(acts, chromedp.MouseEvent(input.MouseReleased, x1, y1, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	s.run(fmt.Sprintf("drag %s to %s", from, to), acts...)
}

func handle(task, kind string) string {
	return fmt.Sprintf(`.editflow .react-flow__node[data-id=%q] .react-flow__handle.%s`, task, kind)
}

// TestWebUIEditor builds a four-task DAG in the editor by clicking,
// dragging and typing at a person's pace (an http task through its form), sees a cycle refused as
// it is drawn, saves, runs it and watches the nodes turn succeeded without
// a reload, opens the Gantt and a log and searches it, and kills a running
// task from the task list.
func TestWebUIEditor(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	e.do("PUT", "/api/v1/projects/demo/workflows/sleeper", "tasks:\n  - name: nap\n    command: echo napping; sleep 120\n", http.StatusCreated, nil)

	t.Run("build, save and run", func(t *testing.T) {
		b.step(t, 90*time.Second, func(s *session) {
			s.open("#/edit/demo")
			s.until("the palette", `!!document.querySelector('.palette button[data-type=http]')`)
			for _, ty := range []string{"shell", "http", "python", "shell"} {
				s.click(fmt.Sprintf(`.palette button[data-type=%s]`, ty))
			}
			s.until("four nodes", `document.querySelectorAll('.editflow .node').length === 4`)
			s.click(`#auto-layout`)
			var names []string
			s.eval(`[...document.querySelectorAll('.editflow .node')].map(n => n.dataset.task).sort()`, &names)
			if strings.Join(names, ",") != "http_1,python_1,shell_1,shell_2" {
				t.Fatalf("nodes %v", names)
			}
			// The http task has no URL yet: its node says so before saving,
			// and saving is refused with the reason.
			s.until("the http node marked", `document.querySelector('.editflow .node[data-task=http_1]').dataset.invalid === 'true' &&
				document.querySelector('.editflow .node[data-task=http_1]').textContent.includes('url is required')`)
			s.typeInto(`#wf-name`, "dag4", false)
			s.click(`#save-spec`)
			s.until("the refusal", `!document.querySelector('#spec-error').hidden && document.querySelector('#spec-error').textContent.includes('http_1')`)
			e.do("GET", "/api/v1/projects/demo/workflows/dag4", "", http.StatusNotFound, nil)

			// Its form: the URL of this Beluga's own API.
			s.click(`.editflow .node[data-task=http_1]`)
			s.until("its form", `!!document.querySelector('.taskform .field[data-field=url] input')`)
			s.typeInto(`.taskform .field[data-field=url] input`, e.base+"/healthz", false)
			s.until("the http node fine", `document.querySelector('.editflow .node[data-task=http_1]').dataset.invalid === 'false'`)
			s.click(`.editflow .node[data-task=shell_2]`)
			s.until("its form", `!!document.querySelector('.taskform .field[data-field=command] textarea')`)
			s.typeInto(`.taskform .field[data-field=command] textarea`, "echo needle-1; echo haystack; echo needle-2", true)
			s.until("the command highlighted as shell", `(() => {
				const pre = document.querySelector('.taskform .field[data-field=command] .codearea[data-lang=bash] pre[aria-hidden=true]');
				return !!pre && pre.textContent.startsWith('echo needle-1; echo haystack') && [...pre.querySelectorAll('.token')].some((t) => t.textContent === 'echo');
			})()`)

			for _, edge := range [][2]string{{"shell_1", "http_1"}, {"shell_1", "python_1"}, {"http_1", "shell_2"}, {"python_1", "shell_2"}} {
				s.drag(handle(edge[0], "source"), handle(edge[1], "target"))
				s.until("the edge "+edge[0]+" → "+edge[1], fmt.Sprintf(`!!document.querySelector('.editflow .react-flow__edge[data-id="%s>%s"]')`, edge[0], edge[1]))
			}
			// shell_2 → shell_1 would close a cycle: refused as it is drawn.
			s.drag(handle("shell_2", "source"), handle("shell_1", "target"))
			s.until("the cycle refused", `document.querySelector('#edge-refusal').textContent.includes('cycle')`)
			var n int
			s.eval(`document.querySelectorAll('.editflow .react-flow__edge').length`, &n)
			if n != 4 {
				t.Fatalf("%d edges after the refused one, want 4", n)
			}

			// The YAML view holds the same spec; back to the graph loses nothing.
			s.click(`#view-yaml`)
			var yaml string
			s.eval(`document.querySelector('#spec').value`, &yaml)
			for _, want := range []string{"type: http", "depends_on: [http_1, python_1]", "needle-1", "/healthz"} {
				if !strings.Contains(yaml, want) {
					t.Fatalf("YAML view lacks %q:\n%s", want, yaml)
				}
			}
			s.click(`#view-graph`)
			s.until("the graph again", `document.querySelectorAll('.editflow .react-flow__edge').length === 4`)

			s.click(`#save-spec`)
			s.until("the workflow page", `location.hash === '#/workflows/demo/dag4' && !!document.querySelector('#run-form')`)
			var stored struct {
				Spec struct {
					Tasks []struct {
						Name      string   `json:"name"`
						Type      string   `json:"type"`
						URL       string   `json:"url"`
						DependsOn []string `json:"depends_on"`
					} `json:"tasks"`
				} `json:"spec"`
			}
			e.do("GET", "/api/v1/projects/demo/workflows/dag4", "", http.StatusOK, &stored)
			got := map[string]string{}
			for _, tk := range stored.Spec.Tasks {
				got[tk.Name] = tk.Type + ":" + strings.Join(tk.DependsOn, "+")
			}
			if len(got) != 4 || got["http_1"] != "http:shell_1" || got["shell_2"] != "shell:http_1+python_1" || got["python_1"] != "python:shell_1" {
				t.Fatalf("stored tasks %v", got)
			}

			s.eval(`window.belugaNoReload = 'kept'`, nil)
			s.click(`#run-submit`)
			s.until("the instance page", `/^#\/instances\/\d+$/.test(location.hash)`)
			s.until("four nodes", `document.querySelectorAll('.dag .node').length === 4`)
			s.until("every node succeeded", `[...document.querySelectorAll('.dag .node')].every(n => n.dataset.state === 'succeeded')`)
			var kept string
			s.eval(`window.belugaNoReload`, &kept)
			if kept != "kept" {
				t.Fatal("the page reloaded")
			}
			s.until("the counts", `document.querySelector('#state-counts li[data-state=succeeded] .n')?.textContent === '4'`)

			// Gantt: a bar per attempt, the critical path marked.
			s.click(`#tab-gantt`)
			s.until("the bars", `document.querySelectorAll('.gantt g.bar').length === 4 && document.querySelectorAll('.gantt g.bar.critical').length >= 2`)
			s.axe()

			// The log beside the graph, searched.
			s.click(`#tab-graph`)
			s.click(`.dag .node[data-task=shell_2]`)
			s.until("its log", logText+`.includes('haystack') && document.querySelector('.logstatus').textContent.includes('end of log')`)
			var side struct{ GraphRight, LogLeft float64 }
			s.eval(`({GraphRight: document.querySelector('.main-view').getBoundingClientRect().right,
				LogLeft: document.querySelector('.sidepanel').getBoundingClientRect().left})`, &side)
			if side.LogLeft < side.GraphRight {
				t.Fatalf("the log is not beside the graph: %+v", side)
			}
			s.typeInto(`.logsearch`, "needle", false)
			s.until("two matches", `document.querySelector('.loghits').textContent === '1 of 2 matches' && document.querySelectorAll('.log .ln.match').length === 2`)
		})
	})

	t.Run("new version and its diff", func(t *testing.T) {
		e := e.with(t)
		run1 := e.run("dag4", nil) // of version 1
		e.wait(run1, 30*time.Second)
		b.step(t, 60*time.Second, func(s *session) {
			s.open("#/edit/demo/dag4")
			s.until("the stored graph", `document.querySelectorAll('.editflow .node').length === 4 && document.querySelectorAll('.editflow .react-flow__edge').length === 4`)
			s.click(`.palette button[data-type=shell]`)
			s.until("five nodes", `document.querySelectorAll('.editflow .node').length === 5`)
			s.click(`#save-spec`)
			s.until("version 2", `[...document.querySelectorAll('.flash.ok')].some(f => f.textContent.includes('dag4 version 2 saved'))`)
			s.open("#/edit/demo/dag4")
			s.until("the editor", `!!document.querySelector('#view-versions')`)
			s.click(`#view-versions`)
			s.until("the diff of v1 and v2", `document.querySelector('#graph-diff')?.textContent.includes('tasks added: shell_3') &&
				[...document.querySelectorAll('#spec-diff .add')].some(l => l.textContent.includes('name: shell_3'))`)
			s.until("the new task coloured added in the graph diff", `document.querySelector('#graph-diff .gd-node[data-task=shell_3]')?.dataset.status === 'added' &&
				document.querySelectorAll('#graph-diff .gd > .gd-col .gd-node[data-status=same]').length === 4`)
			// The run of version 1 says it differs from the latest and
			// links the diff; a rerun may choose the latest.
			s.open(fmt.Sprintf("#/instances/%d", run1))
			s.until("the link to the diff", `document.querySelector('#differs-from-latest')?.textContent.includes('differs from latest (v2)') && !!document.querySelector('#use-latest')`)
			s.click(`#differs-from-latest`)
			s.until("the diff from the run's version", `document.querySelector('#graph-diff h2')?.textContent.includes('v1 → v2') &&
				document.querySelector('#graph-diff .gd-node[data-task=shell_3]')?.dataset.status === 'added'`)
		})
	})

	t.Run("kill a running task", func(t *testing.T) {
		e := e.with(t)
		id := e.run("sleeper", nil)
		b.step(t, 60*time.Second, func(s *session) {
			s.open(fmt.Sprintf("#/instances/%d", id))
			s.until("the task running", `document.querySelector('tr[data-task=nap]')?.dataset.state === 'running'`)
			s.click(`tr[data-task=nap] button[data-action=kill]`)
			s.until("the confirm dialog", `!!document.querySelector('dialog[open] button.ok')`)
			s.click(`dialog[open] button.ok`)
			s.until("the task killed", `document.querySelector('tr[data-task=nap]')?.dataset.state === 'killed' &&
				document.querySelector('.dag .node[data-task=nap]')?.dataset.state === 'killed'`)
			s.until("the instance failed", `document.querySelector('h1 .badge')?.textContent === 'failed'`)
			s.until("kill gone from the row", `!document.querySelector('tr[data-task=nap] button[data-action=kill]')`)
		})
	})
}

// bigSpec is a start task, n-2 parts after it and a join after them all.
func bigSpec(n int) string {
	tasks := []map[string]any{{"name": "start", "command": "true"}}
	var parts []string
	for i := 0; i < n-2; i++ {
		p := fmt.Sprintf("p%d", i)
		parts = append(parts, p)
		tasks = append(tasks, map[string]any{"name": p, "command": "true", "depends_on": []string{"start"}})
	}
	tasks = append(tasks, map[string]any{"name": "join", "command": "true", "depends_on": parts})
	b, _ := json.Marshal(map[string]any{"tasks": tasks})
	return string(b)
}

// TestWebUIBigDAG opens 1,000- and 5,000-task instances, times the DAG
// fitted and interactive from a fresh page load, finds a task by search,
// and times the main thread per live update while the 1,000-task run runs.
func TestWebUIBigDAG(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := e.with(t)
			name := fmt.Sprintf("big%d", n)
			e.do("PUT", "/api/v1/projects/demo/workflows/"+name, bigSpec(n), http.StatusCreated, nil)
			var out struct{ ID int64 }
			// The 1,000-task run really runs (`true` on the worker), so the
			// page gets live updates while it does; the 5,000 is a dry run.
			body := `{}`
			if n > 1000 {
				body = `{"dry_run":true}`
			}
			e.do("POST", "/api/v1/projects/demo/workflows/"+name+"/runs", body, http.StatusCreated, &out)
			b.step(t, 3*time.Minute, func(s *session) {
				s.run("blank", chromedp.Navigate("about:blank"))
				s.open(fmt.Sprintf("#/instances/%d", out.ID))
				s.until("the DAG fitted", fmt.Sprintf(`(window.belugaPerf?.ready || []).some(r => r.tasks === %d)`, n))
				var ready float64
				s.eval(fmt.Sprintf(`window.belugaPerf.ready.find(r => r.tasks === %d).at`, n), &ready)
				t.Logf("FIGURE %d-task instance: fitted, interactive DAG %.0f ms after navigation (target %d ms)", n, ready, map[int]int{1000: 1000, 5000: 2000}[n])
				marks := s.perfMarks(`Object.assign({'script loaded': performance.getEntriesByType('navigation')[0]?.domContentLoadedEventEnd || 0}, window.belugaPerf.marks)`)
				t.Logf("  of which (ms after navigation): %s, fitted %.0f", marks, ready)
				// Fitted: every node inside the viewport.
				var fit bool
				s.eval(`(() => {
					const v = document.querySelector('.dag .react-flow__viewport').style.transform;
					const m = /translate\(([-\d.]+)px, ?([-\d.]+)px\) scale\(([\d.]+)\)/.exec(v);
					return !!m && Number(m[3]) < 1;
				})()`, &fit)
				if !fit {
					t.Fatal("the DAG is not fitted (zoomed out) to the screen")
				}
				var fitted string
				s.eval(`document.querySelector('.dag .react-flow__viewport').style.transform`, &fitted)

				target := fmt.Sprintf("p%d", n/2+7)
				s.typeInto(`#dag-search`, target, false)
				s.until("the match shown", fmt.Sprintf(`document.querySelector('#dag-hits').textContent === '1 match' &&
					!!document.querySelector('.dag .node.hit[data-task=%s]')`, target))
				var inView bool
				s.eval(fmt.Sprintf(`(() => { const r = document.querySelector('.dag .node.hit[data-task=%s]').getBoundingClientRect();
					const b = document.querySelector('.dag').getBoundingClientRect();
					return r.left >= b.left && r.right <= b.right && r.top >= b.top && r.bottom <= b.bottom; })()`, target), &inView)
				if !inView {
					t.Fatal("the found task is not in view")
				}
				// Zoomed in, the fit button (clicked with the mouse) goes back to
				// the whole graph through the overview: no node mounts on the
				// way (React Flow's own fit mounted every node for a frame).
				var before int
				s.eval(`(() => {
					const box = document.querySelector('.dag');
					window.fitMounts = 0;
					window.fitCount = (recs) => {
						for (const r of recs) for (const el of r.addedNodes) {
							if (el.nodeType !== 1) continue;
							window.fitMounts += el.matches('.react-flow__node') ? 1 : el.querySelectorAll('.react-flow__node').length;
						}
					};
					window.fitWatch = new MutationObserver(window.fitCount);
					window.fitWatch.observe(box, {childList: true, subtree: true});
					return box.querySelectorAll('.react-flow__node').length;
				})()`, &before)
				if before == 0 || before > 200 {
					t.Fatalf("zoomed in on a found task, %d nodes are mounted; want the few in view", before)
				}
				s.click(`.dag .react-flow__controls-fitview`)
				// Fitted again: the overview drawn, no node mounted, and the
				// same zoom as the first fit. The box may have changed size by
				// a few pixels since (a page scrollbar once the task list
				// fills), so the zoom is compared within 3 %, not to the digit.
				var last string
				defer func() {
					if t.Failed() {
						t.Logf("last look at the fit: %s (first fit: %s)", last, fitted)
					}
				}()
				s.waitFor("fitted again", func() bool {
					var st struct {
						Overview bool    `json:"overview"`
						Nodes    int     `json:"nodes"`
						Zoom     float64 `json:"zoom"`
						First    float64 `json:"first"`
						Box      string  `json:"box"`
						Tf       string  `json:"tf"`
					}
					s.eval(`(() => {
						const zoom = (tf) => Number((/scale\(([\d.]+)\)/.exec(tf) || [0, 0])[1]);
						const box = document.querySelector('.dag');
						const tf = document.querySelector('.dag .react-flow__viewport').style.transform;
						return {overview: !document.querySelector('.dag canvas.overview').hidden,
							nodes: box.querySelectorAll('.react-flow__node').length,
							zoom: zoom(tf), first: zoom(`+js(fitted)+`), box: box.clientWidth + 'x' + box.clientHeight, tf};
					})()`, &st)
					b, _ := json.Marshal(st)
					last = string(b)
					return st.Overview && st.Nodes == 0 && st.First > 0 && math.Abs(st.Zoom-st.First) <= 0.03*st.First
				})
				var mounts int
				s.eval(`(() => { window.fitCount(window.fitWatch.takeRecords()); window.fitWatch.disconnect(); return window.fitMounts; })()`, &mounts)
				t.Logf("fit view from a found task: %d nodes mounted (%d were in view)", mounts, before)
				if mounts > 50 {
					t.Fatalf("fitting the %d-task DAG from zoomed in mounted %d nodes; want none (the overview draws it)", n, mounts)
				}
				// The task list holds every attempt but draws only the rows in view.
				s.until("every attempt listed", fmt.Sprintf(`document.querySelector('#task-count')?.textContent.endsWith('of %d attempts')`, n))
				var rows int
				s.eval(`document.querySelectorAll('table.tasks tbody tr[data-id]').length`, &rows)
				if rows == 0 || rows > 80 {
					t.Fatalf("%d task rows in the DOM for %d attempts; want a window of them", rows, n)
				}
				s.retype(`#task-name-filter`, target)
				s.until("the name filter", fmt.Sprintf(`document.querySelectorAll('table.tasks tbody tr[data-id]').length === 1 && !!document.querySelector('table.tasks tr[data-task=%s]')`, target))
				s.retype(`#task-name-filter`, "")
				s.click(`#dag-search`)
				s.keys(kb.Enter)
				s.until("its panel", `!!document.querySelector('.sidepanel')`)

				// Live updates: the poll's render and commit while it runs.
				s.until("the run ended", `['succeeded', 'failed'].includes(document.querySelector('h1 .badge')?.textContent)`)
				// Collapsed by prefix, the parts are one node that counts them.
				s.click(`#dag-collapse`)
				s.until("three nodes", fmt.Sprintf(`document.querySelectorAll('.dag .node').length === 3 &&
					document.querySelector('.dag .node[data-task="p*"]')?.textContent.includes('%d tasks') &&
					!!document.querySelector('.dag .react-flow__edge[data-id="p*>join"]')`, n-2))
				// The click lands where the node was found; a re-render of the
				// just-collapsed graph (the run's last read) can move it first
				// and the click miss (seen once in a full run), so it is
				// clicked again until the graph opens.
				s.click(`.dag .node[data-task="p*"]`)
				s.waitFor("every node again", func() bool {
					var g struct{ Open, Node bool }
					s.eval(`({Open: !document.querySelector('#dag-collapse').checked && document.querySelector('#dag-search').value === 'p',
						Node: !!document.querySelector('.dag .node[data-task="p*"]')})`, &g)
					if !g.Open && g.Node {
						// Gone by the time the mouse comes: the next look tells.
						ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
						_ = chromedp.Run(ctx, chromedp.Click(`.dag .node[data-task="p*"]`, chromedp.ByQuery))
						cancel()
					}
					return g.Open
				})

				// Live updates are the events the stream brought; reads are
				// the answers of the page's reads (the first page, the rest,
				// the rows events changed), applied in the same way.
				for _, kind := range []string{"event", "read"} {
					var ups []float64
					s.eval(fmt.Sprintf(`window.belugaPerf.updates.filter(u => u.tasks > 0 && u.kind === %q).map(u => u.ms)`, kind), &ups)
					if len(ups) > 0 {
						sort.Float64s(ups)
						what := map[string]string{"event": "live update (events applied)", "read": "read applied"}[kind]
						t.Logf("FIGURE %d-task instance: main-thread time per %s (render+commit) over %d: median %.1f ms, p90 %.1f ms, max %.1f ms (target < 16 ms for live updates)",
							n, what, len(ups), ups[len(ups)/2], ups[len(ups)*9/10], ups[len(ups)-1])
					}
				}
			})
		})
	}
}

// TestWebUIHugeInstance opens a 10,000-task instance (the cap of a
// workflow) while it runs: it opens collapsed by prefix (three nodes that
// count their tasks), with the state counts and a first page of the task
// list, and prints the time to that first useful paint. Unchecking the
// collapse draws every task (the overview); the list holds every attempt
// in a window of rows and filters by name.
func TestWebUIHugeInstance(t *testing.T) {
	t.Parallel()
	n := 10000
	if v := os.Getenv("BELUGA_UI_HUGE_TASKS"); v != "" { // a figure at 100,000 tasks: several minutes
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 5002 {
			t.Fatalf("BELUGA_UI_HUGE_TASKS=%q: want a number of tasks over 5,001 (the graph opens collapsed above 5,000)", v)
		}
	}
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	e.do("PUT", "/api/v1/projects/demo/workflows/huge", bigSpec(n), http.StatusCreated, nil)
	var out struct{ ID int64 }
	e.do("POST", "/api/v1/projects/demo/workflows/huge/runs", `{"dry_run":true}`, http.StatusCreated, &out)
	b.step(t, 5*time.Minute+time.Duration(n)*5*time.Millisecond, func(s *session) {
		s.run("blank", chromedp.Navigate("about:blank"))
		s.open(fmt.Sprintf("#/instances/%d", out.ID))
		s.until("the collapsed DAG fitted", fmt.Sprintf(`(window.belugaPerf?.ready || []).some(r => r.tasks === %d)`, n))
		var ready struct{ At, Drawn float64 }
		s.eval(fmt.Sprintf(`window.belugaPerf.ready.find(r => r.tasks === %d)`, n), &ready)
		t.Logf("FIGURE %d-task instance: first useful paint (graph collapsed to %.0f nodes and fitted, state counts, first page of tasks) %.0f ms after navigation (target 1000 ms); of which: %s",
			n, ready.Drawn, ready.At, s.perfMarks(`window.belugaPerf.marks`))
		if ready.Drawn != 3 {
			t.Fatalf("%d nodes drawn for the big instance; want it collapsed to 3", int(ready.Drawn))
		}
		s.until("collapsed, counted", fmt.Sprintf(`document.querySelector('#dag-collapse').checked &&
			document.querySelectorAll('.dag .node').length === 3 &&
			document.querySelector('.dag .node[data-task="p*"]')?.textContent.includes('%d tasks') &&
			document.querySelector('#state-counts')?.textContent.includes('%d tasks') &&
			document.querySelectorAll('table.tasks tbody tr[data-id]').length > 0`, n-2, n))

		// On demand, every task: the overview of the whole graph.
		s.click(`#dag-collapse`)
		s.until("every task drawn", fmt.Sprintf(`window.belugaPerf.ready.some(r => r.drawn === %d) &&
			!document.querySelector('.dag canvas.overview').hidden`, n))
		var all []struct{ At, Drawn float64 }
		s.eval(`window.belugaPerf.ready`, &all)
		t.Logf("FIGURE %d-task instance: the whole graph drawn on demand %.0f ms after the click's page had its first paint", n, all[len(all)-1].At-ready.At)

		s.until("the run ended", `['succeeded', 'failed'].includes(document.querySelector('h1 .badge')?.textContent)`)
		s.until("every attempt listed", fmt.Sprintf(`document.querySelector('#task-count')?.textContent.endsWith('of %d attempts')`, n))
		var rows int
		s.eval(`document.querySelectorAll('table.tasks tbody tr[data-id]').length`, &rows)
		if rows == 0 || rows > 80 {
			t.Fatalf("%d task rows in the DOM for %d attempts; want a window of them", rows, n)
		}
		target := fmt.Sprintf("p%d", n-17)
		s.retype(`#task-name-filter`, target)
		s.until("the name filter", fmt.Sprintf(`document.querySelectorAll('table.tasks tbody tr[data-id]').length === 1 && !!document.querySelector('table.tasks tr[data-task=%s]')`, target))
		s.retype(`#task-name-filter`, "")
	})
}

// TestWebUILogin: a 401 shows the login form; a wrong password says so; the
// right one shows the page and the user menu, whose Log out brings the form
// back (the real auth API, a user made by the admin). Also the grid and
// overview pages.
func TestWebUILogin(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	anon := newBrowser(t, e.base, "")
	e.do("PUT", "/api/v1/projects/demo/workflows/two", "tasks:\n  - name: a\n    command: echo a\n  - name: b\n    depends_on: [a]\n    command: exit 3\n", http.StatusCreated, nil)
	id := e.run("two", nil)
	e.wait(id, 30*time.Second)

	t.Run("grid and overview", func(t *testing.T) {
		b.step(t, 20*time.Second, func(s *session) {
			s.open("#/grid/demo/two")
			s.until("the grid", `document.querySelector('.runsgrid tr[data-task=b] td.cell')?.dataset.state === 'failed'`)
			s.until("the admin's menu", `document.querySelector('#user-menu')?.textContent === 'admin' && !document.querySelector('.login')`)
			s.click(`.runsgrid tr[data-task=a] td.cell a`)
			s.until("the run", fmt.Sprintf(`location.hash === '#/instances/%d'`, id))
			s.open("#/overview/demo")
			s.until("the overview", `[...document.querySelectorAll('table.failing td')].some(td => td.textContent === 'two/b')`)
		})
	})

	t.Run("login and logout", func(t *testing.T) {
		e.do("POST", "/api/v1/users", `{"name":"ada","password":"ada-secret-1"}`, http.StatusCreated, nil)
		e.do("PUT", "/api/v1/projects/demo/grants/ada", `{"level":"view"}`, http.StatusOK, nil)
		anon.step(t, 30*time.Second, func(s *session) {
			s.open("#/instances")
			s.until("the login form", `!!document.querySelector('.login') && [...document.querySelectorAll('.login label')].map(l => l.textContent).join() === 'Username,Password' &&
				[...document.querySelectorAll('.login button')].some(b => b.textContent === 'Log in')`)
			// The title is readable (it sits in the header, whose text is
			// white), and the page's 401s do not show behind the form.
			var look struct {
				Title, Back, Shows string
				Hidden             bool
			}
			s.eval(`({Title: getComputedStyle(document.querySelector('#login-title')).color,
				Back: getComputedStyle(document.querySelector('.login')).backgroundColor,
				Hidden: document.querySelector('#main').hidden, Shows: document.body.innerText})`, &look)
			if look.Title == look.Back || look.Title == "rgb(255, 255, 255)" {
				t.Errorf("the login title is %s on %s", look.Title, look.Back)
			}
			if !look.Hidden || strings.Contains(look.Shows, "authentication required") || strings.Contains(look.Shows, "401") {
				t.Errorf("behind the login form (page hidden: %v) the page shows:\n%s", look.Hidden, look.Shows)
			}
			s.axe()
			s.retype(`#login-username`, "ada")
			s.retype(`#login-password`, "wrong")
			s.click(`.login button[type=submit]`)
			s.until("the refusal", `document.querySelector('.login .apierror')?.textContent.includes('wrong username or password')`)
			s.retype(`#login-password`, "ada-secret-1")
			s.click(`.login button[type=submit]`)
			s.until("logged in", `!document.querySelector('.login') && document.querySelector('#user-menu')?.textContent === 'ada' &&
				document.querySelectorAll('table.grid tbody tr[data-id]').length === 1`)
			s.click(`#user-menu`)
			s.until("log out offered", `!!document.querySelector('.usermenu #logout')`)
			s.click(`#logout`)
			s.until("the login form again", `!!document.querySelector('.login') && !document.querySelector('#user-menu')`)
		})
	})
}

// perfMarks reads the page's timing marks (an object of name to ms after
// navigation, from expr) as "name ms, ..." in time order.
func (s *session) perfMarks(expr string) string {
	var marks map[string]float64
	s.eval(expr, &marks)
	order := make([]string, 0, len(marks))
	for k := range marks {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool { return marks[order[i]] < marks[order[j]] })
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%s %.0f", k, marks[k])
	}
	return strings.Join(parts, ", ")
}
