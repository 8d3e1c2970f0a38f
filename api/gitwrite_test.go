package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

// TestGitWriteBack: a project in write_back mode (a real bare repository
// on disk): an editor's save is a commit on the branch authored by them
// with their message, before the store is written; a secret in the spec
// is committed as *** only, its value kept in Beluga, and the commit
// syncs back without a new version; a delete removes the file. In
// read_only mode a save or delete is a 409 naming the repository and the
// file, and changes nothing.
func TestGitWriteBack(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	b.mustProject("p")
	repo := gittest.New(t)
	repo.Commit("main", "first", map[string]string{"beluga/workflows/etl.yaml": gitETL})
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`","branch":"main","dir":"beluga","mode":"write_back"}`).
		want(t, http.StatusCreated)
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"edit"}`).want(t, http.StatusOK)

	changed := strings.Replace(gitETL, "extract and load", "tuned by ann", 1)
	r := b.request("PUT", "/api/v1/projects/p/workflows/etl?message="+url.QueryEscape("tune etl\n\nwhy: faster"), "", "application/yaml",
		strings.NewReader(changed), "Authorization", "Bearer "+ann).want(t, http.StatusCreated)
	var res ApplyResult
	r.json(t, &res)
	if res.GitCommit == "" || res.Version != 2 {
		t.Fatalf("apply %+v: want a commit and version 2", res)
	}
	if got := repo.Show("main", "beluga/workflows/etl.yaml"); got != changed {
		t.Fatalf("the branch has\n%s\nwant the saved spec", got)
	}
	if who, email, msg := repo.Head("main"); who != "ann" || email != "ann@users.beluga.invalid" || msg != "tune etl\n\nwhy: faster" {
		t.Fatalf("head commit by %q <%s>: %q", who, email, msg)
	}

	// A new workflow with a secret value: the file holds the mask only.
	secretly := "secret_params: [db_password]\nparams:\n  db_password: hunter2\ntasks:\n  - name: a\n    command: echo a\n"
	b.putSpec("p", "fresh", "application/yaml", secretly).want(t, http.StatusCreated)
	file := repo.Show("main", "beluga/workflows/fresh.yaml")
	if strings.Contains(file, "hunter2") || !strings.Contains(file, "'***'") && !strings.Contains(file, `"***"`) {
		t.Fatalf("the committed file:\n%s", file)
	}
	if who, _, msg := repo.Head("main"); who != "admin" || msg != "beluga - apply workflow fresh" {
		t.Fatalf("head commit by %q: %q", who, msg)
	}
	// The branch syncs back: no new versions, the secret's value kept.
	var sync GitSyncResult
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &sync)
	// (etl, saved by ann and synced by the admin, gets a version of the
	// same spec as the admin's: versions are per author, for the walls.)
	for _, w := range sync.Workflows {
		if w.Deleted || w.Workflow == "fresh" && w.Created {
			t.Fatalf("the write-back's commit synced back with changes: %+v", sync)
		}
	}
	if def, err := b.store.WorkflowGet(t.Context(), "p", "fresh", 0); err != nil || !strings.Contains(string(def.SpecJSON), "beluga:sealed:") {
		t.Fatalf("fresh's secret: %s (%v)", def.SpecJSON, err)
	}
	// A delete removes the file, and a sync then keeps it deleted.
	b.do("DELETE", "/api/v1/projects/p/workflows/fresh?message=drop", "", nil).want(t, http.StatusNoContent)
	if repo.Show("main", "beluga/workflows/fresh.yaml") != "" {
		t.Fatal("the deleted workflow's file is still on the branch")
	}
	if _, _, msg := repo.Head("main"); msg != "drop" {
		t.Fatalf("head message %q", msg)
	}
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)
	b.get("/api/v1/projects/p/workflows/fresh").wantError(t, http.StatusNotFound, CodeNotFound)

	// read_only: refused, naming where to edit; nothing changes.
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`","branch":"main","dir":"beluga","mode":"read_only"}`).want(t, http.StatusOK)
	head := repo.Show("main", "beluga/workflows/etl.yaml")
	e := b.putSpec("p", "etl", "application/yaml", gitETL).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "read-only outside Git") || !strings.Contains(e.Message, "beluga/workflows/etl.yaml") || !strings.Contains(e.Message, repo.Bare) {
		t.Fatalf("refusal %q", e.Message)
	}
	b.do("DELETE", "/api/v1/projects/p/workflows/etl", "", nil).wantError(t, http.StatusConflict, CodeConflict)
	if v := gitVersion(t, b, "p", "etl"); v != 3 || repo.Show("main", "beluga/workflows/etl.yaml") != head {
		t.Fatalf("read_only changed something: version %d", v)
	}
	// A sync is how a read_only project changes.
	repo.Commit("main", "from git", map[string]string{"beluga/workflows/etl.yaml": gitETL})
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)
	if v := gitVersion(t, b, "p", "etl"); v != 4 {
		t.Fatalf("etl at version %d after the sync, want 4", v)
	}
}

// TestGitWriteBackRemote: write_back to a remote over HTTP (git
// http-backend) pushes with the sealed credentials; a branch that moved
// since the sync is still a fast-forward for the clone made at the save,
// and a wrong password refuses the save (502) and stores nothing.
func TestGitWriteBackRemote(t *testing.T) {
	t.Parallel()
	b := setup(t, options{secrets: testBox(t)})
	b.mustProject("p")
	repo := gittest.New(t)
	repo.Commit("main", "first", map[string]string{"workflows/etl.yaml": gitETL})
	remote := repo.Serve("bot", "tok-123") + "/repo.git"
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+remote+`","branch":"main","user":"bot","password":"tok-123","mode":"write_back"}`).
		want(t, http.StatusCreated)
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)
	repo.Commit("main", "elsewhere", map[string]string{"workflows/report.yml": gitReport})
	changed := strings.Replace(gitETL, "extract and load", "pushed", 1)
	var res ApplyResult
	b.putSpec("p", "etl", "application/yaml", changed).want(t, http.StatusCreated).json(t, &res)
	if res.GitCommit == "" || repo.Show("main", "workflows/etl.yaml") != changed || repo.Show("main", "workflows/report.yml") != gitReport {
		t.Fatalf("push: %+v", res)
	}
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+remote+`","branch":"main","user":"bot","password":"wrong","mode":"write_back"}`).
		want(t, http.StatusOK)
	e := b.putSpec("p", "etl", "application/yaml", gitETL).wantError(t, http.StatusBadGateway, CodeBadGateway)
	if !strings.Contains(e.Message, "nothing changed") {
		t.Fatalf("refusal %q", e.Message)
	}
	if v := gitVersion(t, b, "p", "etl"); v != 2 {
		t.Fatalf("etl at version %d after a refused save, want 2", v)
	}
}
