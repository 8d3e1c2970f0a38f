package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

const gitETL = `description: extract and load
params:
  day: "$[yyyyMMdd-1]"
tasks:
  - name: extract
    command: echo extract ${day}
  - name: load
    command: echo load
    depends_on: [extract]
`

const gitReport = `name: report
tasks:
  - name: send
    command: echo report
`

// gitVersion is the latest version of workflow name in project p.
func gitVersion(t *testing.T, b *bundle, p, name string) int {
	t.Helper()
	var w Workflow
	b.get("/api/v1/projects/"+p+"/workflows/"+name).want(t, http.StatusOK).json(t, &w)
	return w.Version
}

func gitState(t *testing.T, b *bundle, p string) GitBinding {
	t.Helper()
	var g GitBinding
	b.get("/api/v1/projects/"+p+"/git").want(t, http.StatusOK).json(t, &g)
	return g
}

// TestGitSyncAllOrNothing: a real bare repository made with the git
// binary; a commit syncs in with the commit named; a second commit with
// one bad file changes nothing and names the file (answer, binding state,
// event); a secret in clear and a datasource the store refuses inside the
// transaction change nothing either; the fixed commit applies.
func TestGitSyncAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	ctx := context.Background()
	b.mustProject("p")
	repo := gittest.New(t)
	c1 := repo.Commit("main", "first", map[string]string{
		"beluga/workflows/etl.yaml":   gitETL,
		"beluga/workflows/report.yml": gitReport,
		"beluga/workflows/README.md":  "not a workflow\n",
		"elsewhere/workflows/x.yaml":  "not: [read",
	})
	var g GitBinding
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`","branch":"main","dir":"beluga/"}`).
		want(t, http.StatusCreated).json(t, &g)
	if g.URL != repo.Bare || g.Dir != "beluga" || g.BoundBy != "admin" || g.LastCommit != "" || g.PasswordSet {
		t.Fatalf("binding %+v", g)
	}

	var res GitSyncResult
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &res)
	if res.Commit != c1 || len(res.Workflows) != 2 || res.Workflows[0].Workflow != "etl" || res.Workflows[0].File != "beluga/workflows/etl.yaml" ||
		res.Workflows[1].Workflow != "report" || !res.Workflows[0].Created || res.Workflows[0].Version != 1 {
		t.Fatalf("sync %+v, want commit %s with etl and report", res, c1)
	}
	if g := gitState(t, b, "p"); g.LastCommit != c1 || g.LastAttemptCommit != c1 || g.LastError != "" || g.LastSyncedAt == nil {
		t.Fatalf("state after the first sync %+v", g)
	}
	// The same commit again: no new versions.
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &res)
	if res.Workflows[0].Created || res.Workflows[1].Created || gitVersion(t, b, "p", "etl") != 1 {
		t.Fatalf("a second sync of the same commit made versions: %+v", res)
	}

	// One bad file among good changes: nothing changes.
	changed := strings.Replace(gitETL, "extract and load", "extract, then load", 1)
	c2 := repo.Commit("main", "second", map[string]string{
		"beluga/workflows/etl.yaml": changed,
		"beluga/workflows/bad.yaml": "tasks:\n  - name: a\n    command: echo a\n    depends_on: [nowhere]\n",
	})
	e := b.send("POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "beluga/workflows/bad.yaml") || !strings.Contains(e.Message, "nowhere") || !strings.Contains(e.Message, c2[:12]) {
		t.Fatalf("refusal %q does not name the commit, the file and the reason", e.Message)
	}
	if v := gitVersion(t, b, "p", "etl"); v != 1 {
		t.Fatalf("etl is at version %d after a refused commit, want 1", v)
	}
	b.get("/api/v1/projects/p/workflows/bad").wantError(t, http.StatusNotFound, CodeNotFound)
	g = gitState(t, b, "p")
	if g.LastCommit != c1 || g.LastAttemptCommit != c2 || g.LastErrorFile != "beluga/workflows/bad.yaml" || !strings.Contains(g.LastError, "nowhere") {
		t.Fatalf("state after the refused commit %+v", g)
	}
	evs, err := b.store.EventList(ctx, 0, model.EventFilter{Kinds: []string{model.EventGitSync}}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].State != "synced" || evs[2].State != "refused" || evs[2].Project != "p" {
		t.Fatalf("git_sync events %+v", evs)
	}
	var detail map[string]any
	if err := json.Unmarshal(evs[2].Detail, &detail); err != nil || detail["file"] != "beluga/workflows/bad.yaml" || detail["commit"] != c2 {
		t.Fatalf("refused event detail %s (%v)", evs[2].Detail, err)
	}

	// A spec naming another workflow than its file: refused, saying so.
	repo.Commit("main", "misnamed", map[string]string{"beluga/workflows/bad.yaml": "", "beluga/workflows/etl.yaml": "name: other\n" + changed})
	e = b.send("POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, `the spec names workflow "other" but the file name names "etl"`) {
		t.Fatalf("refusal %q", e.Message)
	}

	// A secret in clear, marked or named like one: refused.
	secretly := changed + "secret_params: [db_password]\n"
	for _, c := range []struct{ spec, want string }{
		{strings.Replace(secretly, "params:\n", "params:\n  db_password: hunter2\n", 1), `"db_password" is secret but has a value in clear`},
		{strings.Replace(changed, "params:\n", "params:\n  api_token: abc123\n", 1), `"api_token" looks like a secret`},
	} {
		repo.Commit("main", "secret", map[string]string{"beluga/workflows/bad.yaml": "", "beluga/workflows/etl.yaml": c.spec})
		e := b.send("POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, "beluga/workflows/etl.yaml") || !strings.Contains(e.Message, c.want) {
			t.Fatalf("refusal %q, want the file and %s", e.Message, c.want)
		}
		if strings.Contains(e.Message, "hunter2") || strings.Contains(e.Message, "abc123") {
			t.Fatalf("the refusal repeats the secret: %q", e.Message)
		}
		if v := gitVersion(t, b, "p", "etl"); v != 1 {
			t.Fatalf("etl is at version %d after a refused secret, want 1", v)
		}
	}

	// The store refuses the last file inside the transaction (an unknown
	// datasource): the files before it, applied in it, are rolled back.
	repo.Commit("main", "datasource", map[string]string{
		"beluga/workflows/etl.yaml": changed,
		"beluga/workflows/zz.yaml":  "tasks:\n  - name: q\n    type: sql\n    datasource: nowhere_db\n    sql: select 1\n",
	})
	e = b.send("POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "beluga/workflows/zz.yaml") || !strings.Contains(e.Message, "nowhere_db") {
		t.Fatalf("refusal %q", e.Message)
	}
	if v := gitVersion(t, b, "p", "etl"); v != 1 {
		t.Fatalf("etl is at version %d after a rolled-back commit, want 1", v)
	}

	// The secret's value is set in Beluga (an apply through the API);
	// the fixed commit names it only (the mask keeps the stored value),
	// and the bad file is gone.
	withValue := strings.Replace(secretly, "params:\n", "params:\n  db_password: hunter2\n", 1)
	b.putSpec("p", "etl", "application/yaml", withValue).want(t, http.StatusCreated)
	c5 := repo.Commit("main", "fixed", map[string]string{"beluga/workflows/zz.yaml": "",
		"beluga/workflows/etl.yaml": strings.Replace(secretly, "params:\n", "params:\n  db_password: \"***\"\n", 1)})
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &res)
	if res.Commit != c5 || gitVersion(t, b, "p", "etl") != 2 || gitVersion(t, b, "p", "report") != 1 {
		t.Fatalf("sync of the fixed commit %+v", res)
	}
	if def, err := b.store.WorkflowGet(ctx, "p", "etl", 0); err != nil || !strings.Contains(string(def.SpecJSON), "beluga:sealed:") {
		t.Fatalf("the stored secret is not the sealed value kept: %s (%v)", def.SpecJSON, err)
	}
	if g := gitState(t, b, "p"); g.LastCommit != c5 || g.LastError != "" || g.LastErrorFile != "" {
		t.Fatalf("state after the fixed commit %+v", g)
	}
}

