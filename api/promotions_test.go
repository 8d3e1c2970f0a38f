package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

// TestPromotionReviewRules: who may request, see and review a change
// request. An author with edit on the source and view on the target
// requests; she cannot approve her own request (nor can an admin who made
// one); a user with edit but not approve on the target gets 403; a
// stranger to the target gets 404 (it is not probed), an anonymous caller
// 401; an approver applies it; every step is in the audit log; bad bodies
// are 400 and change nothing; the diff masks secret values.
func TestPromotionReviewRules(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	b.mustWorkflow("dev")
	b.mustProject("prod")
	b.putSpec("prod", "nightly_etl", "application/yaml", etlYAML).want(t, http.StatusCreated)
	v2 := strings.Replace(etlYAML, "echo load", "echo load v2", 1) + "secret_params: [token]\n"
	v2 = strings.Replace(v2, `params: {bizdate: "20260101"}`, `params: {bizdate: "20260101", token: "hunter2"}`, 1)
	b.putSpec("dev", "nightly_etl", "application/yaml", v2).want(t, http.StatusCreated)

	ann := b.tokenOf("ann", "user") // the author: edit on dev, view on prod
	ed := b.tokenOf("ed", "user")   // edit on prod, no approve
	rob := b.tokenOf("rob", "user") // approve on prod
	zed := b.tokenOf("zed", "user") // nothing on prod
	viv := b.tokenOf("viv", "user") // view on dev only: cannot request from it
	for _, g := range []struct{ project, user, level string }{
		{"dev", "ann", "edit"}, {"prod", "ann", "view"}, {"prod", "ed", "edit"}, {"prod", "rob", "approve"},
		{"dev", "viv", "view"}, {"prod", "viv", "view"},
	} {
		b.send("PUT", "/api/v1/projects/"+g.project+"/grants/"+g.user, `{"level":"`+g.level+`"}`).want(t, http.StatusOK)
	}
	body := `{"source_project":"dev","workflow":"nightly_etl","message":"load v2"}`
	b.as("", "POST", "/api/v1/projects/prod/promotions", body).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	b.as(zed, "POST", "/api/v1/projects/prod/promotions", body).wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(viv, "POST", "/api/v1/projects/prod/promotions", body).wantError(t, http.StatusForbidden, CodeForbidden)
	for _, bad := range []string{
		`{"source_project":"dev"}`,
		`{"source_project":"dev","workflow":"nightly_etl","version":-1}`,
		`{"source_project":"dev","workflow":"nightly_etl","extra":1}`,
		`{"source_project":"../x","workflow":"nightly_etl"}`,
		`[]`,
	} {
		b.as(ann, "POST", "/api/v1/projects/prod/promotions", bad).wantError(t, http.StatusBadRequest, CodeBadRequest)
	}
	b.as(ann, "POST", "/api/v1/projects/prod/promotions", `{"source_project":"dev","workflow":"nightly_etl","version":9}`).
		wantError(t, http.StatusNotFound, CodeNotFound)
	if l, _ := b.store.ChangeRequestList(context.Background(), "prod", "", 0); len(l) != 0 {
		t.Fatalf("refused requests wrote %d", len(l))
	}

	var cr ChangeRequest
	b.as(ann, "POST", "/api/v1/projects/prod/promotions", body).want(t, http.StatusCreated).json(t, &cr)
	if cr.State != "open" || cr.Author != "ann" || cr.SourceVersion != 2 || cr.BaseVersion != 1 || cr.Diff == nil || cr.CanReview {
		t.Fatalf("request: %+v", cr)
	}
	if strings.Contains(cr.Diff.Text, "hunter2") || !strings.Contains(cr.Diff.Text, "echo load v2") {
		t.Fatalf("diff text (secrets masked, the change shown):\n%s", cr.Diff.Text)
	}
	path := "/api/v1/projects/prod/promotions/" + itoa(cr.ID)
	// Who sees it, who may review it.
	b.as(zed, "GET", path, "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.as("", "GET", path, "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	var seen ChangeRequest
	b.as(rob, "GET", path, "").want(t, http.StatusOK).json(t, &seen)
	if !seen.CanReview || seen.Stale {
		t.Fatalf("rob's view: %+v", seen)
	}
	b.as(ann, "GET", path, "").want(t, http.StatusOK).json(t, &seen)
	if seen.CanReview {
		t.Fatal("the author is offered the review")
	}
	b.as(ann, "POST", path+"/approve", "").wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ed, "POST", path+"/approve", "").wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ed, "POST", path+"/reject", "").wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(zed, "POST", path+"/approve", "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.as("", "POST", path+"/approve", "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	b.as(rob, "POST", path+"/approve", `{"comment":1}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	b.as(rob, "POST", "/api/v1/projects/dev/promotions/"+itoa(cr.ID)+"/approve", "").wantError(t, http.StatusNotFound, CodeNotFound)
	if def, _ := b.store.WorkflowGet(context.Background(), "prod", "nightly_etl", 0); def.Version != 1 {
		t.Fatalf("refused approvals changed prod: version %d", def.Version)
	}
	var done ChangeRequest
	b.as(rob, "POST", path+"/approve", `{"comment":"ship it"}`).want(t, http.StatusOK).json(t, &done)
	if done.State != "applied" || done.Reviewer != "rob" || done.AppliedVersion != 2 || done.ReviewComment != "ship it" {
		t.Fatalf("approved: %+v", done)
	}
	b.as(rob, "POST", path+"/reject", "").wantError(t, http.StatusConflict, CodeConflict)

	// An admin who authors a request may not approve it either.
	b.putSpec("dev", "nightly_etl", "application/yaml", etlYAML).want(t, http.StatusCreated)
	var mine ChangeRequest
	b.send("POST", "/api/v1/projects/prod/promotions", body).want(t, http.StatusCreated).json(t, &mine)
	b.send("POST", "/api/v1/projects/prod/promotions/"+itoa(mine.ID)+"/approve", "").wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(rob, "POST", "/api/v1/projects/prod/promotions/"+itoa(mine.ID)+"/reject", `{"comment":"no"}`).want(t, http.StatusOK)

	var list ChangeRequestList
	b.as(ann, "GET", "/api/v1/projects/prod/promotions?state=applied", "").want(t, http.StatusOK).json(t, &list)
	if len(list.Requests) != 1 || list.Requests[0].ID != cr.ID {
		t.Fatalf("applied list: %+v", list)
	}
	b.as(ann, "GET", "/api/v1/projects/prod/promotions?state=maybe", "").wantError(t, http.StatusBadRequest, CodeBadRequest)

	// The gate: owners only; a bad source is 400.
	b.as(rob, "PUT", "/api/v1/projects/prod/promotion", `{"require_review":true}`).wantError(t, http.StatusForbidden, CodeForbidden)
	b.send("PUT", "/api/v1/projects/prod/promotion", `{"source_project":"nope","require_review":true}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	b.send("PUT", "/api/v1/projects/prod/promotion", `{"require_review":true,"alert_channels":["none"]}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	var g PromotionGate
	b.send("PUT", "/api/v1/projects/prod/promotion", `{"source_project":"dev","require_review":true}`).want(t, http.StatusOK).json(t, &g)
	if !g.RequireReview || g.SourceProject != "dev" {
		t.Fatalf("gate: %+v", g)
	}
	// A direct edit is drift, shown by the gate's read; a pin to it is refused.
	b.request("PUT", "/api/v1/projects/prod/workflows/nightly_etl", "", "application/yaml",
		strings.NewReader(strings.Replace(etlYAML, "echo extract", "echo hotfix", 1)), "Authorization", "Bearer "+ed).want(t, http.StatusCreated)
	b.as(ed, "GET", "/api/v1/projects/prod/promotion", "").want(t, http.StatusOK).json(t, &g)
	if len(g.Drift) != 1 || g.Drift[0].Workflow != "nightly_etl" || g.Drift[0].SinceVersion != 3 || g.Drift[0].PromotedVersion != 2 {
		t.Fatalf("drift: %+v", g.Drift)
	}
	var wf Workflow
	b.as(ed, "GET", "/api/v1/projects/prod/workflows/nightly_etl", "").want(t, http.StatusOK).json(t, &wf)
	if wf.Drift == nil || wf.Drift.SinceVersion != 3 || wf.Drift.EditedBy != "ed" {
		t.Fatalf("the workflow's drift field: %+v", wf.Drift)
	}
	b.as(ed, "PUT", "/api/v1/projects/prod/workflows/nightly_etl/schedule", `{"cron":"0 0 2 * * *","pin_version":3}`).
		wantError(t, http.StatusBadRequest, CodeBadRequest)
	var sc Schedule
	b.as(ed, "PUT", "/api/v1/projects/prod/workflows/nightly_etl/schedule", `{"cron":"0 0 2 * * *"}`).want(t, http.StatusCreated).json(t, &sc)
	if sc.PinVersion != 2 {
		t.Fatalf("a gated schedule pins %d, want the promoted 2", sc.PinVersion)
	}

	// Every step is in the audit log, with its outcome.
	entries, err := b.store.AuditList(context.Background(), store.AuditFilter{Resource: "/api/v1/projects/prod/promotion"})
	if err != nil {
		t.Fatal(err)
	}
	seenAction := map[string]bool{}
	for _, e := range entries {
		seenAction[e.Action+" "+e.User+" "+itoa(int64(e.Status))] = true
	}
	for _, want := range []string{
		"POST /api/v1/projects/{project}/promotions ann 201",
		"POST /api/v1/projects/{project}/promotions/{id}/approve ann 403",
		"POST /api/v1/projects/{project}/promotions/{id}/approve ed 403",
		"POST /api/v1/projects/{project}/promotions/{id}/approve rob 200",
		"POST /api/v1/projects/{project}/promotions/{id}/reject rob 200",
		"PUT /api/v1/projects/{project}/promotion admin 200",
	} {
		if !seenAction[want] {
			t.Errorf("audit log lacks %q; has %v", want, seenAction)
		}
	}
}

// TestPromotionIntoGit: a target bound to a repository takes an approval
// as a save: in write_back the approved spec is committed by the reviewer
// (secrets as the mask) before it is stored, so the next sync keeps it; in
// read_only the approval is a 409 naming the file, and nothing changes.
func TestPromotionIntoGit(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	b.mustWorkflow("dev")
	b.mustProject("prod")
	repo := gittest.New(t)
	repo.Commit("main", "first", map[string]string{"beluga/workflows/nightly_etl.yaml": etlYAML})
	b.send("PUT", "/api/v1/projects/prod/git", `{"url":"`+repo.Bare+`","branch":"main","dir":"beluga","mode":"write_back"}`).
		want(t, http.StatusCreated)
	b.send("POST", "/api/v1/projects/prod/git/sync", "").want(t, http.StatusOK)
	v2 := strings.Replace(etlYAML, "echo load", "echo load v2", 1) + "secret_params: [token]\n"
	v2 = strings.Replace(v2, `params: {bizdate: "20260101"}`, `params: {bizdate: "20260101", token: "hunter2"}`, 1)
	b.putSpec("dev", "nightly_etl", "application/yaml", v2).want(t, http.StatusCreated)
	ann := b.tokenOf("ann", "user")
	rob := b.tokenOf("rob", "user")
	for _, g := range []struct{ project, user, level string }{{"dev", "ann", "edit"}, {"prod", "ann", "view"}, {"prod", "rob", "approve"}} {
		b.send("PUT", "/api/v1/projects/"+g.project+"/grants/"+g.user, `{"level":"`+g.level+`"}`).want(t, http.StatusOK)
	}
	request := func() ChangeRequest {
		var cr ChangeRequest
		b.as(ann, "POST", "/api/v1/projects/prod/promotions", `{"source_project":"dev","workflow":"nightly_etl"}`).
			want(t, http.StatusCreated).json(t, &cr)
		return cr
	}

	// read_only: refused, naming the file; nothing stored, nothing committed.
	b.send("PUT", "/api/v1/projects/prod/git", `{"url":"`+repo.Bare+`","branch":"main","dir":"beluga","mode":"read_only"}`).
		want(t, http.StatusOK)
	cr := request()
	e := b.as(rob, "POST", "/api/v1/projects/prod/promotions/"+itoa(cr.ID)+"/approve", `{}`).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "read-only outside Git") || !strings.Contains(e.Message, "beluga/workflows/nightly_etl.yaml") {
		t.Fatalf("read_only approval: %q", e.Message)
	}
	if def, err := b.store.WorkflowGet(t.Context(), "prod", "nightly_etl", 0); err != nil || strings.Contains(string(def.SpecJSON), "load v2") {
		t.Fatalf("a refused approval stored %s (%v)", def.SpecJSON, err)
	}

	// write_back: committed by rob, secret masked; the sync keeps it.
	b.send("PUT", "/api/v1/projects/prod/git", `{"url":"`+repo.Bare+`","branch":"main","dir":"beluga","mode":"write_back"}`).
		want(t, http.StatusOK)
	var done ChangeRequest
	b.as(rob, "POST", "/api/v1/projects/prod/promotions/"+itoa(cr.ID)+"/approve", `{}`).want(t, http.StatusOK).json(t, &done)
	if done.State != "applied" {
		t.Fatalf("approved: %+v", done)
	}
	file := repo.Show("main", "beluga/workflows/nightly_etl.yaml")
	if !strings.Contains(file, "echo load v2") || strings.Contains(file, "hunter2") || strings.Contains(file, "beluga:sealed:") || !strings.Contains(file, "***") {
		t.Fatalf("the committed file:\n%s", file)
	}
	if who, _, msg := repo.Head("main"); who != "rob" || !strings.Contains(msg, "change request "+itoa(cr.ID)) {
		t.Fatalf("head commit by %q: %q", who, msg)
	}
	b.send("POST", "/api/v1/projects/prod/git/sync", "").want(t, http.StatusOK)
	def, err := b.store.WorkflowGet(t.Context(), "prod", "nightly_etl", 0)
	if err != nil || !strings.Contains(string(def.SpecJSON), "load v2") || !strings.Contains(string(def.SpecJSON), "beluga:sealed:") {
		t.Fatalf("after the sync: %s (%v)", def.SpecJSON, err)
	}
}
