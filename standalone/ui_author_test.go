package standalone_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// keyPace is a person's pace at the keyboard: the authoring tests type
// one key at a time at it, so a field that re-renders away its focus
// after a key loses the keys after it, as it would for a person.
const keyPace = 50 * time.Millisecond

// keys presses each character of text as a real key (keyDown, char,
// keyUp from Chromium's input pipeline) into whatever has the focus.
func (s *session) keys(text string, mods ...input.Modifier) {
	s.t.Helper()
	for _, r := range text {
		s.run(fmt.Sprintf("key %q", r), chromedp.KeyEvent(string(r), chromedp.KeyModifiers(mods...)))
		// Pacing, not synchronisation: nothing is waited for here.
		select {
		case <-time.After(keyPace):
		case <-s.ctx.Done():
			s.t.Fatalf("typing %q: %v", text, s.ctx.Err())
		}
	}
}

// click clicks the element sel (a CSS selector) with the mouse at its
// centre, aimed as a person aims (see aim).
func (s *session) click(sel string) {
	s.t.Helper()
	s.clickAt("click "+sel, fmt.Sprintf(`document.querySelector(%s)`, js(sel)))
}

// clickAt clicks, at its centre, the element the JavaScript expression el
// finds.
//
// A click that lands on something else (the page moved between the aim
// and the press: a header grew as a run ended) is seen, as a person sees
// it, and made again, at most three times.
func (s *session) clickAt(what, el string) {
	s.t.Helper()
	// The element is looked up again when the click comes (React may have
	// drawn it anew since the aim).
	watch := fmt.Sprintf(`(() => {
		const id = (window.__aimed?.id || 0) + 1;
		window.__aimed = {id, hit: null, on: ''};
		document.addEventListener('click', (ev) => {
			if (window.__aimed?.id !== id || window.__aimed.hit !== null) return; // an older click's watch
			const e = %s;
			window.__aimed.hit = !!e && e.contains(ev.target);
			window.__aimed.on = ev.target.outerHTML ? ev.target.outerHTML.slice(0, 120) : String(ev.target);
		}, {capture: true, once: true});
	})()`, el)
	for try := 1; ; try++ {
		x, y := s.aim(what, el)
		s.eval(watch, nil)
		s.run(what, chromedp.MouseEvent(input.MouseMoved, x, y), chromedp.MouseClickXY(x, y))
		// After a navigation the mark is gone: nothing to tell, so a hit.
		// A dialog the click opened holds the page (a look would wait for
		// it to close): the click did something, so a hit too.
		var got struct {
			Hit *bool
			On  string
		}
		look, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		err := chromedp.Run(look, chromedp.Evaluate(`window.__aimed ? {Hit: window.__aimed.hit, On: window.__aimed.on} : {Hit: true}`, &got))
		cancel()
		if err != nil || got.Hit == nil || *got.Hit {
			return
		}
		if try == 3 {
			s.t.Fatalf("%s: three clicks landed elsewhere, the last on %s", what, got.On)
		}
		s.t.Logf("%s: the click landed on %s (the page moved); clicking again", what, got.On)
	}
}

