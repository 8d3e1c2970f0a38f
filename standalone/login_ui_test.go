package standalone_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// byLabel is the CSS selector of the input a label with text names.
func (s *session) byLabel(text string) string {
	s.t.Helper()
	var id string
	s.until("the input labelled "+text, fmt.Sprintf(
		`!![...document.querySelectorAll('label')].find((l) => l.textContent.trim() === %s)?.htmlFor`, js(text)))
	s.eval(fmt.Sprintf(`[...document.querySelectorAll('label')].find((l) => l.textContent.trim() === %s).htmlFor`, js(text)), &id)
	return "#" + id
}

// clickButton clicks the visible button whose text is text.
func (s *session) clickButton(text string) {
	s.t.Helper()
	sel := fmt.Sprintf(`//button[normalize-space(.)=%s and not(ancestor-or-self::*[@hidden])]`, js(text))
	s.clickAt("click "+text, fmt.Sprintf(`document.evaluate(%s, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue`, js(sel)))
}

// TestUILoginForbiddenLogout: the UI without a session shows the login
// page; a user with view on the project logs in by the labelled form, sees
// their name in the user menu, is refused a stop with the API's 403 shown
// as an error, and logs out back to the login page, the session ended.
func TestUILoginForbiddenLogout(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	e.apply("name: slow\ntasks:\n  - name: a\n    command: 'sleep 120'\n")
	id := e.run("slow", nil)
	e.do("POST", "/api/v1/users", `{"name":"viv","password":"viv-password"}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/demo/grants/viv", `{"level":"view"}`, http.StatusOK, nil)
	t.Cleanup(func() {
		e.do("POST", fmt.Sprintf("/api/v1/instances/%d/actions", id), `{"action":"stop"}`, http.StatusAccepted, nil)
	})
	b := newBrowser(t, e.base, "")
	b.step(t, 60*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", id))
		// No session: the login page, nothing else.
		user, pass := s.byLabel("Username"), s.byLabel("Password")
		s.until("no navigation before login", `document.getElementById('nav').hidden`)
		// A wrong password is shown and lets nobody in.
		s.typeInto(user, "viv", false)
		s.typeInto(pass, "nope-nope", false)
		s.clickButton("Log in")
		s.until("the refusal", `document.querySelector('.login-error')?.textContent.includes('wrong username or password')`)
		s.retype(pass, "viv-password")
		s.clickButton("Log in")

		// Logged in: the user menu names viv, the asked-for page shows.
		s.until("the user menu", `document.getElementById('user-menu')?.textContent === 'viv'`)
		s.until("the instance running", `document.querySelector('h1 .badge')?.textContent === 'running'`)

		// A forbidden action: the API's 403 is shown as an error.
		s.until("Stop enabled", `!document.querySelector('button[data-action=stop]').disabled`)
		s.click(`button[data-action=stop]`)
		s.until("the confirm dialog", `!!document.querySelector('dialog.dialog button.ok')`)
		s.click(`dialog.dialog button.ok`)
		s.until("the refusal shown", `[...document.querySelectorAll('.flash.error')].some((f) => f.textContent.includes('needs operate on project "demo"'))`)

		// Log out: back to the login page, and the session is over.
		s.clickButton("viv")
		s.clickButton("Log out")
		s.byLabel("Username")
		s.until("no user menu", `!document.getElementById('user-menu')`)
		var status int
		s.run("me after logout", chromedp.Evaluate(`fetch('/api/v1/me').then((r) => r.status)`, &status,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
		if status != http.StatusUnauthorized {
			t.Fatalf("GET /api/v1/me after logout: %d, want 401", status)
		}
	})
	var iv struct{ State string }
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
	if iv.State != "running" {
		t.Fatalf("the refused stop changed the instance: %s", iv.State)
	}
}
