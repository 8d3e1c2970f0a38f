package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestStartPlans: plans of a rerun from a task and of a backfill: bad
// bodies are 400s naming the problem; the plans reach b's run downstream;
// grants hold per project (an operator of a alone cannot plan into b, and
// with view on b cannot apply, named); the admin's apply writes exactly
// the planned backfill; a plan made before another backfill covered a time
// is refused, naming it.
func TestStartPlans(t *testing.T) {
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
	var instB Instance
	b.send("POST", "/api/v1/projects/b/workflows/report/runs", "").want(t, http.StatusCreated).json(t, &instB)
	if err := b.store.InstanceFinish(ctx, instB.ID, model.WorkflowSucceeded, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	runPlan := "/api/v1/projects/a/workflows/nightly_etl/runs/plan"
	bfPlan := "/api/v1/projects/a/workflows/nightly_etl/backfill/plan"
	today := time.Now().UTC().Truncate(24 * time.Hour)
	five := fmt.Sprintf(`{"start":%q,"end":%q,"cron":"0 0 * * *","downstream":"all"}`,
		today.AddDate(0, 0, -4).Format(time.RFC3339), today.Format(time.RFC3339))

	for _, c := range []struct{ path, body, want string }{
		{runPlan, `{"downstream":"all"}`, "start_nodes is required"},
		{runPlan, `{"start_nodes":["nope"],"scope":"downstream"}`, `has no task "nope"`},
		{runPlan, `{"start_nodes":["load"],"scope":"sideways"}`, "scope"},
		{runPlan, `{"start_nodes":["load"],"downstream":"some"}`, "none, direct or all"},
		{runPlan, `{"start_nodes":["load"],"secret_params":["x"],"params":{"x":"1"}}`, "secret_params"},
		{runPlan, `{"start_nodes":["load"],"params":{"1x":"1"}}`, "environment variable name"},
		{bfPlan, `{"end":"2026-01-01T00:00:00Z","cron":"0 0 * * *"}`, "start is required"},
		{bfPlan, `{"start":"2026-01-02T00:00:00Z","end":"2026-01-01T00:00:00Z","cron":"0 0 * * *"}`, "is before start"},
		{bfPlan, `{"start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z"}`, "has no schedule"},
		{bfPlan, `{"start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z","cron":"0 0 * * *","downstream":"x"}`, "none, direct or all"},
	} {
		if e := b.send("POST", c.path, c.body).wantError(t, http.StatusBadRequest, CodeBadRequest); !strings.Contains(e.Message, c.want) {
			t.Fatalf("%s %s: %q lacks %q", c.path, c.body, e.Message, c.want)
		}
	}
	b.send("POST", "/api/v1/projects/a/workflows/nope/runs/plan", `{"start_nodes":["load"]}`).wantError(t, http.StatusNotFound, CodeNotFound)
	var rf Plan
	b.send("POST", runPlan, `{"start_nodes":["load"],"scope":"downstream","downstream":"all"}`).want(t, http.StatusCreated).json(t, &rf)
	if len(rf.Instances) != 2 || rf.Instances[0].ID != -1 || !rf.Instances[0].New || rf.Instances[0].Action != "rerun_from" ||
		len(rf.Instances[0].Tasks) != 1 || rf.Instances[0].Tasks[0].Name != "load" || rf.Instances[1].ID != instB.ID ||
		strings.Join(rf.Projects, ",") != "a,b" || rf.Start == nil || rf.Start.Version != 1 {
		t.Fatalf("rerun-from plan %+v", rf)
	}
	var bf Plan
	b.send("POST", bfPlan, five).want(t, http.StatusCreated).json(t, &bf)
	if len(bf.Instances) != 6 || bf.Instances[5].ID != instB.ID || bf.Instances[5].After[0] != -5 || bf.Action != "backfill" {
		t.Fatalf("backfill plan %+v", bf.Instances)
	}
	for i, in := range bf.Instances[:5] {
		if in.ScheduleTime == nil || !in.ScheduleTime.Equal(today.AddDate(0, 0, i-4)) || len(in.Tasks) != 2 {
			t.Fatalf("run %d of the backfill plan %+v", i, in)
		}
	}
	if bf.Estimate.P50 < 5*bf.Instances[0].Estimate.P50 {
		t.Fatalf("one at a time, the whole takes five runs: %+v vs %+v", bf.Estimate, bf.Instances[0].Estimate)
	}

	// Access. An operator of a alone: the plan reaching b is refused
	// without naming it; with view on b she plans, and her apply is 403
	// naming b. A viewer of a cannot plan; no grant is 404.
	for _, path := range []string{runPlan, bfPlan} {
		body := map[string]string{runPlan: `{"start_nodes":["load"],"downstream":"all"}`, bfPlan: five}[path]
		b.as("", "POST", path, body).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
		b.as(b.tokenOf("bob", model.RoleUser), "POST", path, body).wantError(t, http.StatusNotFound, CodeNotFound)
	}
	vic := b.tokenOf("vic", model.RoleUser)
	b.send("PUT", "/api/v1/projects/a/grants/vic", `{"level":"view"}`).want(t, http.StatusOK)
	b.as(vic, "POST", bfPlan, five).wantError(t, http.StatusForbidden, CodeForbidden)
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/a/grants/ann", `{"level":"operate"}`).want(t, http.StatusOK)
	if e := b.as(ann, "POST", bfPlan, five).wantError(t, http.StatusForbidden, CodeForbidden); strings.Contains(e.Message, `"b"`) || !strings.Contains(e.Message, "1 project(s)") {
		t.Fatalf("a backfill plan into a hidden project: %s", e.Message)
	}
	b.as(ann, "GET", "/api/v1/plans/"+itoa(bf.ID), "").wantError(t, http.StatusNotFound, CodeNotFound)
	ed := b.tokenOf("ed", model.RoleUser)
	b.send("PUT", "/api/v1/projects/a/grants/ed", `{"level":"edit"}`).want(t, http.StatusOK)
	if e := b.as(ed, "POST", runPlan, `{"start_nodes":["load"],"downstream":"direct"}`).wantError(t, http.StatusForbidden, CodeForbidden); !strings.Contains(e.Message, "1 project(s)") {
		t.Fatalf("an editor of a alone, into b: %s", e.Message)
	}
	var edPlan Plan
	b.as(ed, "POST", runPlan, `{"start_nodes":["load"]}`).want(t, http.StatusCreated).json(t, &edPlan)
	if len(edPlan.Instances) != 1 || edPlan.CreatedBy != "ed" {
		t.Fatalf("the editor's plan without downstream %+v", edPlan)
	}
	b.send("PUT", "/api/v1/projects/b/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	var annPlan Plan
	b.as(ann, "POST", bfPlan, five).want(t, http.StatusCreated).json(t, &annPlan)
	if e := b.as(ann, "POST", "/api/v1/plans/"+itoa(annPlan.ID)+"/apply", "").wantError(t, http.StatusForbidden, CodeForbidden); !strings.Contains(e.Message, `has view on project "b"`) {
		t.Fatalf("apply without operate on b: %s", e.Message)
	}
	if bs, _ := b.store.BackfillList(ctx, store.BackfillFilter{}); len(bs) != 0 {
		t.Fatalf("refused requests wrote backfills %+v", bs)
	}

	// The admin applies: the backfill of exactly the planned times and the
	// rerun of b's run.
	var applied Plan
	b.send("POST", "/api/v1/plans/"+itoa(bf.ID)+"/apply", "").want(t, http.StatusAccepted).json(t, &applied)
	if applied.BackfillID == 0 || len(applied.Commands) != 1 {
		t.Fatalf("applied %+v", applied)
	}
	var got struct {
		Times []time.Time `json:"times"`
	}
	b.get("/api/v1/backfills/"+itoa(applied.BackfillID)).want(t, http.StatusOK).json(t, &got)
	if len(got.Times) != 5 {
		t.Fatalf("backfill %+v", got)
	}
	for i, at := range got.Times {
		if !at.Equal(*bf.Instances[i].ScheduleTime) {
			t.Fatalf("time %d: backfill %s, plan %s", i, at, bf.Instances[i].ScheduleTime)
		}
	}
	// ann's plan saw no backfill over the range: now one runs.
	if e := b.send("POST", "/api/v1/plans/"+itoa(annPlan.ID)+"/apply", "").wantError(t, http.StatusConflict, CodeConflict); !strings.Contains(e.Message,
		"running backfills of a/nightly_etl over the range: was none, now "+itoa(applied.BackfillID)) {
		t.Fatalf("stale apply: %s", e.Message)
	}
	// The rerun from load applies: a new run of version 1 from load.
	b.send("POST", "/api/v1/plans/"+itoa(rf.ID)+"/apply", "").want(t, http.StatusConflict) // b's run has a rerun waiting now
}

// TestStartPlansRefuseSecrets: a param the workflow marks secret would be
// kept readable in a plan: both plan routes refuse it, naming it.
func TestStartPlansRefuseSecrets(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	b.mustProject("a")
	// A param the workflow marks secret would be kept readable: refused.
	b.putSpec("a", "sealed", "application/yaml", "name: sealed\nparams: {pw: x}\nsecret_params: [pw]\ntasks:\n  - {name: s, command: \"true\"}\n").want(t, http.StatusCreated)
	for path, body := range map[string]string{
		"/api/v1/projects/a/workflows/sealed/runs/plan":     `{"start_nodes":["s"],"params":{"pw":"y"}}`,
		"/api/v1/projects/a/workflows/sealed/backfill/plan": `{"start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z","cron":"0 0 * * *","params":{"pw":"y"}}`,
	} {
		if e := b.send("POST", path, body).wantError(t, http.StatusBadRequest, CodeBadRequest); !strings.Contains(e.Message, `params "pw": the workflow marks them secret`) {
			t.Fatalf("%s: %s", path, e.Message)
		}
	}

}