// aim is where a person would press on the element the JavaScript
// expression el finds: its centre, taken once it is in view, has not moved
// between two looks 50 ms apart and is what the pointer hits there.
// (chromedp.Click measures once and presses at once: in full CI runs a late
// layout shift, a tab bar moved by the data arriving above it, sent presses
// to what was under the point.)
func (s *session) aim(what, el string) (x, y float64) {
	s.t.Helper()
	look := fmt.Sprintf(`(() => {
		const e = %s;
		if (!e || !e.isConnected) return {Why: 'not in the page'};
		const b = e.getBoundingClientRect(), c = [b.x + b.width / 2, b.y + b.height / 2];
		if (b.width === 0 || b.height === 0) return {Why: 'no size (hidden)'};
		// A centre within a pixel of the edge is out of view too: the
		// pointer's point is rounded, and past the last row it hits nothing.
		if (c[0] < 1 || c[1] < 1 || c[0] > innerWidth - 1 || c[1] > innerHeight - 1) {
			e.scrollIntoView({block: 'center', inline: 'center'});
			return {Why: 'out of view at ' + c + ': scrolled'};
		}
		const hit = document.elementFromPoint(c[0], c[1]);
		if (hit && hit !== e && hit.contains(e)) {
			// Clipped by a scrolled box around it (a long form's panel).
			e.scrollIntoView({block: 'center', inline: 'nearest'});
			return {Why: 'hidden by the scrolled ' + hit.tagName.toLowerCase() + '.' + hit.className + ': scrolled'};
		}
		if (!hit || (hit !== e && !e.contains(hit)))
			return {X: c[0], Y: c[1], Why: 'covered at ' + c + ' by ' + (hit ? hit.outerHTML.slice(0, 120) : 'nothing')};
		return {X: c[0], Y: c[1], Ok: true};
	})()`, el)
	type seen struct {
		X, Y float64
		Ok   bool
		Why  string
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var prev, cur seen
	for {
		cur = seen{}
		err := chromedp.Run(s.ctx, chromedp.Evaluate(look, &cur))
		if err == nil && cur.Ok && prev.Ok && cur.X == prev.X && cur.Y == prev.Y {
			return cur.X, cur.Y
		}
		if err != nil {
			cur.Why = err.Error()
		} else if cur.Ok {
			cur.Why = fmt.Sprintf("at %v,%v (moved from %v,%v)", cur.X, cur.Y, prev.X, prev.Y)
		}
		prev = cur
		select {
		case <-s.ctx.Done():
			s.t.Fatalf("%s: never steady under the pointer: %v; last look: %s", what, s.ctx.Err(), cur.Why)
		case <-tick.C:
		}
	}
}

// typeInto clicks the field sel and types text at the end of what it
// holds (Ctrl+End takes the caret there), after taking that away with
// Backspace when clear is set.
func (s *session) typeInto(sel, text string, clear bool) {
	s.t.Helper()
	s.click(sel)
	if clear {
		s.keys(kb.End, input.ModifierCtrl)
		s.keys(strings.Repeat(kb.Backspace, len([]rune(s.value(sel)))))
	}
	s.keys(text)
}

// choose picks the first option of the select sel whose label starts
// with letters, from the keyboard: the select clicked, the arrow keys to
// that option, Enter. (Typed letters would do for a person, but the
// select's type-ahead forgets them after a second, which a key sent from
// this loaded test machine can take.) The option not picked fails the test.
func (s *session) choose(sel, letters string) {
	s.t.Helper()
	find := fmt.Sprintf(`(() => { const el = document.querySelector(%s); const l = %s.toLowerCase();
		return {From: el ? el.selectedIndex : -1, To: el ? [...el.options].findIndex((o) => o.label.trim().toLowerCase().startsWith(l)) : -1}; })()`,
		js(sel), js(letters))
	// A select filled from the API (datasources) gets its options late.
	s.until(fmt.Sprintf("an option of %s starting with %q", sel, letters), find+`.To >= 0`)
	var at struct{ From, To int }
	s.eval(find, &at)
	s.click(sel)
	if at.To > at.From {
		s.keys(strings.Repeat(kb.ArrowDown, at.To-at.From))
	} else {
		s.keys(strings.Repeat(kb.ArrowUp, at.From-at.To))
	}
	s.keys(kb.Enter)
	// The open list commits the choice a moment after Enter.
	var got int
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s.eval(fmt.Sprintf(`document.querySelector(%s)?.selectedIndex ?? -1`, js(sel)), &got)
		if got == at.To {
			return
		}
		select {
		case <-deadline:
			s.t.Fatalf("chose option %d of %s from the keyboard (%q), which holds option %d", at.To, sel, letters, got)
		case <-tick.C:
		}
	}
}

