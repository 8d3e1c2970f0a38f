package standalone_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// loginAs logs name in by the API and returns the session token.
func (e *env) loginAs(name, password string) string {
	e.t.Helper()
	body, _ := json.Marshal(map[string]string{"username": name, "password": password})
	resp, err := http.Post(e.base+"/api/v1/login", "application/json", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("login as %s: %d %v", name, resp.StatusCode, err)
	}
	return out.Token
}

// statusWith is the status of GET path with the bearer token.
func statusWith(t *testing.T, base, path, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestUIAdminPages: an admin creates a user, changes their role, disables
// and enables them and sets their password; grants them a project and
// revokes it; makes a personal token, shown once, that works until revoked
// from the list; filters the audit log. A plain user sees no admin entries.
func TestUIAdminPages(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	type user struct {
		Name     string
		Role     string
		Disabled bool
	}
	getUser := func(name string) user {
		var u user
		e.do("GET", "/api/v1/users/"+name, "", http.StatusOK, &u)
		return u
	}
	b.step(t, 60*time.Second, func(s *session) {
		s.open("#/admin/users")
		s.until("the admin entries shown", `['users', 'grants', 'audit', 'tokens'].every((n) => !document.querySelector('#nav a[data-nav=' + n + ']').hidden)`)
		s.until("the user list", `!!document.querySelector('table.userlist tr[data-user=admin]')`)
		s.axe()
		s.retype(s.byLabel("Name"), "bo")
		s.retype(s.byLabel("Password"), "bo-password-1")
		s.clickButton("Create user")
		s.until("bo listed", `!!document.querySelector('table.userlist tr[data-user=bo]')`)
		if u := getUser("bo"); u.Role != "user" || u.Disabled {
			t.Fatalf("created %+v", u)
		}
		// A duplicate is the API's error beside the form.
		s.retype(s.byLabel("Name"), "bo")
		s.retype(s.byLabel("Password"), "bo-password-1")
		s.clickButton("Create user")
		s.until("the duplicate refused", `document.querySelector('#create-user .apierror')?.textContent.includes('bo')`)

		s.choose(`#role-bo`, "admin")
		s.until("bo an admin", `document.querySelector('#role-bo').value === 'admin' && [...document.querySelectorAll('.flash.ok')].some((f) => f.textContent.includes('role admin'))`)
		if u := getUser("bo"); u.Role != "admin" {
			t.Fatalf("after the role change %+v", u)
		}
		s.choose(`#role-bo`, "user")
		s.until("bo a user again", `[...document.querySelectorAll('.flash.ok')].some((f) => f.textContent.includes('role user'))`)
		s.click(`tr[data-user=bo] button[data-act=disable]`)
		s.until("bo disabled", `document.querySelector('tr[data-user=bo]')?.dataset.disabled === 'yes'`)
		if u := getUser("bo"); !u.Disabled || u.Role != "user" {
			t.Fatalf("after disable %+v", u)
		}
		s.click(`tr[data-user=bo] button[data-act=disable]`)
		s.until("bo enabled", `document.querySelector('tr[data-user=bo]')?.dataset.disabled === 'no'`)
		s.click(`tr[data-user=bo] button[data-act=password]`)
		s.retype(`#password-bo`, "bo-password-2")
		s.clickButton("Save password")
		s.until("the password saved", `[...document.querySelectorAll('.flash.ok')].some((f) => f.textContent.includes('password changed'))`)
	})
	bo := e.loginAs("bo", "bo-password-2")

	b.step(t, 30*time.Second, func(s *session) {
		s.open("#/admin/grants/demo")
		s.until("the grant form", `!!document.querySelector('#grant-form')`)
		s.retype(`#grant-user`, "bo")
		s.choose(`#grant-level`, "operate")
		s.clickButton("Grant")
		s.until("bo's grant listed", `document.querySelector('table.grantlist tr[data-user=bo]')?.dataset.level === 'operate'`)
		if st := statusWith(t, e.base, "/api/v1/projects/demo", bo); st != http.StatusOK {
			t.Fatalf("bo with operate on demo: GET project %d", st)
		}
		s.click(`table.grantlist tr[data-user=bo] button`)
		s.until("the grant gone", `!document.querySelector('table.grantlist tr[data-user=bo]')`)
		if st := statusWith(t, e.base, "/api/v1/projects/demo", bo); st != http.StatusNotFound && st != http.StatusForbidden {
			t.Fatalf("bo after the revoke: GET project %d", st)
		}
	})

	var secret string
	b.step(t, 30*time.Second, func(s *session) {
		s.open("#/tokens")
		s.until("the token form", `!!document.querySelector('#create-token')`)
		s.retype(s.byLabel("Token name"), "ci")
		s.retype(s.byLabel("Expires in"), "24h") // longer than the session: made with the password
		s.retype(s.byLabel("Your password"), e.adminPassword())
		s.clickButton("Create token")
		s.until("the secret shown once", `document.querySelector('#token-secret')?.textContent.length > 10 && !!document.querySelector('table.tokenlist tr[data-token=ci]')`)
		s.eval(`document.querySelector('#token-secret').textContent`, &secret)
		var listed string
		s.eval(`document.querySelector('table.tokenlist').textContent`, &listed)
		if strings.Contains(listed, secret) {
			t.Fatal("the token list shows the secret")
		}
		if st := statusWith(t, e.base, "/api/v1/me", secret); st != http.StatusOK {
			t.Fatalf("the new token: GET /me %d", st)
		}
		s.click(`table.tokenlist tr[data-token=ci] button`)
		s.until("the token gone", `!document.querySelector('table.tokenlist tr[data-token=ci]')`)
		if st := statusWith(t, e.base, "/api/v1/me", secret); st != http.StatusUnauthorized {
			t.Fatalf("the revoked token: GET /me %d", st)
		}
	})

	b.step(t, 30*time.Second, func(s *session) {
		s.open("#/admin/audit")
		s.until("audit rows", `document.querySelectorAll('table.auditlist tr[data-id]').length > 3`)
		s.retype(s.byLabel("Action"), "POST /api/v1/users")
		s.clickButton("Filter")
		s.until("only the user creations", `(() => {
			const rows = [...document.querySelectorAll('table.auditlist tr[data-id]')];
			return rows.length >= 1 && rows.every((r) => r.dataset.user === 'admin' && r.textContent.includes('POST /api/v1/users')) &&
				rows.some((r) => r.querySelector('td.num')?.textContent === '201');
		})()`)
	})

	// A plain user: no admin entries, tokens offered.
	nb := newBrowser(t, e.base, bo)
	nb.step(t, 30*time.Second, func(s *session) {
		s.open("#/instances")
		s.until("bo's menu", `document.querySelector('#user-menu')?.textContent === 'bo'`)
		s.until("no admin entries", `['users', 'grants', 'audit'].every((n) => document.querySelector('#nav a[data-nav=' + n + ']').hidden) &&
			!document.querySelector('#nav a[data-nav=tokens]').hidden`)
	})
}

// TestUISchedulePreview: the schedule form lists the next fire times of the
// cron as it is typed, on the schedule zone's clock, and names a bad cron
// or zone, before anything is saved.
func TestUISchedulePreview(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	e.apply("name: nightly\ntasks:\n  - {name: a, command: \"true\"}\n")
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 30*time.Second, func(s *session) {
		s.open("#/workflows/demo/nightly")
		s.until("the schedule panel", `!!document.querySelector('#schedule-set')`)
		s.click(`#schedule-set`)
		s.until("the schedule form", `!!document.querySelector('#schedule-cron')`)
		s.retype(`#schedule-cron`, "30 2 * * *")
		s.retype(`#schedule-tz`, "Asia/Tokyo")
		s.until("five fire times at 02:30 Tokyo", `(() => {
			const ol = document.querySelector('#schedule-preview ol.preview');
			if (!ol || ol.dataset.cron !== '30 2 * * *' || ol.dataset.zone !== 'Asia/Tokyo') return false;
			const li = [...ol.querySelectorAll('li')];
			return li.length === 5 && li.every((x) => / 02:30:00$/.test(x.querySelector('time').textContent) && x.textContent.includes('Asia/Tokyo'));
		})()`)
		// The times are the API's: 02:30 in Tokyo is 17:30 UTC.
		var iso string
		s.eval(`document.querySelector('#schedule-preview li time').getAttribute('datetime')`, &iso)
		if tm, err := time.Parse(time.RFC3339, iso); err != nil || tm.UTC().Hour() != 17 || tm.UTC().Minute() != 30 {
			t.Fatalf("first fire %q (%v), want 17:30 UTC", iso, err)
		}
		s.retype(`#schedule-cron`, "61 * * * *")
		s.until("the bad cron named", `document.querySelector('#schedule-preview .preview-error')?.textContent.includes('61 * * * *')`)
		s.retype(`#schedule-cron`, "@daily")
		s.retype(`#schedule-tz`, "Mars/Olympus")
		s.until("the bad zone named", `document.querySelector('#schedule-preview .preview-error')?.textContent.includes('Mars/Olympus')`)
	})
	var sc struct{ Error any }
	e.do("GET", "/api/v1/projects/demo/workflows/nightly/schedule", "", http.StatusNotFound, &sc)
}
