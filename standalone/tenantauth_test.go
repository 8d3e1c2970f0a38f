package standalone_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// as is e calling as a new user of role, made by the admin.
func (e *env) as(name, role string) *env {
	e.t.Helper()
	pw := name + "-password-long"
	e.do("POST", "/api/v1/users", fmt.Sprintf(`{"name":%q,"password":%q,"role":%q}`, name, pw, role), http.StatusCreated, nil)
	body, _ := json.Marshal(map[string]string{"username": name, "password": pw})
	resp, err := http.Post(e.base+"/api/v1/login", "application/json", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("login as %s: %d %v", name, resp.StatusCode, err)
	}
	u := *e
	u.token = out.Token
	return &u
}

// TestTenantNamedOnlyByAdmin (docs/security.md, tenants): a plain user
// cannot give her project a tenant, nor name one in a workflow or task
// (403 naming it, nothing stored); a version naming one that no admin
// applied (stored before the check) fails its task at run, never
// dispatched; an admin's version runs as its tenant whoever starts it.
func TestTenantNamedOnlyByAdmin(t *testing.T) {
	e := start(t, "")
	pat := e.as("pat", "user")
	wantForbidden := func(method, path, body, tenant string) {
		t.Helper()
		var raw string
		pat.do(method, path, body, http.StatusForbidden, &raw)
		if !strings.Contains(raw, `tenant \"`+tenant+`\"`) {
			t.Fatalf("%s %s: the refusal does not name the tenant: %s", method, path, raw)
		}
	}
	wantForbidden("POST", "/api/v1/projects", `{"name":"pats","tenant":"root"}`, "root")
	pat.do("POST", "/api/v1/projects", `{"name":"pats"}`, http.StatusCreated, nil)
	wantForbidden("PUT", "/api/v1/projects/pats/workflows/w", "name: w\ntenant: root\ntasks:\n  - name: a\n    command: id -u\n", "root")
	wantForbidden("PUT", "/api/v1/projects/pats/workflows/w", "name: w\ntasks:\n  - name: a\n    tenant: root\n    command: id -u\n", "root")
	pat.do("GET", "/api/v1/projects/pats/workflows/w", "", http.StatusNotFound, nil)

	// A version stored with tenant root and no known author (as before the
	// check: model.AuthorUnknown): its task fails at run and is never dispatched.
	w, err := spec.Parse([]byte("name: old\ntenant: root\ntasks:\n  - name: a\n    command: id -u\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store().WorkflowPutAs(context.Background(), "pats", model.AuthorUnknown, w); err != nil {
		t.Fatal(err)
	}
	var run struct{ ID int64 }
	pat.do("POST", "/api/v1/projects/pats/workflows/old/runs", "{}", http.StatusCreated, &run)
	iv := pat.wait(run.ID, 30*time.Second)
	if iv.State != "failed" || iv.task("a").State != "failed" || iv.task("a").Host != "" {
		t.Fatalf("tenant root from no admin: %+v", iv)
	}
	var raw string
	pat.do("GET", fmt.Sprintf("/api/v1/instances/%d", run.ID), "", http.StatusOK, &raw)
	if !strings.Contains(raw, `tenant \"root\": the project has no tenant: only an admin may name a tenant`) {
		t.Fatalf("the failure does not name the tenant: %s", raw)
	}

	// An admin's version naming a tenant passes the check when pat runs
	// it (here the user does not exist: the worker says so, not the check).
	e.do("PUT", "/api/v1/projects/pats/workflows/byadmin", "name: byadmin\ntenant: no_such_user_x9\ntasks:\n  - name: a\n    command: id -u\n", http.StatusCreated, nil)
	pat.do("POST", "/api/v1/projects/pats/workflows/byadmin/runs", "{}", http.StatusCreated, &run)
	iv = pat.wait(run.ID, 30*time.Second)
	pat.do("GET", fmt.Sprintf("/api/v1/instances/%d", run.ID), "", http.StatusOK, &raw)
	if iv.task("a").State != "failed" || !strings.Contains(raw, `tenant \"no_such_user_x9\": no such OS user`) {
		t.Fatalf("an admin's tenant run by a plain user: %s", raw)
	}
}