// value is what the control sel holds (a checkbox: "true" or "false").
func (s *session) value(sel string) string {
	s.t.Helper()
	var v string
	s.eval(fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) return '<none>';
		return el.type === 'checkbox' ? String(el.checked) : el.value; })()`, js(sel)), &v)
	return v
}

// field is the control of a task form's field k.
func field(k string) string {
	return fmt.Sprintf(`.taskform .field[data-field=%s] :is(input, textarea, select)`, k)
}

func labelled(l string) string { return fmt.Sprintf(`.taskform [aria-label=%q]`, l) }

// formStep is one thing a person does in a task's form: type into a field
// (after clearing it), pick an option, tick a box or press a button, and
// what the control then holds.
type formStep struct {
	do   string // type, retype, choose, check, press
	sel  string
	text string
	want string
}

// commonSteps fill the fields every task's form has.
func commonSteps(desc string) []formStep {
	return []formStep{
		{"type", field("description"), desc, desc},
		{"press", `.taskform details.common summary`, "", ""},
		{"type", field("retries"), "2", "2"},
		{"type", field("retry_interval"), "5s", "5s"},
		{"type", field("timeout"), "10m", "10m"},
		{"choose", field("timeout_strategy"), "w", "warn"},
		{"choose", field("priority"), "me", "medium"},
		{"type", field("worker_group"), "default", "default"},
		{"type", field("task_group"), "db", "db"},
		{"press", `.taskform button[data-add=Params]`, "", ""},
		{"type", labelled("Params name 1"), "TOKEN", "TOKEN"},
		{"type", labelled("Params value 1"), "s3cr3t value", "s3cr3t value"},
		{"check", `.taskform .kvrow .secret input`, "", "true"},
	}
}

// TestWebUITaskForms types into every field of every task type's form,
// one real key at a time at a person's pace, checks each value as typed,
// saves, and checks the stored spec holds every value.
func TestWebUITaskForms(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	lite := filepath.Join(t.TempDir(), "wh.db")
	e.do("PUT", "/api/v1/datasources/lite", `{"type":"sqlite","database":"`+lite+`"}`, http.StatusCreated, nil)
	e.do("POST", "/api/v1/task-groups", `{"name":"db","capacity":2}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/demo/workflows/child", "tasks:\n  - name: c\n    command: echo child\n", http.StatusCreated, nil)

	type typed struct {
		ty, name string
		steps    []formStep
	}
	forms := []typed{
		{"shell", "s1", []formStep{{"retype", field("command"), "echo \"${setValue(x=1)}\"\necho two", "echo \"${setValue(x=1)}\"\necho two"}}},
		{"python", "p1", []formStep{{"retype", field("command"), "import os\nprint(os.environ['x'])", "import os\nprint(os.environ['x'])"}}},
		{"http", "h1", []formStep{
			{"choose", field("method"), "PO", "POST"},
			{"type", field("url"), e.base + "/healthz?x=${x}", e.base + "/healthz?x=${x}"},
			{"press", `.taskform button[data-add=Headers]`, "", ""},
			{"type", labelled("Headers name 1"), "Content-Type", "Content-Type"},
			{"type", labelled("Headers value 1"), "application/json", "application/json"},
			{"type", field("body"), `{"x": "${x}"}`, `{"x": "${x}"}`},
			{"type", field("expect_status"), "200, 201", "200, 201"},
			{"press", `.taskform button[data-add="Outputs (name: JSON path)"]`, "", ""},
			{"type", labelled("Outputs (name: JSON path) name 1"), "status", "status"},
			{"type", labelled("Outputs (name: JSON path) value 1"), "status", "status"},
			{"check", `.taskform .field:has(> label > input[type=checkbox]) input[type=checkbox]`, "", "true"},
		}},
		{"sql", "q1", []formStep{
			{"choose", field("datasource"), "li", "lite"},
			{"type", field("sql"), "select ${x} as y", "select ${x} as y"},
			{"check", `.taskform .field:has(> label > input[type=checkbox]) input[type=checkbox]`, "", "false"},
		}},
		{"sub_workflow", "sw", []formStep{
			{"type", field("workflow"), "child", "child"},
			{"type", field("version"), "1", "1"},
		}},
		{"dependent", "dp", []formStep{
			{"type", labelled("wait for 1 project"), "demo", "demo"},
			{"type", labelled("wait for 1 workflow"), "child", "child"},
			{"type", labelled("wait for 1 task"), "c", "c"},
			{"retype", labelled("wait for 1 date"), "yesterday", "yesterday"},
			{"choose", field("relation"), "an", "any"},
			{"choose", field("on_failed"), "w", "wait"},
			{"type", field("check_interval"), "30s", "30s"},
		}},
		{"conditions", "cond", []formStep{
			{"type", field("on_success"), "p1", "p1"},
			{"type", field("on_failure"), "h1", "h1"},
		}},
		{"switch", "route", []formStep{
			{"type", labelled("case 1 when"), `x == "1"`, `x == "1"`},
			{"type", labelled("case 1 next"), "sw", "sw"},
			{"type", field("default"), "dp", "dp"},
		}},
	}

	b.step(t, 4*time.Minute, func(s *session) {
		s.open("#/edit/demo")
		s.until("the palette", `!!document.querySelector('.palette button[data-type=switch]')`)
		for _, f := range forms {
			s.click(fmt.Sprintf(`.palette button[data-type=%s]`, f.ty))
			s.until("the "+f.ty+" form", fmt.Sprintf(`document.querySelector('.taskform h2')?.textContent === %q`, f.ty+" task"))
			s.typeInto(field("name"), f.name+kb.Enter, true)
			s.until(f.name+" renamed", fmt.Sprintf(`!!document.querySelector('.editflow .node[data-task=%s]') && %s === %q`, f.name,
				fmt.Sprintf(`document.querySelector(%s)?.value`, js(field("name"))), f.name))
			for _, st := range append(f.steps, commonSteps("the "+f.ty+" task")...) {
				switch st.do {
				case "type", "retype":
					s.typeInto(st.sel, st.text, st.do == "retype")
				case "choose":
					s.choose(st.sel, st.text)
				case "check", "press":
					s.click(st.sel)
				}
				if st.want != "" {
					if got := s.value(st.sel); got != st.want {
						t.Fatalf("%s: %s %q into %s: the field holds %q, want %q", f.name, st.do, st.text, st.sel, got, st.want)
					}
				}
			}
		}
		// The branches' edges, drawn with the mouse.
		s.click(`#auto-layout`)
		for _, edge := range [][2]string{{"s1", "cond"}, {"cond", "p1"}, {"cond", "h1"}, {"route", "sw"}, {"route", "dp"}} {
			s.drag(handle(edge[0], "source"), handle(edge[1], "target"))
			s.until("the edge "+edge[0]+" → "+edge[1], fmt.Sprintf(`!!document.querySelector('.editflow .react-flow__edge[data-id="%s>%s"]')`, edge[0], edge[1]))
		}
		s.typeInto(`#wf-name`, "forms", false)
		s.until("no problems", `document.querySelector('#editor-summary').textContent.includes('no problems found')`)
		s.click(`#save-spec`)
		s.until("the workflow page", `location.hash === '#/workflows/demo/forms'`)
	})

	var stored struct {
		Spec struct {
			Tasks []map[string]any `json:"tasks"`
		} `json:"spec"`
	}
	e.do("GET", "/api/v1/projects/demo/workflows/forms", "", http.StatusOK, &stored)
	got := map[string]map[string]any{}
	for _, tk := range stored.Spec.Tasks {
		got[fmt.Sprint(tk["name"])] = tk
	}
	// The API reads a secret param back as *** and a duration as Go writes it.
	common := map[string]string{"retries": `2`, "retry_interval": `"5s"`, "timeout": `"10m0s"`, "timeout_strategy": `"warn"`, "priority": `"medium"`,
		"worker_group": `"default"`, "task_group": `"db"`, "params": `{"TOKEN":"***"}`, "secret_params": `["TOKEN"]`}
	want := map[string]map[string]string{
		"s1": {"command": js("echo \"${setValue(x=1)}\"\necho two")},
		"p1": {"type": `"python"`, "command": js("import os\nprint(os.environ['x'])"), "depends_on": `["cond"]`},
		"h1": {"type": `"http"`, "method": `"POST"`, "url": js(e.base + "/healthz?x=${x}"), "headers": `{"Content-Type":"application/json"}`,
			"body": js(`{"x": "${x}"}`), "expect_status": `[200,201]`, "outputs": `{"status":"status"}`, "insecure_skip_verify": `true`},
		"q1":    {"type": `"sql"`, "datasource": `"lite"`, "sql": js("select ${x} as y"), "transaction": `false`},
		"sw":    {"type": `"sub_workflow"`, "workflow": `"child"`, "version": `1`},
		"dp":    {"type": `"dependent"`, "wait_for": `[{"date":"yesterday","project":"demo","task":"c","workflow":"child"}]`, "relation": `"any"`, "on_failed": `"wait"`, "check_interval": `"30s"`},
		"cond":  {"type": `"conditions"`, "on_success": `["p1"]`, "on_failure": `["h1"]`, "depends_on": `["s1"]`},
		"route": {"type": `"switch"`, "cases": `[{"next":["sw"],"when":"x == \"1\""}]`, "default": `["dp"]`},
	}
	for name, fields := range want {
		tk, ok := got[name]
		if !ok {
			t.Errorf("task %s not stored (stored: %v)", name, stored.Spec.Tasks)
			continue
		}
		for k, v := range common {
			fields[k] = v
		}
		ty := strings.TrimPrefix(strings.TrimSuffix(fields["type"], `"`), `"`)
		if ty == "" {
			ty = "shell"
		}
		fields["description"] = js("the " + ty + " task")
		for k, v := range fields {
			if g := js(tk[k]); g != v {
				t.Errorf("task %s: %s stored as %s, want %s", name, k, g, v)
			}
		}
	}
	_ = os.Remove(lite)
}