// TestGitBindingAccessAndInput: owners bind, editors sync, viewers read;
// a local path is for admins; bad input is refused naming the problem and
// changes nothing; the password is sealed and never shown.
func TestGitBindingAccessAndInput(t *testing.T) {
	t.Parallel()
	b := setup(t, options{secrets: testBox(t)})
	b.mustProject("p")
	ann := b.tokenOf("ann", model.RoleUser)
	bo := b.tokenOf("bo", model.RoleUser)
	repo := gittest.New(t)
	repo.Commit("main", "first", map[string]string{"workflows/report.yaml": gitReport})
	bind := `{"url":"` + repo.Bare + `"}`

	// Every Git route: anonymous 401; a user without a grant finds no
	// project (404, as for every project route); a viewer reads, and gets
	// 403 on the changes.
	for _, c := range [][3]string{{"PUT", "/api/v1/projects/p/git", bind}, {"GET", "/api/v1/projects/p/git", ""},
		{"DELETE", "/api/v1/projects/p/git", ""}, {"POST", "/api/v1/projects/p/git/sync", ""}} {
		b.as("", c[0], c[1], c[2]).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
		b.as(ann, c[0], c[1], c[2]).wantError(t, http.StatusNotFound, CodeNotFound)
	}
	b.as(ann, "PUT", "/api/v1/projects/p/git", bind).wantError(t, http.StatusNotFound, CodeNotFound)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	b.as(ann, "GET", "/api/v1/projects/p/git", "").wantError(t, http.StatusNotFound, CodeNotFound) // not bound yet
	for _, c := range [][3]string{{"PUT", "/api/v1/projects/p/git", bind}, {"DELETE", "/api/v1/projects/p/git", ""},
		{"POST", "/api/v1/projects/p/git/sync", ""}} {
		b.as(ann, c[0], c[1], c[2]).wantError(t, http.StatusForbidden, CodeForbidden)
	}
	// An editor syncs but does not bind; an owner binds but, not an
	// admin, not a path on the server.
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"edit"}`).want(t, http.StatusOK)
	b.as(ann, "PUT", "/api/v1/projects/p/git", bind).wantError(t, http.StatusForbidden, CodeForbidden)
	b.send("PUT", "/api/v1/projects/p/grants/bo", `{"level":"owner"}`).want(t, http.StatusOK)
	e := b.as(bo, "PUT", "/api/v1/projects/p/git", bind).wantError(t, http.StatusForbidden, CodeForbidden)
	if !strings.Contains(e.Message, "only an admin") {
		t.Fatalf("message %q", e.Message)
	}
	b.as(bo, "PUT", "/api/v1/projects/p/git", `{"url":"file://`+repo.Bare+`"}`).wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(bo, "PUT", "/api/v1/projects/p/git", `{"url":"https://git.example.com/etl.git","user":"bot","password":"tok-123"}`).want(t, http.StatusCreated)
	g := gitState(t, b, "p")
	if !g.PasswordSet || g.User != "bot" || g.BoundBy != "bo" {
		t.Fatalf("binding %+v", g)
	}
	if raw := string(b.get("/api/v1/projects/p/git").body); strings.Contains(raw, "tok-123") {
		t.Fatalf("the answer shows the password: %s", raw)
	}
	if got, err := b.store.GitBindingGet(context.Background(), "p"); err != nil || got.PasswordSealed == "" || strings.Contains(got.PasswordSealed, "tok-123") {
		t.Fatalf("stored password %q (%v), want it sealed", got.PasswordSealed, err)
	}

	// Bad input: refused, naming the problem; the binding stays.
	for _, c := range []struct{ body, want string }{
		{`{"url":""}`, "url is required"},
		{`{"url":"https://bot:tok@git.example.com/etl.git"}`, "carries a password"},
		{`{"url":"git@git.example.com:etl.git"}`, "known_hosts is required"},
		{`{"url":"git@git.example.com:etl.git","known_hosts":"SHA256:abc"}`, "needs ssh_key"},
		{`{"url":"git@git.example.com:etl.git","known_hosts":"SHA256:abc","ssh_key":"not a key"}`, "ssh_key is not a private key"},
		{`{"url":"git@git.example.com:etl.git","known_hosts":"git.example.com not-a-key","ssh_key":"x"}`, "known_hosts line 1"},
		{`{"url":"git@git.example.com:etl.git","known_hosts":"SHA256:abc","password":"pw"}`, "not a password"},
		{`{"url":"https://git.example.com/etl.git","known_hosts":"SHA256:abc"}`, "are for an SSH URL"},
		{`{"url":"ftp://git.example.com/etl.git"}`, "scheme ftp is not supported"},
		{`{"url":"relative/repo"}`, "neither a URL, an SSH address nor an absolute path"},
		{`{"url":"https://git.example.com/etl.git","branch":"a..b"}`, `branch "a..b"`},
		{`{"url":"https://git.example.com/etl.git","dir":"../up"}`, "may not contain .."},
		{`{"url":"https://git.example.com/etl.git","nope":1}`, "nope"},
	} {
		e := b.as(bo, "PUT", "/api/v1/projects/p/git", c.body).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: message %q, want %q", c.body, e.Message, c.want)
		}
	}
	if g2 := gitState(t, b, "p"); g2.URL != g.URL || !g2.PasswordSet {
		t.Fatalf("refused input changed the binding: %+v", g2)
	}

	// The admin binds the local repository, keeping the password (left
	// out), then an editor syncs; the versions are the editor's.
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`","password":""}`).want(t, http.StatusOK)
	var res GitSyncResult
	b.as(ann, "POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &res)
	def, err := b.store.WorkflowGet(context.Background(), "p", "report", 0)
	if err == nil {
		def, err = b.store.WorkflowDefinition(context.Background(), def.ID)
	}
	if err != nil || len(res.Workflows) != 1 || def.CreatedBy != "ann" {
		t.Fatalf("sync %+v, workflow applied by %q (%v)", res, def.CreatedBy, err)
	}
	// A repository that cannot be read: 502, nothing changed, recorded.
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`-missing"}`).want(t, http.StatusOK)
	b.as(ann, "POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadGateway, CodeBadGateway)
	if g := gitState(t, b, "p"); g.LastError == "" || g.LastCommit != res.Commit {
		t.Fatalf("state after a failed fetch %+v", g)
	}
	b.as(bo, "DELETE", "/api/v1/projects/p/git", "").want(t, http.StatusNoContent)
	b.get("/api/v1/projects/p/git").wantError(t, http.StatusNotFound, CodeNotFound)
	e = b.send("POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "not bound") {
		t.Fatalf("message %q", e.Message)
	}
	// No key: a password cannot be stored.
	nokey := setup(t, options{})
	nokey.mustProject("p")
	nokey.send("PUT", "/api/v1/projects/p/git", `{"url":"https://git.example.com/etl.git","password":"x"}`).wantError(t, http.StatusServiceUnavailable, CodeUnavailable)
}

