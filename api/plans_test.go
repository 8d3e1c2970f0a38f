package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

func TestPlans(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	b.mustWorkflow("a")
	b.mustProject("b")
	b.putSpec("b", "report", "application/yaml", `name: report
tasks:
  - {name: wait, type: dependent, wait_for: [{project: a, workflow: nightly_etl, date: today}]}
  - {name: send, command: "true", depends_on: [wait]}
`).want(t, http.StatusCreated)
	instA := b.mustRun("a", "")
	var instB Instance
	b.send("POST", "/api/v1/projects/b/workflows/report/runs", "").want(t, http.StatusCreated).json(t, &instB)
	for _, id := range []int64{instA.ID, instB.ID} {
		if err := b.store.InstanceFinish(ctx, id, model.WorkflowSucceeded, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
	}
	planPath := "/api/v1/instances/" + itoa(instA.ID) + "/plan"
	all := `{"action":"rerun","downstream":"all"}`

	// Bad bodies: 400 naming the problem, nothing kept.
	for body, want := range map[string]string{
		`{"action":"stop"}`:                      "plans are for rerun and recover_failed",
		`{}`:                                     "plans are for rerun and recover_failed",
		`{"action":"rerun","downstream":"some"}`: "none, direct or all",
		`{"action":"rerun","levels":2}`:          "levels",
	} {
		if e := b.send("POST", planPath, body).wantError(t, http.StatusBadRequest, CodeBadRequest); !strings.Contains(e.Message, want) {
			t.Fatalf("%s: %q lacks %q", body, e.Message, want)
		}
	}
	b.send("POST", "/api/v1/instances/999999/plan", all).wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/plans/999999").wantError(t, http.StatusNotFound, CodeNotFound)

	var p Plan
	b.send("POST", planPath, all).want(t, http.StatusCreated).json(t, &p)
	if len(p.Instances) != 2 || p.Instances[0].ID != instA.ID || p.Instances[1].ID != instB.ID || p.Blocked ||
		strings.Join(p.Projects, ",") != "a,b" || len(p.Instances[1].Tasks) != 2 {
		t.Fatalf("plan %+v", p)
	}
	var none Plan
	b.send("POST", planPath, `{"action":"rerun"}`).want(t, http.StatusCreated).json(t, &none)
	if len(none.Instances) != 1 || none.Downstream != "none" {
		t.Fatalf("plan without downstream %+v", none)
	}

	// Access: anonymous 401; no grant 404; a viewer 403 on the writes; an
	// operator of a with no grant on b can neither plan into b nor see or
	// apply the plan that reaches it; with view on b, 403 naming b.
	for _, r := range []struct{ method, path, body string }{{"POST", planPath, all}, {"GET", "/api/v1/plans/" + itoa(p.ID), ""},
		{"POST", "/api/v1/plans/" + itoa(p.ID) + "/apply", ""}} {
		b.as("", r.method, r.path, r.body).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
		b.as(b.tokenOf("bob", model.RoleUser), r.method, r.path, r.body).wantError(t, http.StatusNotFound, CodeNotFound)
	}
	vic := b.tokenOf("vic", model.RoleUser)
	b.send("PUT", "/api/v1/projects/a/grants/vic", `{"level":"view"}`).want(t, http.StatusOK)
	b.as(vic, "POST", planPath, all).wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(vic, "GET", "/api/v1/plans/"+itoa(none.ID), "").want(t, http.StatusOK)
	if e := b.as(vic, "POST", "/api/v1/plans/"+itoa(none.ID)+"/apply", "").wantError(t, http.StatusForbidden, CodeForbidden); !strings.Contains(e.Message, `project "a"`) {
		t.Fatalf("viewer's apply: %s", e.Message)
	}
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/a/grants/ann", `{"level":"operate"}`).want(t, http.StatusOK)
	if e := b.as(ann, "POST", planPath, all).wantError(t, http.StatusForbidden, CodeForbidden); strings.Contains(e.Message, `"b"`) || !strings.Contains(e.Message, "1 project(s)") {
		t.Fatalf("a plan into a hidden project: %s", e.Message)
	}
	b.as(ann, "GET", "/api/v1/plans/"+itoa(p.ID), "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(ann, "POST", "/api/v1/plans/"+itoa(p.ID)+"/apply", "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.send("PUT", "/api/v1/projects/b/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	if e := b.as(ann, "POST", "/api/v1/plans/"+itoa(p.ID)+"/apply", "").wantError(t, http.StatusForbidden, CodeForbidden); !strings.Contains(e.Message, `has view on project "b"`) {
		t.Fatalf("apply without operate on b: %s", e.Message)
	}
	if acts, _ := b.store.ActionClaim(ctx, 100); len(acts) != 0 {
		t.Fatalf("refused requests wrote %+v", acts)
	}

	// The admin applies: one command per run; a second apply is 409.
	var applied Plan
	b.send("POST", "/api/v1/plans/"+itoa(p.ID)+"/apply", "").want(t, http.StatusAccepted).json(t, &applied)
	if len(applied.Commands) != 2 || applied.AppliedAt == nil {
		t.Fatalf("applied %+v", applied)
	}
	if e := b.send("POST", "/api/v1/plans/"+itoa(p.ID)+"/apply", "").wantError(t, http.StatusConflict, CodeConflict); !strings.Contains(e.Message, "was applied") {
		t.Fatalf("second apply: %s", e.Message)
	}
	// none saw instance a before the rerun was asked: a command now waits.
	if e := b.send("POST", "/api/v1/plans/"+itoa(none.ID)+"/apply", "").wantError(t, http.StatusConflict, CodeConflict); !strings.Contains(e.Message, "instance "+itoa(instA.ID)+" waiting commands: was") {
		t.Fatalf("apply of a stale plan: %s", e.Message)
	}
}
