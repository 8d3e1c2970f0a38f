package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the schedule scenario uses a named zone

	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// chromiumPath is Debian's Chromium, which scripts/deps.sh installs.
const chromiumPath = "/usr/bin/chromium"

// browser is one headless Chromium tab on the UI of a standalone Beluga.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	mu   sync.Mutex
	errs []string // uncaught exceptions and CSP violations, reported at the end
	done bool     // the test is over: no more logging
	// dialogs takes the JavaScript dialogs (confirm, beforeunload) while a
	// scenario answers them itself; when nil they are accepted, as by a
	// user who meant to leave a page with unsaved input.
	dialogs chan *page.EventJavascriptDialogOpening
	other   target.ID // a second tab, which hideAndShow activates
}

// Every browser test runs in parallel with the others (t.Parallel; go
// test's -parallel bounds how many at once): each has its own Chromium,
// profile, standalone and data dir, and spends most of its time waiting on
// typing at a person's speed and on the page.

// newBrowser opens base with the session cookie of token (a login's or
// any token of the user; "": logged out, the UI shows its login page).
func newBrowser(t *testing.T, base, token string) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("the web UI tests need Chromium at %s (%v): run scripts/deps.sh (or apt-get install chromium)", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	for _, f := range []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
		"disable-background-networking", "disable-component-update", "disable-sync", "no-default-browser-check"} {
		opts = append(opts, chromedp.Flag(f, true))
	}
	b := &browser{t: t, base: base}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(b.logf), chromedp.WithLogf(b.logf))
	b.ctx = ctx
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		b.mu.Lock()
		b.done = true
		b.mu.Unlock()
	})
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			b.fail("uncaught exception: " + msg)
		case *cdplog.EventEntryAdded:
			// A 4xx the API answers shows up as a network error entry; the
			// UI shows those answers itself. Anything else at error level
			// (CSP, a failed script, an intervention) fails the test.
			if strings.Contains(e.Entry.Text, "Content Security Policy") {
				b.fail("CSP violation: " + e.Entry.Text)
			} else if e.Entry.Level == cdplog.LevelError && e.Entry.Source != cdplog.SourceNetwork {
				b.fail("console error: " + e.Entry.Text)
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeAssert {
				var parts []string
				for _, a := range e.Args {
					if a.Value != nil {
						parts = append(parts, string(a.Value))
					} else {
						parts = append(parts, a.Description)
					}
				}
				b.fail("console.error: " + strings.Join(parts, " "))
			}
		case *page.EventJavascriptDialogOpening:
			b.mu.Lock()
			ch := b.dialogs
			b.mu.Unlock()
			if ch != nil {
				select {
				case ch <- e:
				default:
					b.fail(fmt.Sprintf("an unexpected second %s dialog: %q", e.Type, e.Message))
				}
				return
			}
			b.logf("accepting a %s dialog: %q", e.Type, e.Message)
			// Not from the listener itself: a command waits for this goroutine.
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	start := time.Now()
	var cookie chromedp.Tasks
	if token != "" {
		cookie = append(cookie, network.SetCookie("beluga_session", token).WithURL(base+"/").WithHTTPOnly(true).
			WithSameSite(network.CookieSameSiteStrict))
	}
	if err := chromedp.Run(ctx, cookie, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	t.Logf("Chromium up in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errs {
			t.Error(e)
		}
	})
	return b
}

// logf takes chromedp's own messages. This chromedp does not know some
// events of a newer Chromium (the top layer of <dialog>); it ignores them,
// and so do we.
func (b *browser) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.Contains(msg, "unhandled node event") {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.t.Log("chromedp: " + msg)
	}
}

func (b *browser) fail(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, msg)
}

// step runs one scenario with its own deadline on the shared tab.
func (b *browser) step(t *testing.T, timeout time.Duration, f func(s *session)) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	s := &session{t: t, ctx: ctx, b: b}
	defer func() {
		if t.Failed() {
			s.dump()
		} else {
			s.screenshot()
		}
	}()
	f(s)
	s.axe()
}

// shotDir is where the scenarios' screenshots go: BELUGA_UI_SCREENSHOTS
// when set, else the test's temporary directory.
func shotDir(t *testing.T) string {
	if dir := os.Getenv("BELUGA_UI_SCREENSHOTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// screenshot saves what the tab shows at the end of a scenario.
func (s *session) screenshot() {
	ctx, cancel := context.WithTimeout(s.b.ctx, 10*time.Second)
	defer cancel()
	var shot []byte
	if err := chromedp.Run(ctx, chromedp.CaptureScreenshot(&shot)); err != nil || len(shot) == 0 {
		s.t.Errorf("screenshot: %v", err)
		return
	}
	name := filepath.Join(shotDir(s.t), strings.ReplaceAll(s.t.Name(), "/", "_")+".png")
	if err := os.WriteFile(name, shot, 0o644); err != nil {
		s.t.Errorf("screenshot: %v", err)
		return
	}
	s.t.Logf("screenshot: %s", name)
}

// axeSource is axe-core, from the UI's dev dependencies (make ui-deps).
var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "web", "node_modules", "axe-core", "axe.min.js"))
	return string(b), err
})

