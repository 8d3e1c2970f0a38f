package standalone_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestUIPlanPreview: Rerun on the instance page previews the plan first
// (no action sent); the downstream choice adds the run that waits on this
// one; Apply runs exactly the plan's runs.
func TestUIPlanPreview(t *testing.T) {
	t.Parallel()
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

// TestUIBackfillPlan: the backfill form's "Preview plan" shows one new run
// per time typed (keys at a human pace); the downstream choice adds the
// other project's runs that wait on them; Apply starts the backfill of
// exactly those times and opens it.
func TestUIBackfillPlan(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	e.apply("name: days\ntasks:\n  - {name: a, command: 'true'}\n")
	e.do("POST", "/api/v1/projects", `{"name":"crm"}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/crm/workflows/report", `name: report
tasks:
  - {name: wait, type: dependent, wait_for: [{project: demo, workflow: days, date: today}], check_interval: 1s}
  - {name: r1, command: "true", depends_on: [wait]}
`, http.StatusCreated, nil)
	// One report a day, recorded without running, for the three days.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	rng := fmt.Sprintf(`"start":%q,"end":%q,"cron":"0 2 * * *"`, today.AddDate(0, 0, -4).Format(time.RFC3339), today.AddDate(0, 0, -2).Add(3*time.Hour).Format(time.RFC3339))
	var rb struct {
		ID int64 `json:"id"`
	}
	e.do("POST", "/api/v1/projects/crm/workflows/report/backfill", `{`+rng+`,"parallelism":3,"dry_run":true}`, http.StatusCreated, &rb)
	e.backfillDone(rb.ID)

	b := newBrowser(t, e.base, e.sessionToken())
	var bfID int64
	b.step(t, 2*time.Minute, func(s *session) {
		s.open("#/workflows/demo/days")
		s.until("the backfill form", `!!document.querySelector('#backfill-cron')`)
		var r struct{ From, To string }
		s.run("the range in the browser's zone", chromedp.Evaluate(`Promise.resolve(window.belugaTest).then(m => {
			const n = new Date();
			const at = (days, hour, sec) => m.localInput(new Date(Date.UTC(n.getUTCFullYear(), n.getUTCMonth(), n.getUTCDate() - days, hour, 0, sec)));
			return {From: at(4, 1, 30), To: at(2, 3, 0)};
		})`, &r, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
		s.typeDateTime(`#backfill-from`, r.From)
		s.typeDateTime(`#backfill-to`, r.To)
		s.typeInto(`#backfill-cron`, "0 2 * * *", true)
		s.click(`#backfill-plan`)
		s.until("three new runs planned", `document.querySelectorAll('.planpanel tr[data-new]').length === 3 && document.querySelectorAll('.planpanel tr[data-instance]').length === 3`)
		s.choose(`#plan-downstream`, "direct")
		s.until("the reports planned", `document.querySelectorAll('.planpanel tr[data-instance]').length === 6 && !document.querySelector('#plan-apply').disabled`)
		var rows []string
		s.eval(`[...document.querySelectorAll('.planpanel tr[data-instance]:not([data-new])')].map(r => r.textContent)`, &rows)
		for _, row := range rows {
			if !strings.Contains(row, "crm/report") || !strings.Contains(row, "of this plan") {
				t.Fatalf("a downstream row %q", row)
			}
		}
		s.axe()
		s.click(`#plan-apply`)
		s.until("the backfill page", `/^#\/backfills\/\d+$/.test(location.hash)`)
		var hash string
		s.eval(`location.hash`, &hash)
		fmt.Sscanf(hash, "#/backfills/%d", &bfID)
	})
	var bf struct {
		Times []time.Time `json:"times"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/backfills/%d", bfID), "", http.StatusOK, &bf)
	if len(bf.Times) != 3 {
		t.Fatalf("backfill times %v", bf.Times)
	}
	for i, at := range bf.Times {
		if want := today.AddDate(0, 0, i-4).Add(2 * time.Hour); !at.Equal(want) {
			t.Fatalf("time %d: %s, want %s", i, at, want)
		}
	}
	e.backfillDone(bfID)
}
