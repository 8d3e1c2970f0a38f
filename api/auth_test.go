package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestEveryRouteHasAccess: a route without an entry in access would be
// admin-only by default; say so explicitly instead.
func TestEveryRouteHasAccess(t *testing.T) {
	t.Parallel()
	for _, rt := range routes {
		if _, ok := access[rt.method+" "+rt.pattern]; !ok {
			t.Errorf("route %s %s has no entry in access", rt.method, rt.pattern)
		}
	}
}

// TestEveryRouteRefusesAnonymous walks the route table: every route but
// the open ones answers an anonymous call 401 with the error body.
func TestEveryRouteRefusesAnonymous(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	fill := strings.NewReplacer("{project}", "p", "{name}", "nightly_etl", "{id}", itoa(inst.ID), "{user}", "admin", "{trigger}", "gh")
	// The only routes open to anonymous callers, written out here rather
	// than read from access: a route opened there by mistake fails below.
	open := map[string]bool{"GET /healthz": true, "POST /api/v1/login": true, "GET /metrics": true, "POST /api/v1/hooks/{id}": true}
	checked := 0
	for _, rt := range routes {
		n := accessOf(rt)
		if (n.who == anyone || n.who == exempt) != open[rt.method+" "+rt.pattern] {
			t.Errorf("%s %s: open to anonymous callers is %v in access, want %v", rt.method, rt.pattern,
				n.who == anyone || n.who == exempt, open[rt.method+" "+rt.pattern])
		}
		path := fill.Replace(rt.pattern)
		body := ""
		if rt.method != "GET" && rt.method != "DELETE" {
			body = `{}`
		}
		r := b.as("", rt.method, path, body)
		if open[rt.method+" "+rt.pattern] {
			if r.status == http.StatusUnauthorized {
				t.Errorf("%s %s is open but answered 401", rt.method, path)
			}
			continue
		}
		checked++
		if r.status != http.StatusUnauthorized {
			t.Errorf("anonymous %s %s: status %d, want 401: %s", rt.method, path, r.status, r.body)
			continue
		}
		r.wantError(t, http.StatusUnauthorized, CodeUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: 401 without WWW-Authenticate", rt.method, path)
		}
		// A token nobody issued is no better.
		if r := b.as("blg_forged", rt.method, path, body); r.status != http.StatusUnauthorized {
			t.Errorf("forged token %s %s: status %d", rt.method, path, r.status)
		}
	}
	if checked < 40 {
		t.Fatalf("only %d routes checked", checked)
	}
	// Nothing changed: the run is alone, no project was made.
	var list InstanceList
	b.get("/api/v1/instances").want(t, http.StatusOK).json(t, &list)
	if list.Total != 1 {
		t.Fatalf("anonymous calls changed something: %d instances", list.Total)
	}
}