// node is the editor's node of task name.
func node(name string) string { return fmt.Sprintf(`.editflow .node[data-task=%s]`, name) }

// beforeUnloadAsks is whether leaving the page now asks first, found as a
// person finds it: the page is reloaded (F5), and the browser's "leave
// site?" dialog either comes (answered: stay, so nothing is lost) or the
// page loads again (nothing was unsaved; the same address is open anew).
func (s *session) beforeUnloadAsks() bool {
	s.t.Helper()
	s.b.mu.Lock()
	was := s.b.dialogs
	ch := make(chan *page.EventJavascriptDialogOpening, 1)
	s.b.dialogs = ch
	s.b.mu.Unlock()
	defer func() {
		s.b.mu.Lock()
		s.b.dialogs = was
		s.b.mu.Unlock()
	}()
	s.eval(`window.belugaBeforeReload = true`, nil)
	// A reload waits for the page's load while the dialog is open: run from
	// its own goroutine, it returns once the dialog is answered (no load
	// then: it ends with the page's context) or the page has loaded anew.
	rctx, stop := context.WithCancel(s.ctx)
	defer stop()
	reloaded := make(chan error, 1)
	go func() { reloaded <- chromedp.Run(rctx, chromedp.Reload()) }()
	var gone bool
	for {
		select {
		case d := <-ch:
			if d.Type != page.DialogTypeBeforeunload {
				s.t.Fatalf("a %s dialog on reload: %q", d.Type, d.Message)
			}
			s.run("stay on the page", page.HandleJavaScriptDialog(false))
			stop() // no load will come
			<-reloaded
			s.eval(`window.belugaBeforeReload === true`, &gone)
			if !gone {
				s.t.Fatal("stayed on the page, but it loaded again")
			}
			return true
		case err := <-reloaded:
			if err != nil {
				s.t.Fatalf("reload: %v", err)
			}
			s.until("the page loaded anew", `window.belugaBeforeReload !== true`)
			s.until("the app settled after the reload", `!!document.querySelector('#nav') && !document.body.classList.contains('settling')`)
			return false
		case <-s.ctx.Done():
			s.t.Fatalf("reloading: %v", s.ctx.Err())
			return false
		}
	}
}

