package standalone_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// projSpec: a chain a -> b, each task sleeping ${s} then waiting for its
// gate file in ${dir}: the test, not the machine's pace, says when a task
// ends.
const projSpec = `name: proj
params: {s: "0", dir: "/nonexistent"}
tasks:
  - {name: a, command: "sleep ${s}; while [ ! -f ${dir}/a ]; do sleep 0.05; done"}
  - {name: b, command: "sleep ${s}; while [ ! -f ${dir}/b ]; do sleep 0.05; done", depends_on: [a]}
`

// TestWebUIForecast: a running instance's page shows its projected end.
// With no history it says plainly there is none to go by (no number);
// after two runs it shows the end, how far off, the critical path of what
// remains and that the run is on track for its deadline, and the Gantt
// draws the remaining tasks' projected spans (hatched, titled "projected")
// and the projected end; as a task ends its projection goes, and when the
// run ends the projection goes from the header and the Gantt. The forecast
// is read with no tasks (not a read of the whole instance).
func TestWebUIForecast(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	p, base := newLiveProxy(t, e.base)
	e.apply(projSpec)
	b := newBrowser(t, base, e.sessionToken())

	// The first run: no history.
	dir := t.TempDir()
	id := e.run("proj", map[string]string{"dir": dir})
	e.waitTask(id, "a", "running")
	b.step(t, 90*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", id))
		s.until("no projection for want of history", `(() => {
			const el = document.querySelector('#projection[data-state=thin]');
			return !!el && el.textContent.startsWith('Not enough history') && el.textContent.includes('a, b') && !el.querySelector('time'); })()`)
	})
	gate(t, dir, "a")
	gate(t, dir, "b")
	e.wait(id, time.Minute)
	// The second: a second each.
	dir = t.TempDir()
	gate(t, dir, "a")
	gate(t, dir, "b")
	if iv := e.wait(e.run("proj", map[string]string{"dir": dir, "s": "1"}), time.Minute); iv.State != "succeeded" {
		t.Fatalf("history run: %+v", iv)
	}

	// The run under watch has a deadline an hour after it is made: on track.
	e.apply(strings.Replace(projSpec, "name: proj\n", "name: proj\ndeadline: 1h\n", 1))
	dir = t.TempDir()
	id = e.run("proj", map[string]string{"dir": dir})
	e.waitTask(id, "a", "running")
	asked := p.n()
	b.step(t, 90*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", id))
		s.until("the projected end, how far off and the critical path a → b", `(() => {
			const el = document.querySelector('#projection[data-state=on-track]');
			return !!el && !!el.querySelector('time') && /^(in |any moment now)/.test(el.querySelector('.until')?.textContent || '') &&
				[...el.querySelectorAll('.path code')].map((c) => c.textContent).join(' ') === 'a b' &&
				el.querySelector('.deadline')?.textContent === 'on track'; })()`)
		s.click(`#tab-gantt`)
		s.until("the Gantt tab chosen", `document.querySelector('#tab-gantt')?.getAttribute('aria-selected') === 'true'`)
		s.until("the projected spans of a (running) and b, and the projected end", `(() => {
			const a = document.querySelector('.gantt rect.proj[data-task=a]'), b = document.querySelector('.gantt rect.proj[data-task=b]');
			const end = document.querySelector('.gantt .proj-end line');
			return !!a && a.dataset.running === 'true' && !!b && !b.dataset.running &&
				a.querySelector('title')?.textContent.startsWith('projected') && b.querySelector('title')?.textContent.startsWith('projected') &&
				!!end && Number(end.getAttribute('x1')) >= Number(b.getAttribute('x')) &&
				Number(end.getAttribute('x1')) <= Number(document.querySelector('.gantt > svg').getAttribute('width')) &&
				!!document.querySelector('.gantt .proj-key'); })()`)
		// b has no attempt yet: its projection has a row of its own.
		s.until("b's row labelled", `!!document.querySelector('.gantt text.proj-label[data-task=b]')`)
		s.axe()

		gate(t, dir, "a")
		s.until("a's projection gone once a ended, b's there", `!document.querySelector('.gantt rect.proj[data-task=a]') &&
			!!document.querySelector('.gantt rect.proj[data-task=b]') &&
			document.querySelector('.gantt g.bar[data-task=a]')?.classList.contains('st-succeeded')`)
		s.until("the critical path now b alone", `[...document.querySelectorAll('#projection .path code')].map((c) => c.textContent).join(' ') === 'b'`)

		// Where the tabs are while the run goes on: the run's end must not
		// move them (a click aimed as it ends would land elsewhere).
		s.until("where the tabs are", `(window.tabsTop = document.querySelector('#tab-gantt').getBoundingClientRect().top + scrollY) > 0`)
		gate(t, dir, "b")
		s.until("the run over: no projection in the header or the Gantt", `document.querySelector('h1 .badge')?.textContent === 'succeeded' &&
			document.querySelector('#projection')?.dataset.state === 'ended' && !document.querySelector('.gantt rect.proj') && !document.querySelector('.gantt .proj-end') &&
			!document.querySelector('.gantt .proj-key') && !!document.querySelector('.gantt g.bar[data-task=b].st-succeeded')`)
		s.until("the tabs where they were", `Math.abs(document.querySelector('#tab-gantt').getBoundingClientRect().top + scrollY - window.tabsTop) < 1`)
	})
	n := 0
	for _, r := range p.since(asked) {
		if r.path != fmt.Sprintf("/api/v1/instances/%d", id) || r.query.Get("forecast") != "true" {
			continue
		}
		n++
		if r.query.Get("tasks_limit") != "0" {
			t.Fatalf("a forecast read asked for tasks: %v", r.query)
		}
	}
	if n == 0 {
		t.Fatal("the page asked for no forecast")
	}
	t.Logf("forecast reads over the run: %d", n)
}
