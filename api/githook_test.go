package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

func hubSignature(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// TestGitHookSyncsAndDeletes: a real bare repository; the binding's hook
// secret is answered once; the webhook refuses every call that does not
// prove it (401, one answer whatever the reason) and syncs on a GitHub
// signature or the bearer secret, as the user who bound; a file removed
// from the repository deletes its workflow in the same all-or-nothing
// commit (only workflows that came from Git); a workflow that cannot be
// deleted (a run is unfinished) refuses the commit naming the file.
func TestGitHookSyncsAndDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t, options{secrets: testBox(t)})
	b.mustProject("p")
	b.mustProject("q")
	repo := gittest.New(t)
	c1 := repo.Commit("main", "first", map[string]string{"workflows/etl.yaml": gitETL, "workflows/report.yml": gitReport})

	var g GitBinding
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`","branch":"main","new_hook_secret":true}`).
		want(t, http.StatusCreated).json(t, &g)
	secret := g.HookSecret
	if !strings.HasPrefix(secret, "bgh_") || !g.HookSet {
		t.Fatalf("binding %+v: want a hook secret answered once", g)
	}
	if g := gitState(t, b, "p"); g.HookSecret != "" || !g.HookSet {
		t.Fatalf("GET shows %+v: the secret must not be shown again", g)
	}
	// A workflow applied in Beluga, not from Git: no sync deletes it.
	b.putSpec("p", "local", "application/yaml", gitReport[len("name: report\n"):]).want(t, http.StatusCreated)

	hook := "/api/v1/git-hooks/p"
	body := `{"ref":"refs/heads/main"}`
	post := func(path string, header ...string) resp {
		t.Helper()
		return b.request("POST", path, "", "application/json", strings.NewReader(body), append([]string{"Authorization", ""}, header...)...)
	}
	for _, c := range []struct {
		path   string
		header []string
	}{
		{hook, nil},
		{hook, []string{"X-Hub-Signature-256", hubSignature("wrong", body)}},
		{hook, []string{"X-Hub-Signature-256", "sha256=zz"}},
		{hook, []string{"Authorization", "Bearer wrong"}},
		{hook, []string{"Authorization", "Bearer " + b.token}},                       // a user's token is not the hook's
		{"/api/v1/git-hooks/q", []string{"Authorization", "Bearer " + secret}},       // q has no binding
		{"/api/v1/git-hooks/nowhere", []string{"Authorization", "Bearer " + secret}}, // no such project
	} {
		e := post(c.path, c.header...).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
		if !strings.Contains(e.Message, "hook secret") {
			t.Fatalf("refusal %q", e.Message)
		}
	}
	b.get("/api/v1/projects/p/workflows/etl").wantError(t, http.StatusNotFound, CodeNotFound)

	var res GitSyncResult
	post(hook, "X-Hub-Signature-256", hubSignature(secret, body)).want(t, http.StatusOK).json(t, &res)
	if res.Commit != c1 || len(res.Workflows) != 2 {
		t.Fatalf("webhook sync %+v", res)
	}
	def, err := b.store.WorkflowGet(t.Context(), "p", "etl", 0)
	if err == nil {
		def, err = b.store.WorkflowDefinition(t.Context(), def.ID)
	}
	if err != nil || def.CreatedBy != "admin" {
		t.Fatalf("etl applied by %q (%v), want the binding's user admin", def.CreatedBy, err)
	}

	// report.yml removed: report is deleted; local (never in Git) stays.
	c2 := repo.Commit("main", "drop report", map[string]string{"workflows/report.yml": ""})
	post(hook, "X-Gitlab-Token", secret).want(t, http.StatusOK).json(t, &res)
	if res.Commit != c2 || len(res.Workflows) != 2 || !res.Workflows[1].Deleted || res.Workflows[1].Workflow != "report" ||
		res.Workflows[1].File != "workflows/report.yml" {
		t.Fatalf("sync of the removal %+v", res)
	}
	b.get("/api/v1/projects/p/workflows/report").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/projects/p/workflows/local").want(t, http.StatusOK)

	// etl removed while a run of it is unfinished (no master here): the
	// commit is refused, naming the file, and a good change in the same
	// commit is not applied either.
	b.send("POST", "/api/v1/projects/p/workflows/etl/runs", "").want(t, http.StatusCreated)
	c3 := repo.Commit("main", "drop etl", map[string]string{"workflows/etl.yaml": "", "workflows/new.yaml": gitReport[len("name: report\n"):]})
	e := post(hook, "Authorization", "Bearer "+secret).wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "workflows/etl.yaml") || !strings.Contains(e.Message, "unfinished") || !strings.Contains(e.Message, c3[:12]) {
		t.Fatalf("refusal %q", e.Message)
	}
	b.get("/api/v1/projects/p/workflows/etl").want(t, http.StatusOK)
	b.get("/api/v1/projects/p/workflows/new").wantError(t, http.StatusNotFound, CodeNotFound)
	if g := gitState(t, b, "p"); g.LastCommit != c2 || g.LastErrorFile != "workflows/etl.yaml" {
		t.Fatalf("state %+v", g)
	}

	// The binding's user may no longer edit the project: the hook refuses
	// (409), says so in the state, changes nothing.
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/q/grants/ann", `{"level":"owner"}`).want(t, http.StatusOK)
	b.as(ann, "PUT", "/api/v1/projects/q/git", `{"url":"https://git.example.invalid/x.git","new_hook_secret":true}`).
		want(t, http.StatusCreated).json(t, &g)
	b.send("PUT", "/api/v1/projects/q/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	e = post("/api/v1/git-hooks/q", "Authorization", "Bearer "+g.HookSecret).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, `"ann" may no longer edit`) {
		t.Fatalf("refusal %q", e.Message)
	}
	if g := gitState(t, b, "q"); !strings.Contains(g.LastError, "may no longer edit") {
		t.Fatalf("state %+v", g)
	}
}