// TestWebUIEditorUndo: Backspace and Delete in a field edit the field and
// never delete the node; Ctrl+Z and Ctrl+Shift+Z undo and redo typing, a
// node deleted from the canvas, an edge drawn; leaving asks only when
// something is unsaved (a look at the YAML view is not; a change undone
// is not).
func TestWebUIEditorUndo(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	e.do("PUT", "/api/v1/projects/demo/workflows/kept", "# a comment\ndescription: stored\ntasks:\n  - name: a\n    command: echo a\n  - name: b\n    depends_on: [a]\n    params: {K: v}\n    secret_params: [K]\n    retries: 2\n    command: echo b\n", http.StatusCreated, nil)
	undo := func(s *session) { s.keys("z", input.ModifierCtrl) }
	redo := func(s *session) { s.keys("z", input.ModifierCtrl|input.ModifierShift) }

	t.Run("undo and redo", func(t *testing.T) {
		b.step(t, 90*time.Second, func(s *session) {
			s.open("#/edit/demo")
			s.until("the palette", `!!document.querySelector('.palette button[data-type=shell]')`)
			s.click(`.palette button[data-type=shell]`)
			s.until("its form", `!!document.querySelector(`+js(field("description"))+`)`)
			// Backspace and Delete in a field edit the field; the node stays.
			s.typeInto(field("description"), "abcd", false)
			s.keys(kb.Backspace)
			s.keys(kb.ArrowLeft + kb.Delete)
			if v := s.value(field("description")); v != "ab" {
				t.Fatalf("the description holds %q after Backspace and Delete, want ab", v)
			}
			s.until("the node still there", `!!document.querySelector(`+js(node("shell_1"))+`)`)
			// The first task is not blown up to fill the canvas (it was at 200 %).
			var scale float64
			s.eval(`new DOMMatrix(getComputedStyle(document.querySelector('.editflow .react-flow__viewport')).transform).a`, &scale)
			if scale > 1 {
				t.Errorf("the editor shows its first task at %.0f %%", scale*100)
			}

			// The keys typed in one go are one step.
			undo(s)
			s.until("the typing undone", `document.querySelector(`+js(field("description"))+`)?.value === ''`)
			if d := s.value(`#wf-desc`); d != "What this workflow does" {
				t.Fatalf("the workflow's description is %q after undo", d)
			}
			redo(s)
			s.until("the typing redone", `document.querySelector(`+js(field("description"))+`)?.value === 'ab'`)

			// A node deleted on the canvas comes back with its fields.
			s.click(node("shell_1"))
			s.keys(kb.Backspace)
			s.until("the node deleted", `!document.querySelector(`+js(node("shell_1"))+`)`)
			undo(s)
			s.until("the node back", `!!document.querySelector(`+js(node("shell_1"))+`)`)
			s.click(node("shell_1"))
			s.until("its description back", `document.querySelector(`+js(field("description"))+`)?.value === 'ab'`)

			// An edge drawn, undone, redone.
			s.click(`.palette button[data-type=python]`)
			s.until("two nodes", `document.querySelectorAll('.editflow .node').length === 2`)
			s.drag(handle("shell_1", "source"), handle("python_1", "target"))
			edge := `!!document.querySelector('.editflow .react-flow__edge[data-id="shell_1>python_1"]')`
			s.until("the edge", edge)
			undo(s)
			s.until("the edge undone", "!"+edge)
			redo(s)
			s.until("the edge redone", edge)
			// Typing into a field after an undo reaches the field.
			s.click(node("python_1"))
			s.until("its form", `document.querySelector('.taskform h2')?.textContent === 'python task'`)
			s.typeInto(field("description"), "py", false)
			if v := s.value(field("description")); v != "py" {
				t.Fatalf("the description holds %q, want py", v)
			}
			s.until("two nodes", `document.querySelectorAll('.editflow .node').length === 2`)
		})
	})

	t.Run("leaving asks only when unsaved", func(t *testing.T) {
		b.step(t, 60*time.Second, func(s *session) {
			s.open("#/edit/demo/kept")
			s.until("the stored graph", `document.querySelectorAll('.editflow .node').length === 2`)
			// A look at the YAML view changes nothing (its text orders a task's
			// fields otherwise than the API: secret_params comes last).
			s.click(`#view-yaml`)
			s.until("the YAML", `!!document.querySelector('#spec')?.value.includes('name: b')`)
			s.click(`#view-graph`)
			s.until("the graph again", `document.querySelectorAll('.editflow .node').length === 2`)
			if s.beforeUnloadAsks() {
				t.Fatal("the editor asks before leaving after only a look at the YAML view")
			}
			// A change undone is no change.
			s.click(`.palette button[data-type=shell]`)
			s.until("three nodes", `document.querySelectorAll('.editflow .node').length === 3`)
			if !s.beforeUnloadAsks() {
				t.Fatal("a task added, and leaving would not ask")
			}
			undo(s)
			s.until("two nodes", `document.querySelectorAll('.editflow .node').length === 2`)
			if s.beforeUnloadAsks() {
				t.Fatal("the editor asks before leaving after its only change was undone")
			}
			dialogs := s.takeDialogs()
			s.click(`#nav a[data-nav=instances]`)
			s.until("the instances page", `location.hash === '#/instances'`)

			// A typed change asks; staying keeps it.
			s.open("#/edit/demo/kept")
			s.until("the stored graph", `document.querySelectorAll('.editflow .node').length === 2`)
			s.click(node("b"))
			s.typeInto(field("description"), "typed", false)
			s.click(`#nav a[data-nav=instances]`)
			if d := s.dialog(dialogs, false); !strings.Contains(d.Message, "not saved") {
				t.Fatalf("dialog %q", d.Message)
			}
			if v := s.value(field("description")); v != "typed" {
				t.Fatalf("after staying the description holds %q", v)
			}
		})
	})
}

