package standalone_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestUIPlanPreview: Rerun on the instance page previews the plan first
// (no action sent); the downstream choice adds the run that waits on this
// one; Apply runs exactly the plan's runs.
func TestUIPlanPreview(t *testing.T) {
	e := start(t, "")
	e.apply("name: up\ntasks:\n  - {name: a, command: 'true'}\n")
	e.apply(`name: down
tasks:
  - {name: wait, type: dependent, wait_for: [{workflow: up, date: today}], check_interval: 1s}
  - {name: b, command: "true", depends_on: [wait]}
`)
	up := e.run("up", nil)
	e.succeeded(up, 60*time.Second)
	down := e.run("down", nil)
	e.succeeded(down, 60*time.Second)
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 60*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", up))
		s.until("the instance succeeded", `document.querySelector('h1 .badge')?.textContent === 'succeeded'`)
		s.click(`.actions button[data-action=rerun]`)
		s.until("the plan shown", `document.querySelectorAll('.planpanel tr[data-instance]').length === 1 && !!document.querySelector('#plan-summary')`)
		s.choose(`#plan-downstream`, "direct")
		s.until("the downstream run planned", fmt.Sprintf(`!!document.querySelector('.planpanel tr[data-instance="%d"]') && document.querySelectorAll('.planpanel tr[data-instance]').length === 2`, down))
		var text string
		s.eval(fmt.Sprintf(`document.querySelector('.planpanel tr[data-instance="%d"]').textContent`, down), &text)
		if want := fmt.Sprintf("instance %d (demo/up) of this plan", up); !strings.Contains(text, want) {
			t.Fatalf("downstream row %q lacks %q", text, want)
		}
		s.click(`#plan-apply`)
		s.until("the panel closed", `!document.querySelector('.planpanel')`)
	})
	for _, id := range []int64{up, down} {
		e.applied(id, "rerun")
		if iv, _ := e.succeeded(id, 60*time.Second); iv.count(map[int64]string{up: "a", down: "b"}[id]) != 2 {
			t.Fatalf("instance %d after the plan: %+v", id, iv.Tasks)
		}
	}
}