func TestGitURLKindAndBranch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url   string
		local bool
		bad   string
	}{
		{"https://git.example.com/a.git", false, ""},
		{"http://git.example.com/a.git", false, ""},
		{"https://bot@git.example.com/a.git", false, ""},
		{"/srv/git/a.git", true, ""},
		{"file:///srv/git/a.git", true, ""},
		{"file://other/srv/a.git", false, "names no host"},
		{"", false, "required"},
		{"https:///a.git", false, "no host"},
		{"https://u:p@git.example.com/a.git", false, "carries a password"},
		{"git@git.example.com:a.git", false, ""},
		{"ssh://git.example.com/a.git", false, ""},
		{"ssh://git.example.com/", false, "names no repository path"},
		{"ftp://git.example.com/a.git", false, "scheme ftp"},
		{"a.git", false, "neither"},
		{"https://git.example.com/a\n.git", false, "control character"},
	} {
		local, err := gitURLKind(c.url)
		if c.bad == "" && (err != nil || local != c.local) || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("gitURLKind(%q) = %v, %v; want local %v, error with %q", c.url, local, err, c.local, c.bad)
		}
	}
	for _, c := range []struct {
		branch string
		ok     bool
	}{{"", true}, {"main", true}, {"release/1.2", true}, {"a..b", false}, {"-x", false}, {"a b", false}, {"a.lock", false},
		{"a/", false}, {"a@{1}", false}, {"a~1", false}, {"a\x01", false}} {
		if err := checkGitBranch(c.branch); (err == nil) != c.ok {
			t.Errorf("checkGitBranch(%q) = %v, want ok %v", c.branch, err, c.ok)
		}
	}
}