// axe runs axe-core on the page as it is and fails the scenario on a
// serious or critical violation.
func (s *session) axe() {
	s.t.Helper()
	src, err := axeSource()
	if err != nil {
		s.t.Fatalf("axe-core is needed for the accessibility checks (run make ui-deps): %v", err)
	}
	ctx, cancel := context.WithTimeout(s.b.ctx, 60*time.Second)
	defer cancel()
	var loaded bool
	if err := chromedp.Run(ctx, chromedp.Evaluate(`!!window.axe`, &loaded)); err == nil && !loaded {
		if err := chromedp.Run(ctx, chromedp.Evaluate(src+";true", &loaded)); err != nil {
			s.t.Fatalf("load axe-core: %v", err)
		}
	}
	var out []struct {
		ID, Impact, Help string
		Nodes            []string
	}
	err = chromedp.Run(ctx, chromedp.Evaluate(`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
		.filter(v => v.impact === 'serious' || v.impact === 'critical')
		.map(v => ({ID: v.id, Impact: v.impact, Help: v.help, Nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))})))`, &out,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if err != nil {
		s.t.Fatalf("axe: %v", err)
	}
	for _, v := range out {
		s.t.Errorf("axe %s (%s): %s at %v", v.ID, v.Impact, v.Help, v.Nodes)
	}
}

// logText is the JavaScript for the lines the log viewer shows.
const logText = `[...document.querySelectorAll('.log .ln-text')].map(x => x.textContent + '\n').join('')`

type session struct {
	t   *testing.T
	ctx context.Context
	b   *browser
}

func (s *session) run(what string, actions ...chromedp.Action) {
	s.t.Helper()
	if err := chromedp.Run(s.ctx, actions...); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

func (s *session) open(hash string) {
	s.t.Helper()
	s.run("open "+hash, chromedp.Navigate(s.b.base+"/"+hash))
	// The page is kept hidden (visibility) until the session is known
	// (web/src/Auth.tsx); chromedp counts a hidden element as visible, so a
	// click sent before would go to what is under it.
	s.until("the page shown", `!!document.body && !document.body.classList.contains('settling')`)
}

// until polls a JavaScript condition until it is true or the scenario's
// deadline passes.
func (s *session) until(what, expr string) {
	s.t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var ok bool
		err := chromedp.Run(s.ctx, chromedp.Evaluate(expr, &ok))
		if err == nil && ok {
			return
		}
		select {
		case <-s.ctx.Done():
			s.t.Fatalf("waiting for %s: %v (last error: %v)", what, s.ctx.Err(), err)
		case <-tick.C:
		}
	}
}

func (s *session) eval(expr string, out any) {
	s.t.Helper()
	s.run("evaluate "+expr, chromedp.Evaluate(expr, out))
}

// takeDialogs makes this scenario answer the page's JavaScript dialogs,
// until it ends.
func (s *session) takeDialogs() <-chan *page.EventJavascriptDialogOpening {
	ch := make(chan *page.EventJavascriptDialogOpening, 1)
	s.b.mu.Lock()
	s.b.dialogs = ch
	s.b.mu.Unlock()
	s.t.Cleanup(func() {
		s.b.mu.Lock()
		s.b.dialogs = nil
		s.b.mu.Unlock()
	})
	return ch
}

// dialog waits for the page's next JavaScript dialog and answers it.
func (s *session) dialog(ch <-chan *page.EventJavascriptDialogOpening, accept bool) *page.EventJavascriptDialogOpening {
	s.t.Helper()
	select {
	case e := <-ch:
		s.run("answer the dialog", page.HandleJavaScriptDialog(accept))
		return e
	case <-s.ctx.Done():
		s.t.Fatalf("waiting for a dialog: %v", s.ctx.Err())
		return nil
	}
}

// refreshed wakes the page's polls, as a tab coming back into view does,
// and waits until the element sel has been patched once more: a refresh
// without the 2 s wait for the next one.
func (s *session) refreshed(sel string) {
	s.t.Helper()
	var n int
	s.eval(fmt.Sprintf(`Number(document.querySelector(%s).dataset.refreshed) || 0`, js(sel)), &n)
	s.hideAndShow()
	s.until("a refresh of "+sel, fmt.Sprintf(`Number(document.querySelector(%s)?.dataset.refreshed) > %d`, js(sel), n))
}

// hideAndShow hides the tab and brings it back, as a user who looks at
// another tab and returns does: a second tab (blank, opened once) is
// activated, which hides this one, then this one is activated again. The
// page sees two real visibilitychange events (hidden, then visible),
// which wake its polls; the test dispatches none.
func (s *session) hideAndShow() {
	s.t.Helper()
	other := s.b.otherTab(s.t)
	s.run("activate another tab", target.ActivateTarget(other))
	s.until("the tab hidden", `document.visibilityState === 'hidden'`)
	s.run("activate the tab again", target.ActivateTarget(chromedp.FromContext(s.ctx).Target.TargetID))
	s.until("the tab shown", `document.visibilityState === 'visible'`)
}

// otherTab is a second, blank tab of the browser, opened on first use.
func (b *browser) otherTab(t *testing.T) target.ID {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.other == "" {
		ctx, _ := chromedp.NewContext(b.ctx) // closed with the browser
		if err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatalf("open a second tab: %v", err)
		}
		b.other = chromedp.FromContext(ctx).Target.TargetID
	}
	return b.other
}

func (s *session) text(sel string) string {
	s.t.Helper()
	var v string
	s.run("text of "+sel, chromedp.Text(sel, &v, chromedp.ByQuery))
	return v
}

// dump logs what the page shows (and saves a screenshot when
// BELUGA_UI_SCREENSHOTS names a directory), for a failed scenario.
func (s *session) dump() {
	ctx, cancel := context.WithTimeout(s.b.ctx, 5*time.Second)
	defer cancel()
	var loc, body string
	var shot []byte
	_ = chromedp.Run(ctx, chromedp.Location(&loc), chromedp.Evaluate(`document.body.innerText`, &body),
		chromedp.CaptureScreenshot(&shot))
	s.t.Logf("page %s shows:\n%s", loc, body)
	if len(shot) > 0 {
		name := filepath.Join(shotDir(s.t), strings.ReplaceAll(s.t.Name(), "/", "_")+".png")
		if err := os.WriteFile(name, shot, 0o644); err == nil {
			s.t.Logf("screenshot: %s", name)
		}
	}
}

// sessionToken is the admin's token, for a browser's session cookie.
func (e *env) sessionToken() string {
	e.t.Helper()
	e.login()
	return e.token
}

// with is e reporting to the subtest t.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWebUI drives the web UI in headless Chromium against a real
// standalone Beluga: authoring and running a workflow, a refused spec,
// stopping a run, a schedule, a backfill, and the cluster page. One browser serves
// every scenario, in order; later ones use what earlier ones made.
func TestWebUI(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())

	const twoTasks = `description: two tasks from the UI
params:
  GREETING: hello
tasks:
  - name: first
    command: 'echo "first says ${GREETING}: it''s \"quoted\" # not a comment"'
  - name: second
    depends_on: [first]
    retries: 1
    retry_interval: 1s
    command: |
      echo second-line-1
      echo "second done"
`

	t.Run("author and run", func(t *testing.T) {
		// Generous: the spec is typed a key at a time.
		b.step(t, 3*time.Minute, func(s *session) {
			// Create a project from the workflows page.
			s.open("#/workflows")
			s.until("the project picker", `location.hash === '#/workflows/demo' && !!document.querySelector('#create-project')`)
			s.click(`details.panel summary`)
			// Typed into only once the opened panel has laid it out: typing at
			// once met "Element is not focusable" once in a full run.
			s.until("the create-project form", `(() => { const i = document.querySelector('#create-project input[name=name]'); return !!i && i.offsetParent !== null && !i.disabled; })()`)
			s.typeInto(`#create-project input[name=name]`, "webui", false)
			s.click(`#create-project button[type=submit]`)
			s.until("the new project's page", `location.hash === '#/workflows/webui' && !!document.querySelector('#new-workflow')`)

			// Apply a two-task workflow from the editor.
			s.click(`#new-workflow`)
			s.until("the editor", `!!document.querySelector('#view-yaml')`)
			s.click(`#view-yaml`)
			s.until("the spec text", `!!document.querySelector('#spec') && document.querySelector('#spec').value.includes('tasks:')`)
			s.retype(`#wf-name`, "etl2")
			s.retype(`#spec`, twoTasks)
			s.click(`#save-spec`)
			// The flash goes after 6 s, which the loaded machine can take
			// to draw the workflow page: it is looked for first.
			s.until("the saved flash", `[...document.querySelectorAll('.flash.ok')].some(f => f.textContent.includes('etl2 version 1 saved'))`)
			s.until("the workflow page", `location.hash === '#/workflows/webui/etl2' && !!document.querySelector('#run-form')`)
			var nodes []string
			s.eval(`[...document.querySelectorAll('.dag .node')].map(n => n.dataset.task)`, &nodes)
			if strings.Join(nodes, ",") != "first,second" {
				t.Fatalf("DAG preview nodes %v", nodes)
			}

			// The editor's YAML of the stored spec applies back unchanged.
			s.click(`#edit-workflow`)
			s.until("the stored spec in the graph", `!!document.querySelector('.editflow .node[data-task=second]')`)
			s.click(`#view-yaml`)
			s.until("the stored spec in the editor", `!!document.querySelector('#spec') && !document.querySelector('#spec').disabled && document.querySelector('#spec').value.includes('second done')`)
			s.click(`#save-spec`)
			s.until("the no-change message", `location.hash === '#/workflows/webui/etl2' && [...document.querySelectorAll('.flash.ok')].some(f => f.textContent.includes('No change') && f.textContent.includes('version 1'))`)

			// Run it with a param from the Run form and land on the instance.
			s.until("the run form", `!!document.querySelector('#run-form .kvrow .v')`)
			s.retype(`#run-form .kvrow .v`, "bonjour")
			s.click(`#run-submit`)
			s.until("the instance page", `/^#\/instances\/\d+$/.test(location.hash)`)
			s.until("the instance to succeed", `document.querySelector('h1 .badge')?.textContent === 'succeeded'`)
			s.until("both tasks green in the DAG", `(() => {
				const n = [...document.querySelectorAll('.dag .node')];
				return n.length === 2 && n.every(x => x.dataset.state === 'succeeded' && x.classList.contains('st-succeeded'));
			})()`)
			var edges int
			s.eval(`document.querySelectorAll('.dag .react-flow__edge[data-id="first>second"]').length`, &edges)
			if edges != 1 {
				t.Fatalf("DAG has %d first->second edges", edges)
			}

			// Clicking a node shows its log.
			s.click(`.dag .node[data-task=first]`)
			s.until("first's log", logText+`.includes('first says bonjour: it\'s "quoted" # not a comment') && document.querySelector('.logstatus')?.textContent.includes('end of log')`)
			s.click(`tr[data-task=second] button[data-log]`)
			s.until("second's log", logText+` === 'second-line-1\nsecond done\n'`)

			// The instances list shows the run.
			s.open("#/instances?project=webui")
			s.until("the run in the list", `[...document.querySelectorAll('tbody tr[data-id]')].some(r => r.textContent.includes('webui/etl2') && r.querySelector('.badge')?.textContent === 'succeeded')`)
		})
	})

	t.Run("values", func(t *testing.T) {
		e := e.with(t)
		// A value that would be markup if the page took it as HTML.
		e.apply(`name: uivalues
tasks:
  - name: produce
    command: echo '${setValue(report=<b>rep-7</b> & co)}'
  - name: consume
    depends_on: [produce]
    params: {mode: fast}
    command: echo "got $report"
`)
		id := e.run("uivalues", nil)
		if iv := e.wait(id, 30*time.Second); iv.State != "succeeded" {
			t.Fatalf("instance %s", iv.State)
		}
		d := e.detail(id)
		var produce int64
		for _, tk := range d.Tasks {
			if tk.Name == "produce" {
				produce = tk.ID
			}
		}
		b.step(t, 20*time.Second, func(s *session) {
			s.open(fmt.Sprintf("#/instances/%d", id))
			s.until("the instance's outputs", `document.querySelectorAll('table.outputs tbody tr[data-output]').length === 1`)
			var row struct{ Name, Value, Task, ID string }
			s.eval(`(r => ({Name: r.cells[0].textContent, Value: r.cells[1].textContent, Task: r.cells[2].textContent,
				ID: r.dataset.taskInstance}))(document.querySelector('table.outputs tbody tr[data-output]'))`, &row)
			if row.Name != "report" || row.Value != "<b>rep-7</b> & co" || row.Task != fmt.Sprintf("produce #1 (%d)", produce) ||
				row.ID != fmt.Sprint(produce) {
				t.Fatalf("outputs row %+v", row)
			}
			// Per task: what it ran with and what it exported, as text.
			s.click(`tr[data-task=consume] button[data-values]`)
			s.until("consume's values beside the graph", `!!document.querySelector('.sidepanel .valuespanel[data-task=consume] dl.params-of')`)
			var vals struct{ Summary, Params, Outputs string }
			s.eval(`(d => ({Summary: d.querySelector('.summary').textContent,
				Params: [...d.querySelectorAll('dl.params-of dt')].map(x => x.textContent + '=' + x.nextElementSibling.textContent).join(';'),
				Outputs: [...d.querySelectorAll('dl.outputs-of dt')].map(x => x.textContent + '=' + x.nextElementSibling.textContent).join(';')}))(
				document.querySelector('.valuespanel[data-task=consume]'))`, &vals)
			if !strings.Contains(vals.Params, "mode=fast") || !strings.Contains(vals.Params, "report=<b>rep-7</b> & co") || vals.Outputs != "" ||
				!strings.Contains(vals.Summary, "0 outputs") {
				t.Fatalf("consume's values %+v", vals)
			}
			s.click(`tr[data-task=produce] button[data-values]`)
			s.until("produce's values", `!!document.querySelector('.valuespanel[data-task=produce] dl.outputs-of')`)
			s.eval(`(d => [...d.querySelectorAll('dl.outputs-of dt')].map(x => x.textContent + '=' + x.nextElementSibling.textContent).join(';'))(
				document.querySelector('.valuespanel[data-task=produce]'))`, &vals.Outputs)
			if vals.Outputs != "report=<b>rep-7</b> & co" {
				t.Fatalf("produce's outputs %q", vals.Outputs)
			}
			var bold int
			s.eval(`document.querySelectorAll('main b').length`, &bold)
			if bold != 0 {
				t.Fatalf("a value became markup: %d <b> elements", bold)
			}
		})
	})

	t.Run("bad spec is refused", func(t *testing.T) {
		e := e.with(t)
		const cyclic = "tasks:\n  - name: a\n    command: echo a\n    depends_on: [b]\n  - name: b\n    command: echo b\n    depends_on: [a]\n"
		// What the API says, to compare with what the UI shows.
		req, _ := http.NewRequest("PUT", e.base+"/api/v1/projects/webui/workflows/cyclic", strings.NewReader(cyclic))
		req.Header.Set("Content-Type", "application/yaml")
		resp, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error struct{ Message string } }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.Error.Message, "cycle") {
			t.Fatalf("API: %d %q", resp.StatusCode, body.Error.Message)
		}
		b.step(t, 90*time.Second, func(s *session) {
			s.open("#/edit/webui")
			s.until("the editor", `!!document.querySelector('#view-yaml')`)
			s.click(`#view-yaml`)
			s.until("the spec text", `!!document.querySelector('#spec')`)
			s.retype(`#wf-name`, "cyclic")
			s.retype(`#spec`, cyclic)
			s.click(`#save-spec`)
			s.until("the API's error", `!document.querySelector('#spec-error').hidden`)
			if got := s.text(`#spec-error`); !strings.Contains(got, body.Error.Message) {
				t.Fatalf("editor shows %q; the API said %q", got, body.Error.Message)
			}
			var hash string
			s.eval(`location.hash`, &hash)
			if hash != "#/edit/webui" {
				t.Fatalf("left the editor for %s", hash)
			}
		})
		e.do("GET", "/api/v1/projects/webui/workflows/cyclic", "", http.StatusNotFound, nil)
	})

	t.Run("editor warns before leaving", func(t *testing.T) {
		b.step(t, 15*time.Second, func(s *session) {
			s.open("#/edit/webui/etl2")
			s.until("the stored spec in the graph", `!!document.querySelector('.editflow .node[data-task=second]')`)
			s.click(`#view-yaml`)
			s.until("the stored spec", `!!document.querySelector('#spec') && !document.querySelector('#spec').disabled && document.querySelector('#spec').value.includes('second done')`)
			dialogs := s.takeDialogs()
			s.typeInto(`#spec`, "# not saved yet\n", false)
			var typed string
			s.eval(`document.querySelector('#spec').belugaMark = 'kept'; document.querySelector('#spec').value`, &typed)
			if !strings.Contains(typed, "# not saved yet") {
				t.Fatalf("typed into the editor, which holds %q", typed)
			}
			if !s.beforeUnloadAsks() {
				t.Fatal("closing the tab with unsaved text would not ask")
			}

			// Staying keeps the address, the editor and its text.
			s.click(`#nav a[data-nav=instances]`)
			if d := s.dialog(dialogs, false); d.Type != page.DialogTypeConfirm || !strings.Contains(d.Message, "not saved") {
				t.Fatalf("dialog %s %q", d.Type, d.Message)
			}
			var stay struct {
				Hash, Text string
				Kept       bool
			}
			s.eval(`({Hash: location.hash, Text: document.querySelector('#spec').value, Kept: document.querySelector('#spec').belugaMark === 'kept'})`, &stay)
			if stay.Hash != "#/edit/webui/etl2" || stay.Text != typed || !stay.Kept {
				t.Fatalf("after staying: %+v", stay)
			}

			// Leaving when the user says so.
			s.click(`#nav a[data-nav=instances]`)
			s.dialog(dialogs, true)
			s.until("the instances page", `location.hash === '#/instances' && !!document.querySelector('table.grid tbody')`)

			// Nothing typed: no question.
			s.open("#/edit/webui/etl2")
			s.until("the stored spec in the graph", `!!document.querySelector('.editflow .node[data-task=second]')`)
			s.click(`#view-yaml`)
			s.until("the stored spec", `!!document.querySelector('#spec') && !document.querySelector('#spec').disabled`)
			s.click(`#nav a[data-nav=instances]`)
			s.until("the instances page", `location.hash === '#/instances'`)
			if len(dialogs) != 0 {
				t.Fatalf("asked before leaving an untouched editor: %q", (<-dialogs).Message)
			}
		})
	})

	t.Run("stop a long task", func(t *testing.T) {
		e := e.with(t)
		e.do("PUT", "/api/v1/projects/webui/workflows/sleeper", "tasks:\n  - name: nap\n    command: echo napping; sleep 120\n", http.StatusCreated, nil)
		b.step(t, 30*time.Second, func(s *session) {
			s.open("#/workflows/webui/sleeper")
			s.until("the run form", `!!document.querySelector('#run-submit')`)
			s.click(`#run-submit`)
			s.until("the instance page", `/^#\/instances\/\d+$/.test(location.hash)`)
			s.until("the task running", `document.querySelector('.dag .node[data-task=nap]')?.dataset.state === 'running'`)
			s.click(`.dag .node[data-task=nap]`)
			s.until("the running task's log", logText+`.includes('napping') && document.querySelector('.logstatus')?.textContent.includes('following')`)
			// The refreshes update the DAG and the task's row in place.
			s.eval(`for (const el of [document.querySelector('.dag'), document.querySelector('.dag .node[data-task=nap]'),
				document.querySelector('tr[data-task=nap]')]) el.belugaMark = 'kept'`, nil)

			s.click(`.actions button[data-action=stop]`)
			s.until("the confirm dialog", `!!document.querySelector('dialog[open] button.ok')`)
			s.click(`dialog[open] button.ok`)
			s.until("the instance stopped", `document.querySelector('h1 .badge')?.textContent === 'stopped'`)
			s.until("the task killed", `document.querySelector('tr[data-task=nap]')?.dataset.state === 'killed' && document.querySelector('.dag .node[data-task=nap]')?.dataset.state === 'killed'`)
			var kept []bool
			s.eval(`['.dag', '.dag .node[data-task=nap]', 'tr[data-task=nap]'].map(q => document.querySelector(q).belugaMark === 'kept')`, &kept)
			if fmt.Sprint(kept) != "[true true true]" {
				t.Fatalf("the DAG, its node and the task's row kept through the refreshes: %v", kept)
			}
			s.until("the stop in the history", `[...document.querySelectorAll('table.history td')].some(td => td.textContent === 'stop')`)
			s.until("the log's end", `document.querySelector('.logstatus')?.textContent.includes('end of log')`)

			// An action the state does not allow is disabled with its reason;
			// one that a page shown before the state changed still sends shows
			// the API's 409 message.
			s.until("pause disabled", `document.querySelector('.actions button[data-action=pause]').disabled && document.querySelector('.actions button[data-action=pause]').title.includes('stopped')`)
			// A page shown before the stop: its reads say running still.
			s.eval(`(() => {
				const real = window.fetch;
				window.fetch = async (u, o) => {
					const r = await real(u, o);
					if (!/\/api\/v1\/instances\/\d+(\?|$)/.test(String(u)) || (o && o.method && o.method !== 'GET')) return r;
					const j = await r.json();
					j.state = 'running';
					return new Response(JSON.stringify(j), {status: r.status, headers: r.headers});
				};
			})()`, nil)
			s.hideAndShow()
			s.until("pause offered by the stale page", `!document.querySelector('.actions button[data-action=pause]').disabled`)
			s.click(`.actions button[data-action=pause]`)
			s.until("the confirm dialog", `!!document.querySelector('dialog[open] button.ok')`)
			s.click(`dialog[open] button.ok`)
			s.until("the conflict message", `[...document.querySelectorAll('.flash.error')].some(f => f.textContent.includes('stopped') && f.textContent.includes('HTTP 409'))`)
		})
	})

	t.Run("refresh keeps rows", func(t *testing.T) {
		b.step(t, 15*time.Second, func(s *session) {
			s.open("#/instances?project=webui")
			s.until("the runs", `document.querySelectorAll('table.grid tbody tr[data-id]').length > 0`)
			var id string
			s.eval(`(() => {
				const r = document.querySelector('table.grid tbody tr[data-id]');
				r.belugaMark = 'kept';
				r.querySelector('a').belugaMark = 'kept';
				getSelection().selectAllChildren(r.cells[1]);
				return r.dataset.id;
			})()`, &id)
			s.refreshed("table.grid tbody")
			s.refreshed("table.grid tbody")
			var kept struct {
				Row, Link bool
				Selection string
			}
			s.eval(fmt.Sprintf(`(() => {
				const r = document.querySelector('tr[data-id="%s"]');
				return {Row: r?.belugaMark === 'kept', Link: r?.querySelector('a').belugaMark === 'kept', Selection: getSelection().toString()};
			})()`, id), &kept)
			if !kept.Row || !kept.Link || !strings.HasPrefix(kept.Selection, "webui/") {
				t.Fatalf("after two refreshes: %+v", kept)
			}

			// A click whose press and release straddle a refresh still
			// lands on the row's link.
			var at struct{ X, Y float64 }
			s.eval(fmt.Sprintf(`(() => {
				const a = document.querySelector('tr[data-id="%s"] a');
				a.scrollIntoView({block: 'center'});
				const r = a.getBoundingClientRect();
				return {X: r.x + r.width / 2, Y: r.y + r.height / 2};
			})()`, id), &at)
			s.run("press", chromedp.MouseEvent(input.MousePressed, at.X, at.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
			s.refreshed("table.grid tbody")
			s.run("release", chromedp.MouseEvent(input.MouseReleased, at.X, at.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
			s.until("the run's page", fmt.Sprintf(`location.hash === '#/instances/%s'`, id))
		})
	})

	t.Run("schedule", func(t *testing.T) {
		e := e.with(t)
		b.step(t, 20*time.Second, func(s *session) {
			s.open("#/workflows/webui/etl2")
			s.until("the schedule panel", `!!document.querySelector('#schedule-set')`)
			s.click(`#schedule-set`)
			s.until("the schedule form", `!!document.querySelector('#schedule-cron')`)
			s.typeInto(`#schedule-cron`, "61 * * * *", true)
			s.click(`#schedule-save`)
			s.until("the cron error", `!document.querySelector('#schedule-error').hidden && document.querySelector('#schedule-error').textContent.includes('61')`)
			s.typeInto(`#schedule-cron`, "30 2 * * *", true)
			s.typeInto(`#schedule-tz`, "Europe/Berlin", true)
			s.choose(`#schedule-overlap`, "wait")
			s.click(`#schedule-save`)
			s.until("the next fire time and upcoming times", `!!document.querySelector('#schedule-panel .next-fire time') && document.querySelectorAll('#schedule-panel ol.upcoming li time').length === 5`)

			var sc struct {
				NextFireTime time.Time   `json:"next_fire_time"`
				Upcoming     []time.Time `json:"upcoming"`
				Overlap      string      `json:"overlap"`
			}
			e.do("GET", "/api/v1/projects/webui/workflows/etl2/schedule", "", http.StatusOK, &sc)
			if sc.Overlap != "wait" {
				t.Fatalf("overlap saved from the form: %q", sc.Overlap)
			}
			var shown []string
			s.eval(`[...document.querySelectorAll('#schedule-panel ol.upcoming time')].map(t => t.getAttribute('datetime'))`, &shown)
			var next string
			s.eval(`document.querySelector('#schedule-panel .next-fire time').getAttribute('datetime')`, &next)
			if nt, err := time.Parse(time.RFC3339, next); err != nil || !nt.Equal(sc.NextFireTime) {
				t.Fatalf("next fire shown %q, API %v", next, sc.NextFireTime)
			}
			berlin, _ := time.LoadLocation("Europe/Berlin")
			for i, v := range shown {
				at, err := time.Parse(time.RFC3339, v)
				if err != nil || !at.Equal(sc.Upcoming[i]) {
					t.Fatalf("upcoming[%d] shown %q, API %v", i, v, sc.Upcoming[i])
				}
				if l := at.In(berlin); l.Hour() != 2 || l.Minute() != 30 {
					t.Fatalf("upcoming[%d] = %v is not 02:30 in Berlin", i, l)
				}
			}

			// A window with seconds keeps them through an edit saved as it is.
			var win struct {
				Revision  int64     `json:"revision"`
				StartTime time.Time `json:"start_time"`
				EndTime   time.Time `json:"end_time"`
			}
			e.do("PUT", "/api/v1/projects/webui/workflows/etl2/schedule", `{"cron":"30 2 * * *","timezone":"Europe/Berlin",
				"start_time":"2099-01-02T03:04:05Z","end_time":"2099-03-04T05:06:07Z"}`, http.StatusOK, &win)
			rev := win.Revision
			s.open("#/schedules") // away and back: the page reads the schedule again
			s.open("#/workflows/webui/etl2")
			s.until("the window", fmt.Sprintf(`document.querySelector('#schedule-panel')?.textContent.includes('revision %d')`, rev))
			s.click(`#schedule-edit`)
			s.until("the form with seconds", `/:05$/.test(document.querySelector('#schedule-start')?.value) && /:07$/.test(document.querySelector('#schedule-end')?.value)`)
			s.click(`#schedule-save`)
			s.until("saved", fmt.Sprintf(`!document.querySelector('#schedule-form') && document.querySelector('#schedule-panel')?.textContent.includes('revision %d')`, rev+1))
			e.do("GET", "/api/v1/projects/webui/workflows/etl2/schedule", "", http.StatusOK, &win)
			if win.Revision != rev+1 || !win.StartTime.Equal(time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC)) ||
				!win.EndTime.Equal(time.Date(2099, 3, 4, 5, 6, 7, 0, time.UTC)) {
				t.Fatalf("after an unchanged edit: %+v", win)
			}

			s.click(`#schedule-toggle`)
			s.until("disabled", `document.querySelector('#schedule-panel .badge')?.textContent === 'disabled' && !document.querySelector('#schedule-panel ol.upcoming')`)
			s.open("#/schedules")
			s.until("the schedules list", `[...document.querySelectorAll('tr[data-workflow="webui/etl2"] td')].some(td => td.textContent === '30 2 * * *')`)
		})
	})

	t.Run("backfill", func(t *testing.T) {
		e := e.with(t)
		e.do("PUT", "/api/v1/projects/demo/workflows/days", "tasks:\n  - name: day\n    command: echo day=$BELUGA_CUR_DATE\n", http.StatusCreated, nil)
		type backfill struct {
			ID    int64    `json:"id"`
			State string   `json:"state"`
			Times []string `json:"times"`
		}
		var list struct{ Items []backfill }
		var bf backfill
		// Generous: four times and a cron are typed a key at a time.
		b.step(t, 2*time.Minute, func(s *session) {
			s.open("#/workflows/demo/days")
			s.until("the backfill form, told there is no schedule", `document.querySelector('#backfill-cron')?.placeholder.includes('no schedule')`)
			// 01:00:30 UTC four days ago to 03:00 UTC two days ago holds three
			// 02:00 UTC times; the form reads them in the browser's zone.
			var r struct{ From, To, FromSent, ToSent string }
			s.run("the range in the browser's zone", chromedp.Evaluate(`Promise.resolve(window.belugaTest).then(m => {
				const n = new Date();
				const at = (days, hour, sec) => m.localInput(new Date(Date.UTC(n.getUTCFullYear(), n.getUTCMonth(), n.getUTCDate() - days, hour, 0, sec)));
				const from = at(4, 1, 30), to = at(2, 3, 0); // the form takes seconds
				return {From: from, To: to, FromSent: m.rfc3339Local(from), ToSent: m.rfc3339Local(to)};
			})`, &r, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))

			// End before start: the API's message, and no backfill.
			s.typeDateTime(`#backfill-from`, r.To)
			s.typeDateTime(`#backfill-to`, r.From)
			s.typeInto(`#backfill-cron`, "0 2 * * *", true)
			s.typeInto(`#backfill-tz`, "UTC", true)
			if got := s.value(`#backfill-parallelism`); got != "1" {
				t.Fatalf("parallelism starts at %q, want 1", got)
			}
			s.click(`#backfill-submit`)
			s.until("the range error", `!document.querySelector('#backfill-error').hidden`)
			var apiErr struct{ Error struct{ Message string } }
			e.do("POST", "/api/v1/projects/demo/workflows/days/backfill", fmt.Sprintf(`{"start":%s,"end":%s,"cron":"0 2 * * *","timezone":"UTC","parallelism":1}`,
				js(r.ToSent), js(r.FromSent)), http.StatusBadRequest, &apiErr)
			if got := s.text(`#backfill-error`); !strings.Contains(apiErr.Error.Message, "is before start") || !strings.Contains(got, apiErr.Error.Message) {
				t.Fatalf("form shows %q; the API said %q", got, apiErr.Error.Message)
			}
			if e.do("GET", "/api/v1/backfills?project=demo&workflow=days", "", http.StatusOK, &list); len(list.Items) != 0 {
				t.Fatalf("a refused backfill was created: %+v", list.Items)
			}

			s.typeDateTime(`#backfill-from`, r.From)
			s.typeDateTime(`#backfill-to`, r.To)
			s.click(`#backfill-submit`)
			s.until("the backfill page", `/^#\/backfills\/\d+$/.test(location.hash)`)
			s.until("done, 3 succeeded, 3 runs", `document.querySelector('h1 .badge')?.textContent === 'done' &&
				document.querySelector('.head .n-succeeded')?.textContent === '3 succeeded' &&
				[...document.querySelectorAll('table.times tbody tr')].filter(r => r.dataset.state === 'succeeded' && r.querySelector('a[href^="#/instances/"]')).length === 3`)

			// The rows are the API's times in order, each with its run.
			if e.do("GET", "/api/v1/backfills?project=demo&workflow=days", "", http.StatusOK, &list); len(list.Items) != 1 || list.Items[0].State != "done" ||
				len(list.Items[0].Times) != 0 {
				t.Fatalf("backfills (a list leaves times out): %+v", list.Items)
			}
			e.do("GET", fmt.Sprintf("/api/v1/backfills/%d", list.Items[0].ID), "", http.StatusOK, &bf)
			var runs struct {
				Items []struct {
					ID           int64  `json:"id"`
					ScheduleTime string `json:"schedule_time"`
				}
			}
			e.do("GET", fmt.Sprintf("/api/v1/instances?backfill=%d", bf.ID), "", http.StatusOK, &runs)
			runOf := map[string]string{}
			for _, in := range runs.Items {
				runOf[in.ScheduleTime] = fmt.Sprint(in.ID)
			}
			var rows [][2]string
			s.eval(`[...document.querySelectorAll('table.times tbody tr')].map(r => [r.dataset.time, r.dataset.instance])`, &rows)
			if len(rows) != 3 || len(bf.Times) != 3 {
				t.Fatalf("rows %v, times %v", rows, bf.Times)
			}
			for i, row := range rows {
				at, err := time.Parse(time.RFC3339, row[0])
				if row[0] != bf.Times[i] || err != nil || at.UTC().Hour() != 2 || row[1] != runOf[row[0]] {
					t.Fatalf("row %d = %v; the API's time %s has run %s", i, row, bf.Times[i], runOf[bf.Times[i]])
				}
			}

			// Stop is disabled on a finished backfill.
			s.until("stop disabled", `document.querySelector('#backfill-stop').disabled && document.querySelector('#backfill-stop').title.includes('done')`)
		})

		// Two operators stop the same running backfill: the one who
		// confirms second is shown the API's 409.
		e.do("PUT", "/api/v1/projects/demo/workflows/naps", "tasks:\n  - name: nap\n    command: sleep 30\n", http.StatusCreated, nil)
		var running backfill
		e.do("POST", "/api/v1/projects/demo/workflows/naps/backfill", `{"start":"2026-01-01T00:00:00Z","end":"2026-01-03T00:00:00Z","cron":"0 2 * * *","timezone":"UTC","parallelism":1}`,
			http.StatusCreated, &running)
		b.step(t, time.Minute, func(s *session) {
			s.open(fmt.Sprintf("#/backfills/%d", running.ID))
			s.until("stop offered", `document.querySelector('h1 .badge')?.textContent === 'running' && !document.querySelector('#backfill-stop').disabled`)
			s.click(`#backfill-stop`)
			s.until("the confirm dialog", `!!document.querySelector('dialog[open] button.ok')`)
			e.do("POST", fmt.Sprintf("/api/v1/backfills/%d/actions", running.ID), `{"action":"stop","by":"the other operator"}`, http.StatusOK, nil)
			s.click(`dialog[open] button.ok`)
			s.until("the conflict message", `[...document.querySelectorAll('.flash.error')].some(f => f.textContent.includes('not running') && f.textContent.includes('HTTP 409'))`)
			s.until("stop disabled", `document.querySelector('#backfill-stop').disabled`)
		})

		b.step(t, 30*time.Second, func(s *session) {
			// The list shows it, and the instances link to it.
			s.open("#/backfills?project=demo")
			s.until("the backfill in the list", fmt.Sprintf(`document.querySelector('tr[data-id="%d"]')?.dataset.state === 'done'`, bf.ID))
			s.open("#/instances?project=demo&workflow=days")
			s.until("the runs linking to it", fmt.Sprintf(`document.querySelectorAll('a[href="#/backfills/%d"]').length === 3`, bf.ID))
		})
	})

	t.Run("yaml round trip", func(t *testing.T) {
		e := e.with(t)
		// The editor shows a stored spec as YAML; applied unchanged, that
		// YAML must be the same spec, whatever the strings hold.
		tricky := []string{"  leading spaces\nsecond", "ends with two newlines\n\n", "no newline at end\nline2",
			"has\ttab\nand trailing space \n", "middle\n\nempty line\n", "blank line\n   \nafter", "\nstarts with newline",
			"windows\r\nline", "yes", "null", "~", "1.5", "0x1F", "2026-01-01", "12:30", "- dash", "#hash", ": colon",
			"a: b", "'single'", `"double"`, "[x]", "{y}", "@at", "`tick`", "%pct", "!bang", "&anchor", "*alias", "|pipe",
			">gt", "ünïcödé ✓", "trailing space ", " leading", "a #b", "tab\tinside", "\tfirst tab\nsecond", "x\n\n\n",
			"echo $[yyyyMMdd-1] ${x}"}
		var tasks []map[string]any
		for i, c := range tricky {
			tasks = append(tasks, map[string]any{"name": fmt.Sprintf("t%02d", i), "command": c, "description": c})
		}
		spec := map[string]any{"description": "multi\nline: description\n", "params": map[string]string{"on": "off", "N1": "123", "Y": "yes", "E": ""},
			"tasks": tasks}
		body, _ := json.Marshal(spec)
		var applied struct{ Version int }
		e.do("PUT", "/api/v1/projects/demo/workflows/tricky", string(body), http.StatusCreated, &applied)
		var stored struct{ Spec json.RawMessage }
		e.do("GET", "/api/v1/projects/demo/workflows/tricky", "", http.StatusOK, &stored)
		b.step(t, 10*time.Second, func(s *session) {
			var yaml string
			s.run("toYAML", chromedp.Evaluate(`Promise.resolve(window.belugaTest.toYAML(`+string(stored.Spec)+`))`, &yaml,
				func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
			var again struct {
				Created bool
				Version int
			}
			req, _ := http.NewRequest("PUT", e.base+"/api/v1/projects/demo/workflows/tricky", strings.NewReader(yaml))
			req.Header.Set("Content-Type", "application/yaml")
			resp, err := e.client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			answer, _ := io.ReadAll(resp.Body)
			_ = json.Unmarshal(answer, &again)
			if resp.StatusCode != http.StatusOK || again.Created || again.Version != applied.Version {
				t.Fatalf("the YAML of the stored spec applied as %d %s (want 200, unchanged):\n%s", resp.StatusCode, answer, yaml)
			}
		})
	})

	t.Run("cluster", func(t *testing.T) {
		e := e.with(t)
		var c struct {
			Workers []struct{ Address string } `json:"workers"`
			Leader  string                     `json:"leader"`
		}
		e.do("GET", "/api/v1/cluster", "", http.StatusOK, &c)
		if len(c.Workers) != 1 {
			t.Fatalf("cluster: %+v", c)
		}
		b.step(t, 30*time.Second, func(s *session) {
			s.open("#/cluster")
			s.until("the worker", fmt.Sprintf(`!!document.querySelector('tr[data-worker=%s]')`, js(c.Workers[0].Address)))
			s.until("the leader", fmt.Sprintf(`[...document.querySelectorAll('table.masters tr')].some(r => r.textContent.includes(%s) && r.textContent.includes('leader'))`, js(c.Leader)))

			// Task groups have their own page, linked from this one.
			s.click(`a[href="#/task-groups"]`)
			s.until("the task groups page", `location.hash === '#/task-groups' && !!document.querySelector('#create-group')`)
			s.typeInto(`#group-name`, "etl_slots", false)
			s.click(`#group-capacity`)
			s.keys(kb.End + kb.Backspace + "2")
			s.click(`#create-group button[type=submit]`)
			s.until("the group", `document.querySelector('tr[data-group=etl_slots] .meterbox')?.textContent.trim() === '0 / 2'`)
			s.click(`tr[data-group=etl_slots] button`)
			s.until("the resize dialog", `!!document.querySelector('dialog[open] input[name=capacity]')`)
			s.retype(`dialog[open] input[name=capacity]`, "5")
			s.click(`dialog[open] button.ok`)
			s.until("the new capacity", `document.querySelector('tr[data-group=etl_slots] .meterbox')?.textContent.trim() === '0 / 5'`)
		})
	})
}