// TestWebUIAuthorReadmeDAG: a person builds the README's four-task DAG
// in the editor with the keyboard and the mouse only, typing every value
// at a person's pace: shell exports rows, python reads it and exports
// score, sql on a datasource picked from the list reads score, and an
// http task runs beside python; saves, runs it, and sees it succeed with
// the values passed down, all in under two minutes.
func TestWebUIAuthorReadmeDAG(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	lite := filepath.Join(t.TempDir(), "wh.db")
	e.do("PUT", "/api/v1/datasources/warehouse", `{"type":"sqlite","database":"`+lite+`"}`, http.StatusCreated, nil)
	var id int64
	var took time.Duration
	b.step(t, 3*time.Minute, func(s *session) {
		s.open("#/edit/demo")
		s.until("the palette", `!!document.querySelector('.palette button[data-type=shell]')`)
		began := time.Now()
		s.typeInto(`#wf-name`, "readme", false)
		add := func(ty, name string) {
			s.click(fmt.Sprintf(`.palette button[data-type=%s]`, ty))
			s.until("the "+ty+" form", fmt.Sprintf(`document.querySelector('.taskform h2')?.textContent === %q`, ty+" task"))
			s.typeInto(field("name"), name+kb.Enter, true)
			s.until(name, `!!document.querySelector(`+js(node(name))+`)`)
		}
		add("shell", "extract")
		s.typeInto(field("command"), `echo '${setValue(rows=42)}'`, true)
		add("python", "score")
		s.typeInto(field("command"), "import os\nwith open(os.environ[\"BELUGA_OUTPUT\"], \"a\") as f:\n  f.write(\"score=%d\\n\" % (int(os.environ[\"rows\"]) * 2))", true)
		add("sql", "load")
		s.until("the datasources listed", `!document.querySelector(`+js(field("datasource"))+`).disabled`)
		s.choose(field("datasource"), "wa")
		s.typeInto(field("sql"), "select ${score} as loaded", false)
		add("http", "notify")
		s.typeInto(field("url"), e.base+"/healthz?rows=${rows}", false)
		s.click(`#auto-layout`)
		for _, edge := range [][2]string{{"extract", "score"}, {"score", "load"}, {"extract", "notify"}} {
			s.drag(handle(edge[0], "source"), handle(edge[1], "target"))
			s.until("the edge "+edge[0]+" → "+edge[1], fmt.Sprintf(`!!document.querySelector('.editflow .react-flow__edge[data-id="%s>%s"]')`, edge[0], edge[1]))
		}
		s.until("no problems", `document.querySelector('#editor-summary').textContent.includes('no problems found')`)
		s.click(`#save-spec`)
		s.until("the workflow page", `location.hash === '#/workflows/demo/readme' && !!document.querySelector('#run-submit')`)
		s.click(`#run-submit`)
		s.until("the instance page", `/^#\/instances\/\d+$/.test(location.hash)`)
		s.until("every node succeeded", `document.querySelectorAll('.dag .node').length === 4 && [...document.querySelectorAll('.dag .node')].every(n => n.dataset.state === 'succeeded')`)
		took = time.Since(began)
		s.eval(`Number(location.hash.split('/').pop())`, &id)
	})
	t.Logf("built, saved and ran the DAG in %v", took.Round(time.Second))
	if took > 2*time.Minute {
		t.Errorf("authoring and running took %v, more than two minutes", took)
	}
	_, d := e.succeeded(id, 30*time.Second)
	if got, want := d.outputs(), "extract.rows=42 load.loaded=84 score.score=84"; got != want {
		t.Errorf("outputs %q, want %q", got, want)
	}
}