// TestGitSyncOverHTTPWithSealedToken: the token stored sealed is opened
// for the fetch from a real Git HTTP server that wants it; a wrong one
// fails the fetch (502) and changes nothing.
func TestGitSyncOverHTTPWithSealedToken(t *testing.T) {
	t.Parallel()
	b := setup(t, options{secrets: testBox(t)})
	b.mustProject("p")
	repo := gittest.New(t)
	c1 := repo.Commit("main", "first", map[string]string{"workflows/report.yaml": gitReport})
	url := repo.Serve("bot", "tok-123") + "/repo.git"
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+url+`","user":"bot","password":"tok-123"}`).want(t, http.StatusCreated)
	var res GitSyncResult
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &res)
	if res.Commit != c1 || len(res.Workflows) != 1 {
		t.Fatalf("sync %+v", res)
	}
	repo.Commit("main", "second", map[string]string{"workflows/other.yaml": gitReport})
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+url+`","user":"bot","password":"wrong"}`).want(t, http.StatusOK)
	e := b.send("POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadGateway, CodeBadGateway)
	if strings.Contains(e.Message, "wrong") || !strings.Contains(e.Message, "nothing changed") {
		t.Fatalf("message %q", e.Message)
	}
	b.get("/api/v1/projects/p/workflows/other").wantError(t, http.StatusNotFound, CodeNotFound)
	if g := gitState(t, b, "p"); g.LastCommit != c1 || g.LastError == "" {
		t.Fatalf("state %+v", g)
	}
}
