package standalone_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestWebUIPromotion: ann asks, from the promotions page, to promote
// demo/etl into prod (typing the form); the request's page shows the diff
// and no review buttons to her, its author. rob, with approve on prod,
// opens it, types a comment and approves with the mouse: prod gets the
// version. A direct edit of prod's etl then shows as drift on the page.
func TestWebUIPromotion(t *testing.T) {
	e := start(t, "")
	etl := func(v string) string {
		return fmt.Sprintf("name: etl\ntasks:\n  - {name: load, command: \"echo %s\"}\n", v)
	}
	e.do("POST", "/api/v1/projects", `{"name":"prod"}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/prod/workflows/etl", etl("prod-v1"), http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/prod/promotion", `{"source_project":"demo","require_review":true}`, http.StatusOK, nil)
	e.apply(etl("dev-v2"))
	ann, rob := e.as("ann", "user"), e.as("rob", "user")
	for _, g := range []struct{ project, user, level string }{{"demo", "ann", "edit"}, {"prod", "ann", "view"}, {"prod", "rob", "approve"}} {
		e.do("PUT", "/api/v1/projects/"+g.project+"/grants/"+g.user, `{"level":"`+g.level+`"}`, http.StatusOK, nil)
	}

	b := newBrowser(t, e.base, ann.token)
	b.step(t, 120*time.Second, func(s *session) {
		s.open("#/promotions/prod")
		s.until("the promote form, the source from the gate", `document.querySelector('#pr-source')?.value === 'demo' && `+
			`document.querySelector('#promotion-gate')?.textContent.includes('Review required')`)
		s.axe()
		s.retype(`#pr-source`, "demo")
		s.retype(`#pr-workflow`, "etl")
		s.retype(`#pr-message`, "ship dev-v2")
		s.click(`#pr-submit`)
		s.until("the request's page with its diff", `location.hash === '#/promotions/prod/1' && `+
			`document.querySelector('#request-spec-diff')?.textContent.includes('dev-v2') && `+
			`document.querySelector('#request-message')?.textContent === 'ship dev-v2'`)
		s.until("no review for the author", `!document.querySelector('#rv-approve') && !!document.querySelector('#no-review')`)
		s.axe()
	})

	rb := newBrowser(t, e.base, rob.token)
	rb.step(t, 120*time.Second, func(s *session) {
		s.open("#/promotions/prod/1")
		s.until("the review buttons for rob", `!!document.querySelector('#rv-approve') && !!document.querySelector('#rv-reject')`)
		s.axe()
		s.retype(`#rv-comment`, "looks right")
		s.click(`#rv-approve`)
		s.until("the request applied as version 2", `document.querySelector('#request-applied')?.textContent.includes('version 2') && `+
			`document.querySelector('#request-reviewer')?.textContent.includes('looks right') && !document.querySelector('#rv-approve')`)
	})
	var def struct {
		Version int `json:"version"`
	}
	e.do("GET", "/api/v1/projects/prod/workflows/etl", "", http.StatusOK, &def)
	if def.Version != 2 {
		t.Fatalf("prod's etl after the approval: version %d, want 2", def.Version)
	}

	e.do("PUT", "/api/v1/projects/prod/workflows/etl", etl("prod-hotfix"), http.StatusCreated, nil)
	rb.step(t, 90*time.Second, func(s *session) {
		s.open("#/promotions/prod")
		s.until("the drift badge on etl", `document.querySelector('[data-drift="etl"] .drift-badge')?.textContent === 'drift' && `+
			`document.querySelector('[data-drift="etl"]').textContent.includes('version 3')`)
		s.axe()
		s.open("#/workflows/prod/etl")
		s.until("the drift badge on the workflow's page", `document.querySelector('#drift-badge')?.textContent === 'drift'`)
	})
}
