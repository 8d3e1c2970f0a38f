package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestRetentionAccessAndInput: who may read, set, plan and purge retention,
// and bad input refused with a message naming it, changing nothing.
func TestRetentionAccessAndInput(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	b.mustProject("q")
	run := b.mustRun("p", "")
	ed, viewer, nobody := b.tokenOf("ed", model.RoleUser), b.tokenOf("vi", model.RoleUser), b.tokenOf("nobody", model.RoleUser)
	b.send("PUT", "/api/v1/projects/p/grants/ed", `{"level":"edit"}`).want(t, http.StatusOK)
	b.send("PUT", "/api/v1/projects/p/grants/vi", `{"level":"view"}`).want(t, http.StatusOK)

	// Outsiders: 401 on every route.
	for _, rt := range []string{"GET /api/v1/retention", "PUT /api/v1/retention", "POST /api/v1/retention/plan",
		"POST /api/v1/retention/purge", "GET /api/v1/projects/p/retention", "PUT /api/v1/projects/p/retention",
		"POST /api/v1/projects/p/retention/plan", "POST /api/v1/projects/p/retention/purge"} {
		m, path, _ := strings.Cut(rt, " ")
		b.as("", m, path, "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	}
	// The global default: every user reads it, only admins set it or run
	// the global plan and purge.
	b.as(nobody, "GET", "/api/v1/retention", "").want(t, http.StatusOK)
	b.as(ed, "PUT", "/api/v1/retention", `{"keep_days":1}`).wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ed, "POST", "/api/v1/retention/plan", "").wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ed, "POST", "/api/v1/retention/purge", "").wantError(t, http.StatusForbidden, CodeForbidden)
	// A project's: a user without a grant is answered as for a missing
	// project (404, as every project route); a viewer reads and dry-runs
	// but may not set or purge (403); an editor does both.
	b.as(nobody, "GET", "/api/v1/projects/p/retention", "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(nobody, "POST", "/api/v1/projects/p/retention/plan", "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(viewer, "POST", "/api/v1/projects/p/retention/plan", "").want(t, http.StatusOK)
	b.as(viewer, "PUT", "/api/v1/projects/p/retention", `{"keep_runs":1}`).wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(viewer, "POST", "/api/v1/projects/p/retention/purge", "").wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ed, "PUT", "/api/v1/projects/q/retention", `{"keep_runs":1}`).wantError(t, http.StatusNotFound, CodeNotFound)

	var pr ProjectRetention
	b.as(ed, "PUT", "/api/v1/projects/p/retention", `{"keep_runs":1}`).want(t, http.StatusOK).json(t, &pr)
	if pr.KeepRuns == nil || *pr.KeepRuns != 1 || pr.KeepDays != nil || pr.Effective != (model.RetentionPolicy{KeepRuns: 1}) || pr.UpdatedBy != "ed" {
		t.Fatalf("project retention after PUT: %+v", pr)
	}

	// Bad input: 400 naming the field or the project; nothing changes.
	for _, bad := range []struct{ method, path, body, want string }{
		{"PUT", "/api/v1/retention", `{"keep_days":-1}`, "keep_days must be from 0"},
		{"PUT", "/api/v1/retention", `{"keep_runs":5,"audit_days":-3}`, "audit_days must be from 0"},
		{"PUT", "/api/v1/retention", `{"keep_runs":"ten"}`, "keep_runs"},
		{"PUT", "/api/v1/retention", `{"keep_weeks":1}`, "keep_weeks"},
		{"PUT", "/api/v1/projects/p/retention", `{"keep_runs":-5}`, "keep_runs must be from 0"},
		{"PUT", "/api/v1/projects/p/retention", `{"keep_days":36501}`, "keep_days must be from 0 (no limit) to 36500"},
		{"POST", "/api/v1/retention/plan", `{"projects":["p","nope"]}`, `project \"nope\" does not exist`},
		{"POST", "/api/v1/retention/purge", `{"projects":["nope"]}`, `project \"nope\" does not exist`},
	} {
		got := b.send(bad.method, bad.path, bad.body)
		if got.status != http.StatusBadRequest || !strings.Contains(string(got.body), bad.want) {
			t.Errorf("%s %s %s: %d %s, want 400 naming %q", bad.method, bad.path, bad.body, got.status, got.body, bad.want)
		}
	}
	b.send("GET", "/api/v1/projects/nope/retention", "").wantError(t, http.StatusNotFound, CodeNotFound)
	var def RetentionDefault
	b.get("/api/v1/retention").want(t, http.StatusOK).json(t, &def)
	if def != (RetentionDefault{}) {
		t.Fatalf("a refused PUT changed the default: %+v", def)
	}
	b.get("/api/v1/projects/p/retention").want(t, http.StatusOK).json(t, &pr)
	if pr.Effective != (model.RetentionPolicy{KeepRuns: 1}) {
		t.Fatalf("a refused PUT changed the project's policy: %+v", pr)
	}

	// The default shows in a project without its own policy, and in the
	// settings list.
	b.send("PUT", "/api/v1/retention", `{"keep_days":30,"audit_days":90}`).want(t, http.StatusOK).json(t, &def)
	if def != (RetentionDefault{KeepDays: 30, AuditDays: 90}) {
		t.Fatalf("default after PUT: %+v", def)
	}
	b.get("/api/v1/projects/q/retention").want(t, http.StatusOK).json(t, &pr)
	if pr.KeepDays != nil || pr.Effective != (model.RetentionPolicy{KeepDays: 30}) {
		t.Fatalf("q under the default: %+v", pr)
	}
	b.get("/api/v1/projects/p/retention").want(t, http.StatusOK).json(t, &pr)
	if pr.Effective != (model.RetentionPolicy{KeepDays: 30, KeepRuns: 1}) {
		t.Fatalf("p's own keep_runs over the default's keep_days: %+v", pr)
	}
	var sl List[SettingValue]
	b.get("/api/v1/settings").want(t, http.StatusOK).json(t, &sl)
	found := false
	for _, s := range sl.Items {
		found = found || (s.Name == model.SettingRetentionKeepDays && s.Value == 30)
	}
	if !found {
		t.Fatalf("settings do not list %s = 30: %+v", model.SettingRetentionKeepDays, sl.Items)
	}

	// The run is not finished: the plan keeps it and says why; a purge
	// deletes nothing.
	var plan RetentionPlan
	b.send("POST", "/api/v1/projects/p/retention/plan", "").want(t, http.StatusOK).json(t, &plan)
	if len(plan.Instances) != 0 || plan.Kept[model.KeepUnfinished] != 1 {
		t.Fatalf("plan with one unfinished run: %+v", plan)
	}
	b.as(ed, "POST", "/api/v1/projects/p/retention/purge", "").want(t, http.StatusOK).json(t, &plan)
	if len(plan.Instances) != 0 {
		t.Fatalf("purge deleted %v", plan.Instances)
	}
	b.get("/api/v1/instances/"+itoa(run.ID)).want(t, http.StatusOK)
	var all RetentionRun
	b.send("POST", "/api/v1/retention/plan", "").want(t, http.StatusOK).json(t, &all)
	if len(all.Projects) != 2 || all.Audit == nil || all.Audit.Days != 90 {
		t.Fatalf("global plan: %+v", all)
	}
}