// TestProjectPermissions: a user with view on A and nothing on B, then
// operate and edit on A.
func TestProjectPermissions(t *testing.T) {
	t.Parallel()
	b := setup(t, options{logs: &fakeLogs{data: []byte("log of a\n")}})
	ctx := context.Background()
	b.mustWorkflow("a")
	b.mustWorkflow("b")
	instA, instB := b.mustRun("a", ""), b.mustRun("b", "")
	taskOf := func(inst Instance) int64 {
		ts := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning, Attempt: 1, Host: "w1:1"}}
		if err := b.store.TaskInsert(ctx, ts); err != nil {
			t.Fatal(err)
		}
		return ts[0].ID
	}
	taskA, taskB := taskOf(instA), taskOf(instB)
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/a/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)

	// Lists show only a.
	var ps List[Project]
	b.as(ann, "GET", "/api/v1/projects", "").want(t, http.StatusOK).json(t, &ps)
	if len(ps.Items) != 1 || ps.Items[0].Name != "a" {
		t.Fatalf("projects seen by ann: %+v", ps.Items)
	}
	var il InstanceList
	b.as(ann, "GET", "/api/v1/instances", "").want(t, http.StatusOK).json(t, &il)
	if il.Total != 1 || len(il.Items) != 1 || il.Items[0].ID != instA.ID {
		t.Fatalf("instances seen by ann: %+v", il)
	}
	b.as(ann, "GET", "/api/v1/instances?project=b", "").want(t, http.StatusOK).json(t, &il)
	if il.Total != 0 {
		t.Fatalf("ann sees b's instances: %+v", il)
	}

	// Reads: a is 200, b is 404 with the message a missing one has.
	for _, p := range []string{"/api/v1/projects/a", "/api/v1/projects/a/workflows", "/api/v1/projects/a/workflows/nightly_etl",
		"/api/v1/instances/" + itoa(instA.ID), "/api/v1/task-instances/" + itoa(taskA), "/api/v1/task-instances/" + itoa(taskA) + "/log"} {
		b.as(ann, "GET", p, "").want(t, http.StatusOK)
	}
	for _, p := range []string{"/api/v1/projects/b", "/api/v1/projects/b/workflows", "/api/v1/projects/b/workflows/nightly_etl",
		"/api/v1/instances/" + itoa(instB.ID), "/api/v1/task-instances/" + itoa(taskB), "/api/v1/task-instances/" + itoa(taskB) + "/log"} {
		b.as(ann, "GET", p, "").wantError(t, http.StatusNotFound, CodeNotFound)
	}
	missing := b.get("/api/v1/instances/999999").wantError(t, http.StatusNotFound, CodeNotFound)
	hidden := b.as(ann, "GET", "/api/v1/instances/"+itoa(instB.ID), "").wantError(t, http.StatusNotFound, CodeNotFound)
	if strings.Replace(missing.Message, "999999", itoa(instB.ID), 1) != hidden.Message {
		t.Fatalf("a hidden instance says %q, a missing one %q", hidden.Message, missing.Message)
	}

	// Actions: 403 on a (view only), 404 on b.
	stop := `{"action":"stop"}`
	e := b.as(ann, "POST", "/api/v1/instances/"+itoa(instA.ID)+"/actions", stop).wantError(t, http.StatusForbidden, CodeForbidden)
	if !strings.Contains(e.Message, "needs operate") || !strings.Contains(e.Message, "has view") {
		t.Fatalf("message %q", e.Message)
	}
	b.as(ann, "POST", "/api/v1/instances/"+itoa(instB.ID)+"/actions", stop).wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(ann, "POST", "/api/v1/task-instances/"+itoa(taskB)+"/actions", `{"action":"kill"}`).wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(ann, "POST", "/api/v1/projects/a/workflows/nightly_etl/runs", "").wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ann, "POST", "/api/v1/projects/b/workflows/nightly_etl/runs", "").wantError(t, http.StatusNotFound, CodeNotFound)

	// Operate: runs and actions, not edits.
	b.send("PUT", "/api/v1/projects/a/grants/ann", `{"level":"operate"}`).want(t, http.StatusOK)
	b.as(ann, "POST", "/api/v1/projects/a/workflows/nightly_etl/runs", "").want(t, http.StatusCreated)
	b.as(ann, "POST", "/api/v1/instances/"+itoa(instA.ID)+"/actions", stop).want(t, http.StatusAccepted)
	d := b.detail(instA.ID)
	if len(d.History) != 1 || d.History[0].By != "ann" {
		t.Fatalf("history does not name the authenticated user: %+v", d.History)
	}
	b.as(ann, "PUT", "/api/v1/projects/a/workflows/nightly_etl/schedule", `{"cron":"@daily"}`).wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ann, "DELETE", "/api/v1/projects/a/workflows/nightly_etl", "").wantError(t, http.StatusForbidden, CodeForbidden)

	// Edit: schedules and workflows; still no grants, no admin routes.
	b.send("PUT", "/api/v1/projects/a/grants/ann", `{"level":"edit"}`).want(t, http.StatusOK)
	b.as(ann, "PUT", "/api/v1/projects/a/workflows/nightly_etl/schedule", `{"cron":"@daily"}`).want(t, http.StatusCreated)
	b.as(ann, "PUT", "/api/v1/projects/a/grants/ann", `{"level":"owner"}`).wantError(t, http.StatusForbidden, CodeForbidden)
	for _, c := range [][3]string{{"PUT", "/api/v1/datasources/x", `{"type":"sqlite","database":"/tmp/x.db"}`}, {"GET", "/api/v1/users", ""}, {"GET", "/api/v1/audit", ""},
		{"POST", "/api/v1/task-groups", `{"name":"g","capacity":1}`}, {"POST", "/api/v1/users", `{"name":"x","password":"xxxxxxxxxx"}`}} {
		e := b.as(ann, c[0], c[1], c[2]).wantError(t, http.StatusForbidden, CodeForbidden)
		if !strings.Contains(e.Message, "for admins") {
			t.Fatalf("%s %s: message %q", c[0], c[1], e.Message)
		}
	}
	b.as(ann, "GET", "/api/v1/cluster", "").want(t, http.StatusNotImplemented) // allowed; this server has no view
	var scs List[Schedule]
	b.as(ann, "GET", "/api/v1/schedules", "").want(t, http.StatusOK).json(t, &scs)
	if len(scs.Items) != 1 {
		t.Fatalf("schedules seen by ann: %+v", scs.Items)
	}

	// A project ann makes is hers to grant; the admin sees it too.
	b.as(ann, "POST", "/api/v1/projects", `{"name":"mine"}`).want(t, http.StatusCreated)
	b.tokenOf("bo", model.RoleUser)
	b.as(ann, "PUT", "/api/v1/projects/mine/grants/bo", `{"level":"view"}`).want(t, http.StatusOK)
	var gs List[Grant]
	b.get("/api/v1/projects/mine/grants").want(t, http.StatusOK).json(t, &gs)
	if len(gs.Items) != 2 || gs.Items[0].User != "ann" || gs.Items[0].Level != "owner" || gs.Items[1].User != "bo" {
		t.Fatalf("grants %+v", gs.Items)
	}
	b.send("PUT", "/api/v1/projects/mine/grants/bo", `{"level":"boss"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)

	// A project's tenant is an OS user name.
	e = b.send("POST", "/api/v1/projects", `{"name":"t","tenant":"Root;x"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, `tenant "Root;x"`) {
		t.Fatalf("message %q", e.Message)
	}
	var p Project
	b.send("POST", "/api/v1/projects", `{"name":"t","tenant":"etl"}`).want(t, http.StatusCreated).json(t, &p)
	if p.Tenant != "etl" {
		t.Fatalf("project %+v", p)
	}
}

func TestLoginSessionsAndTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.send("POST", "/api/v1/users", `{"name":"cat","password":"cat-password"}`).want(t, http.StatusCreated)
	b.send("POST", "/api/v1/users", `{"name":"cat2","password":"short"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	b.send("POST", "/api/v1/users", `{"name":"cat3","password":"cat-password","role":"root"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)

	login := func(pw string) resp {
		return b.as("", "POST", "/api/v1/login", `{"username":"cat","password":"`+pw+`"}`)
	}
	login("wrong-password").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	r := login("cat-password").want(t, http.StatusOK)
	var lr LoginResponse
	r.json(t, &lr)
	if lr.Token == "" || lr.ExpiresAt.Before(time.Now().Add(SessionTTL-time.Minute)) {
		t.Fatalf("login %+v", lr)
	}
	cookie := r.header.Get("Set-Cookie")
	for _, want := range []string{SessionCookie + "=" + lr.Token, "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Fatalf("cookie %q lacks %q", cookie, want)
		}
	}
	var me Me
	b.as(lr.Token, "GET", "/api/v1/me", "").want(t, http.StatusOK).json(t, &me)
	if me.Username != "cat" || me.Role != "user" {
		t.Fatalf("me %+v", me)
	}
	// The cookie alone authenticates too.
	b.request("GET", "/api/v1/me", "", "", nil, "Authorization", "", "Cookie", SessionCookie+"="+lr.Token).want(t, http.StatusOK)

	// A personal token: shown once, listed without its secret, revocable.
	var nt NewToken
	b.as(lr.Token, "POST", "/api/v1/tokens", `{"name":"ci","expires_in":"11h"}`).want(t, http.StatusCreated).json(t, &nt)
	if nt.Secret == "" || nt.ID == 0 || nt.Name != "ci" {
		t.Fatalf("new token %+v", nt)
	}
	b.as(nt.Secret, "GET", "/api/v1/me", "").want(t, http.StatusOK)
	lst := b.as(lr.Token, "GET", "/api/v1/tokens", "").want(t, http.StatusOK)
	if strings.Contains(string(lst.body), nt.Secret) || !strings.Contains(string(lst.body), `"name":"ci"`) {
		t.Fatalf("token list %s", lst.body)
	}
	for _, bad := range []string{`{"name":"x"}`, `{"name":"","expires_in":"1h"}`, `{"name":"x","expires_in":"-1h"}`,
		`{"name":"x","expires_in":"10000h"}`, `{"name":"x","expires_in":"soon"}`} {
		b.as(lr.Token, "POST", "/api/v1/tokens", bad).wantError(t, http.StatusBadRequest, CodeBadRequest)
	}
	b.as(lr.Token, "DELETE", "/api/v1/tokens/"+itoa(nt.ID), "").want(t, http.StatusNoContent)
	b.as(nt.Secret, "GET", "/api/v1/me", "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	b.get("/api/v1/tokens/"+itoa(nt.ID)).want(t, http.StatusMethodNotAllowed)

	// An expired token is refused on its next call.
	u, err := b.store.UserGet(context.Background(), "cat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.TokenCreate(context.Background(), model.Token{UserID: u.ID, Kind: model.TokenPersonal, Name: "old",
		Hash: HashToken("blg_expired"), ExpiresAt: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	b.as("blg_expired", "GET", "/api/v1/me", "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)

	// Logout ends the session.
	r = b.as(lr.Token, "POST", "/api/v1/logout", "").want(t, http.StatusNoContent)
	if !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("logout cookie %q", r.header.Get("Set-Cookie"))
	}
	b.as(lr.Token, "GET", "/api/v1/me", "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)

	// A password change revokes every session and token at once.
	login("cat-password").want(t, http.StatusOK).json(t, &lr)
	b.as(lr.Token, "POST", "/api/v1/tokens", `{"name":"ci","expires_in":"1h"}`).want(t, http.StatusCreated).json(t, &nt)
	b.send("PATCH", "/api/v1/users/cat", `{"password":"new-cat-password"}`).want(t, http.StatusOK)
	b.as(lr.Token, "GET", "/api/v1/me", "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	b.as(nt.Secret, "GET", "/api/v1/me", "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	login("cat-password").wantError(t, http.StatusUnauthorized, CodeUnauthorized)

	// So does disabling the user; a disabled user cannot log in.
	login("new-cat-password").want(t, http.StatusOK).json(t, &lr)
	b.send("PATCH", "/api/v1/users/cat", `{"disabled":true}`).want(t, http.StatusOK)
	b.as(lr.Token, "GET", "/api/v1/me", "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	login("new-cat-password").wantError(t, http.StatusUnauthorized, CodeUnauthorized)

	// An admin cannot lock themselves out.
	b.send("PATCH", "/api/v1/users/admin", `{"disabled":true}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
}

// TestLoginRateLimit: guesses from one address hold that address back
// (429 with Retry-After), the right password from another address goes
// through at once, and the name's spellings share one count.
func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			loginRateLimit(t, setup(t, options{mariadb: db == "mariadb"}))
		})
	}
}

func loginRateLimit(t *testing.T, b *bundle) {
	b.send("POST", "/api/v1/users", `{"name":"dan","password":"dan-password"}`).want(t, http.StatusCreated)
	// Each spelling counts against the one name "dan".
	for i, name := range []string{"dan", "Dan", "DAN ", " dan  ", "dAn"} {
		b.as("", "POST", "/api/v1/login", `{"username":"`+name+`","password":"guess-`+strconv.Itoa(i)+`"}`).
			wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	}
	// From this address even the right password waits now.
	r := b.as("", "POST", "/api/v1/login", `{"username":"DAN","password":"dan-password"}`)
	r.wantError(t, http.StatusTooManyRequests, CodeTooManyRequests)
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > int(loginMaxBackoff.Seconds()) {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// From another address the right password logs in at once.
	other := b.from("127.0.0.2")
	if r := other.as("", "POST", "/api/v1/login", `{"username":"dan","password":"dan-password"}`); r.status != http.StatusOK {
		t.Fatalf("the right password from another address: %d %s", r.status, r.body)
	}
	// Another user is not held up by dan's guesses.
	b.send("POST", "/api/v1/users", `{"name":"eve","password":"eve-password"}`).want(t, http.StatusCreated)
	b.as("", "POST", "/api/v1/login", `{"username":"eve","password":"eve-password"}`).want(t, http.StatusOK)
}

func TestLoginBackoff(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		fails int
		at    time.Duration
		want  time.Duration
	}{
		{0, 0, 0},
		{4, 0, 0},                            // free
		{5, 0, time.Second},                  // the first wait
		{7, time.Second, 3 * time.Second},    // 4 s after the 7th
		{20, time.Minute, 14 * time.Minute},  // capped at 15 min
		{200, time.Minute, 14 * time.Minute}, // no overflow
		{9, 16 * time.Second, 0},             // waited out
		{30, loginForget, 0},                 // forgotten
	} {
		if got := backoff(failures{n: c.fails, last: t0}, loginFreeFails, loginMaxBackoff, t0.Add(c.at)); got != c.want {
			t.Errorf("%d fails at +%v: %v, want %v", c.fails, c.at, got, c.want)
		}
	}
	if d := nameSlow(failures{n: loginNameSlowAfter, last: t0}, t0.Add(time.Minute)); d != loginNameSlow {
		t.Errorf("a guessed name is slowed by %v, want %v", d, loginNameSlow)
	}
	if d := nameSlow(failures{n: loginNameSlowAfter, last: t0}, t0.Add(loginNameWindow)); d != 0 {
		t.Errorf("after its window a name is slowed by %v", d)
	}
}

// TestLoginLockoutIsPerAddress: the limiter never holds a name from an
// address that has not failed; many names' guesses from one address hold
// that address.
func TestLoginLockoutIsPerAddress(t *testing.T) {
	t.Parallel()
	l := newLoginLimiter()
	for i := 0; i < 50; i++ {
		l.fail("admin", "198.51.100."+strconv.Itoa(i%3))
	}
	if wait, slow := l.check("admin", "203.0.113.9"); wait != 0 || slow != loginNameSlow {
		t.Fatalf("a new address for a guessed name: wait %v, slowed %v; want 0 and %v", wait, slow, loginNameSlow)
	}
	if wait, _ := l.check("admin", "198.51.100.1"); wait == 0 {
		t.Fatal("a guessing address is not held")
	}
	for i := 0; i < loginFreeFailsAddr; i++ {
		l.fail("user"+strconv.Itoa(i), "192.0.2.7")
	}
	if wait, _ := l.check("someone", "192.0.2.7"); wait == 0 {
		t.Fatal("an address spraying names is not held")
	}
}

// TestLoginKeysBounded: one failure each from very many addresses does
// not grow the limiter without bound, and a pair that is held stays held.
func TestLoginKeysBounded(t *testing.T) {
	t.Parallel()
	l := newLoginLimiter()
	t0 := time.Now()
	l.now = func() time.Time { return t0 } // the held pair's 1 s must not pass under -race
	for range loginFreeFails {
		l.fail("admin", "192.0.2.1")
	}
	for i := range 3 * loginKeysMax {
		l.fail("admin", "10."+strconv.Itoa(i>>16)+"."+strconv.Itoa(i>>8&255)+"."+strconv.Itoa(i&255))
	}
	if n := len(l.keys); n > loginKeysMax+3 {
		t.Fatalf("%d keys kept, want at most about %d", n, loginKeysMax)
	}
	if wait, _ := l.check("admin", "192.0.2.1"); wait == 0 {
		t.Fatal("a held pair was dropped")
	}
}

// TestLoginComparesAreBounded: with every compare slot taken, a login's
// compare does not run (its request answers 429) rather than queueing
// bcrypt work without end.
func TestLoginComparesAreBounded(t *testing.T) {
	t.Parallel()
	l := newLoginLimiter()
	l.wait = 20 * time.Millisecond
	release := make(chan struct{})
	held := make(chan struct{}, loginCompares)
	for i := 0; i < loginCompares; i++ {
		go l.compare(context.Background(), func() { held <- struct{}{}; <-release })
	}
	for i := 0; i < loginCompares; i++ {
		<-held
	}
	ran := false
	if l.compare(context.Background(), func() { ran = true }) || ran {
		t.Fatal("a compare ran over the bound")
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for !l.compare(context.Background(), func() { ran = true }) {
		if time.Now().After(deadline) {
			t.Fatal("no compare slot came free")
		}
	}
	if !ran {
		t.Fatal("the compare did not run")
	}
}

func TestAuditTrail(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	b.action("/api/v1/instances/"+itoa(inst.ID)+"/actions", `{"action":"stop"}`, "").want(t, http.StatusAccepted)
	fin := b.tokenOf("fin", model.RoleUser)
	b.as(fin, "DELETE", "/api/v1/projects/p/workflows/nightly_etl", "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.as("", "POST", "/api/v1/login", `{"username":"fin","password":"nope-nope"}`).want(t, http.StatusUnauthorized)

	var all List[AuditEntry]
	b.get("/api/v1/audit").want(t, http.StatusOK).json(t, &all)
	want := []struct{ user, action, resource string }{
		{"fin", "POST /api/v1/login", "/api/v1/login"},
		{"fin", "DELETE /api/v1/projects/{project}/workflows/{name}", "/api/v1/projects/p/workflows/nightly_etl"},
		{"admin", "POST /api/v1/instances/{id}/actions", "/api/v1/instances/" + itoa(inst.ID) + "/actions"},
		{"admin", "POST /api/v1/projects/{project}/workflows/{name}/runs", "/api/v1/projects/p/workflows/nightly_etl/runs"},
		{"admin", "PUT /api/v1/projects/{project}/workflows/{name}", "/api/v1/projects/p/workflows/nightly_etl"},
		{"admin", "POST /api/v1/projects", "/api/v1/projects"},
	}
	if len(all.Items) != len(want) {
		t.Fatalf("audit %+v", all.Items)
	}
	for i, w := range want {
		e := all.Items[i]
		if e.User != w.user || e.Action != w.action || e.Resource != w.resource || e.Address != "127.0.0.1" || e.At.IsZero() {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	if e := all.Items[0]; e.Status != 401 || !strings.Contains(e.Outcome, "wrong username or password") {
		t.Errorf("failed login entry %+v", e)
	}
	if e := all.Items[1]; e.Status != 404 || !strings.Contains(e.Outcome, "not found") {
		t.Errorf("refused entry %+v", e)
	}
	if e := all.Items[2]; e.Status != 202 || e.Outcome != "ok" {
		t.Errorf("action entry %+v", e)
	}
	// Filters.
	var some List[AuditEntry]
	b.get("/api/v1/audit?user=fin").want(t, http.StatusOK).json(t, &some)
	if len(some.Items) != 2 {
		t.Fatalf("user filter %+v", some.Items)
	}
	b.get("/api/v1/audit?action=POST+/api/v1/projects&limit=5").want(t, http.StatusOK).json(t, &some)
	if len(some.Items) != 1 || some.Items[0].Resource != "/api/v1/projects" {
		t.Fatalf("action filter %+v", some.Items)
	}
	b.get("/api/v1/audit?resource=/api/v1/instances/").want(t, http.StatusOK).json(t, &some)
	if len(some.Items) != 1 {
		t.Fatalf("resource filter %+v", some.Items)
	}
	b.get("/api/v1/audit?before="+itoa(all.Items[4].ID)).want(t, http.StatusOK).json(t, &some)
	if len(some.Items) != 1 {
		t.Fatalf("paging %+v", some.Items)
	}
	b.get("/api/v1/audit?since=yesterday").wantError(t, http.StatusBadRequest, CodeBadRequest)
	// Reads are not audited: the list is as long as before.
	b.get("/api/v1/audit").want(t, http.StatusOK).json(t, &all)
	if len(all.Items) != len(want) {
		t.Fatalf("reads were audited: %+v", all.Items)
	}
}

func TestBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	open := func() *store.Store {
		st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "b.db"), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if _, err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return st
	}
	// No password given: a random one in <data dir>/admin-password, 0600.
	st, dir := open(), t.TempDir()
	note, err := Bootstrap(ctx, st, "", dir, nil)
	if err != nil || !strings.Contains(note, AdminPasswordFile(dir)) {
		t.Fatalf("note %q, err %v", note, err)
	}
	fi, err := os.Stat(AdminPasswordFile(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file %v %v", fi, err)
	}
	pw, _ := os.ReadFile(AdminPasswordFile(dir))
	u, err := st.UserGet(ctx, "admin")
	if err != nil || u.Role != model.RoleAdmin || u.PasswordHash == strings.TrimSpace(string(pw)) {
		t.Fatalf("admin %+v %v", u, err)
	}
	// Users exist: nothing happens.
	if note, err := Bootstrap(ctx, st, "other-password", dir, nil); note != "" || err != nil {
		t.Fatalf("second bootstrap %q %v", note, err)
	}
	// A given password is used, and must be a valid one.
	st2 := open()
	if _, err := Bootstrap(ctx, st2, "short", t.TempDir(), nil); err == nil {
		t.Fatal("a short admin password was taken")
	}
	if _, err := Bootstrap(ctx, st2, "given-password", t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(Deps{Store: st2}))
	t.Cleanup(srv.Close)
	res, err := http.Post(srv.URL+"/api/v1/login", "application/json", strings.NewReader(`{"username":"admin","password":"given-password"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("login with the given password: %d", res.StatusCode)
	}
}