// TestGitBindingMoreInput: the new fields are checked and kept.
func TestGitBindingMoreInput(t *testing.T) {
	t.Parallel()
	b := setup(t, options{secrets: testBox(t)})
	b.mustProject("p")
	url := `"url":"https://git.example.invalid/x.git"`
	for _, c := range []struct{ body, want string }{
		{`{` + url + `,"sync_interval":-1}`, "sync_interval -1"},
		{`{` + url + `,"sync_interval":99999999}`, "sync_interval 99999999"},
		{`{` + url + `,"mode":"readonly"}`, `mode "readonly"`},
		{`{` + url + `,"alert_channels":["nope"]}`, `no alert channel "nope"`},
		{`{` + url + `,"new_hook_secret":true,"drop_hook_secret":true}`, "together"},
	} {
		e := b.send("PUT", "/api/v1/projects/p/git", c.body).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: %q, want %q", c.body, e.Message, c.want)
		}
	}
	b.get("/api/v1/projects/p/git").wantError(t, http.StatusNotFound, CodeNotFound)
	b.send("PUT", "/api/v1/alert-channels/ops", `{"kind":"webhook","url":"https://hooks.example.invalid/x"}`).want(t, http.StatusCreated)
	var g GitBinding
	b.send("PUT", "/api/v1/projects/p/git", `{`+url+`,"sync_interval":15,"mode":"read_only","alert_channels":["ops"],"new_hook_secret":true}`).
		want(t, http.StatusCreated).json(t, &g)
	if g.SyncInterval != 15 || g.Mode != model.GitModeReadOnly || len(g.AlertChannels) != 1 || !g.HookSet {
		t.Fatalf("binding %+v", g)
	}
	// Left out, the hook secret is kept; dropped, it is gone.
	g = GitBinding{}
	b.send("PUT", "/api/v1/projects/p/git", `{`+url+`}`).want(t, http.StatusOK).json(t, &g)
	if !g.HookSet || g.SyncInterval != 0 || g.Mode != "" || g.HookSecret != "" {
		t.Fatalf("binding %+v", g)
	}
	b.send("PUT", "/api/v1/projects/p/git", `{`+url+`,"drop_hook_secret":true}`).want(t, http.StatusOK).json(t, &g)
	if g.HookSet {
		t.Fatalf("binding %+v", g)
	}
}
