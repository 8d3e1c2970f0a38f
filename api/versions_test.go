package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// etlV2YAML is etlYAML with a secret param, load's command changed and
// a task added after it.
var etlV2YAML = strings.NewReplacer(`params: {bizdate: "20260101"}`, "params: {bizdate: \"20260101\", pw: \"hunter3\"}\nsecret_params: [pw]",
	"command: echo load\n", "command: echo load all\n").Replace(etlYAML) +
	"  - name: report\n    command: echo report\n    depends_on: [load]\n"

// TestVersionDiffs: the diff of two versions and of a run's version and
// the latest, structured and as text, secrets masked; bad input is a 400;
// the routes' access as every project route's.
func TestVersionDiffs(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	b.mustProject("p")
	b.putSpec("p", "nightly_etl", "application/yaml", strings.Replace(etlV2YAML, "hunter3", "hunter2", 1)).want(t, http.StatusCreated)
	inst := b.mustRun("p", "")
	b.putSpec("p", "nightly_etl", "application/yaml", etlYAML).want(t, http.StatusCreated)
	b.putSpec("p", "nightly_etl", "application/yaml", etlV2YAML).want(t, http.StatusCreated)

	var d VersionDiff
	b.get("/api/v1/projects/p/workflows/nightly_etl/diff?from=2&to=latest").want(t, http.StatusOK).json(t, &d)
	if d.Same || d.From.Version != 2 || d.To.Version != 3 || strings.Join(d.TasksAdded, ",") != "report" ||
		len(d.TasksRemoved) != 0 || len(d.TasksChanged) != 1 || d.TasksChanged[0].Name != "load" ||
		len(d.EdgesAdded) != 1 || d.EdgesAdded[0].From != "load" || d.EdgesAdded[0].To != "report" || len(d.WorkflowFields) != 2 {
		t.Fatalf("diff v2 to latest: %+v", d)
	}
	if !strings.Contains(d.Text, "-    command: echo load\n+    command: echo load all\n") || !strings.HasPrefix(d.Text, "--- nightly_etl v2\n+++ nightly_etl v3\n") {
		t.Fatalf("text diff:\n%s", d.Text)
	}
	// v1 and v3 differ in a secret's value only: the diff shows the mask.
	b.get("/api/v1/projects/p/workflows/nightly_etl/diff?from=1").want(t, http.StatusOK).json(t, &d)
	raw := string(b.get("/api/v1/projects/p/workflows/nightly_etl/diff?from=1").body)
	if !d.Same || strings.Contains(raw, "hunter") || strings.Contains(raw, "sealed") {
		t.Fatalf("diff of a secret change: %s", raw)
	}

	// The run of v1 against the latest; its answer says both versions.
	dt := b.detail(inst.ID)
	if dt.Version != 1 || dt.LatestVersion != 3 || dt.GitCommit != "" {
		t.Fatalf("instance versions: %d latest %d commit %q", dt.Version, dt.LatestVersion, dt.GitCommit)
	}
	b.get("/api/v1/instances/"+itoa(inst.ID)+"/diff").want(t, http.StatusOK).json(t, &d)
	if d.From.Version != 1 || d.To.Version != 3 || !d.Same {
		t.Fatalf("instance diff: %+v", d)
	}

	for _, q := range []string{"", "?from=", "?from=0", "?from=abc", "?from=1&to=-2", "?from=latest&to=v2"} {
		e := b.get("/api/v1/projects/p/workflows/nightly_etl/diff"+q).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, "from") && !strings.Contains(e.Message, "to") {
			t.Fatalf("%s: message %q names no parameter", q, e.Message)
		}
	}
	b.get("/api/v1/projects/p/workflows/nightly_etl/diff?from=9").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/projects/p/workflows/nope/diff?from=1").wantError(t, http.StatusNotFound, CodeNotFound)

	ann := b.tokenOf("ann", model.RoleUser)
	for _, path := range []string{"/api/v1/projects/p/workflows/nightly_etl/diff?from=1", "/api/v1/instances/" + itoa(inst.ID) + "/diff"} {
		b.as("", "GET", path, "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
		b.as(ann, "GET", path, "").wantError(t, http.StatusNotFound, CodeNotFound)
	}
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	b.as(ann, "GET", "/api/v1/instances/"+itoa(inst.ID)+"/diff", "").want(t, http.StatusOK)
}

// TestActionVersion: rerun and recover_failed take a version ("latest" or
// a number); anything else, or a version on another action, is a 400
// that queues nothing; a viewer may not ask.
func TestActionVersion(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	ctx := context.Background()
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	if err := b.store.InstanceFinish(ctx, inst.ID, model.WorkflowFailed, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	b.putSpec("p", "nightly_etl", "application/yaml", etlV2YAML).want(t, http.StatusCreated)
	path := "/api/v1/instances/" + itoa(inst.ID) + "/actions"
	for _, body := range []string{`{"action":"rerun","version":0}`, `{"action":"rerun","version":"newest"}`,
		`{"action":"rerun","version":-1}`, `{"action":"rerun","version":1.5}`, `{"action":"resume","version":"latest"}`,
		`{"action":"rerun","version":3}`} {
		e := b.action(path, body, "").wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, "version") {
			t.Fatalf("%s: message %q", body, e.Message)
		}
	}
	b.action("/api/v1/task-instances/1/actions", `{"action":"kill","version":"latest"}`, "").wantError(t, http.StatusBadRequest, CodeBadRequest)
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	b.as(ann, "POST", path, `{"action":"rerun","version":"latest"}`).wantError(t, http.StatusForbidden, CodeForbidden)
	if got, _ := b.store.ActionClaim(ctx, 10); len(got) != 0 {
		t.Fatalf("refused requests queued %+v", got)
	}
	b.action(path, `{"action":"rerun","version":"latest"}`, "").want(t, http.StatusAccepted)
	got, err := b.store.ActionClaim(ctx, 10)
	if err != nil || len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("queued %+v %v", got, err)
	}
	b.action(path, `{"action":"recover_failed","version":"2"}`, "").want(t, http.StatusAccepted)
	if got, _ := b.store.ActionClaim(ctx, 10); len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("queued %+v", got)
	}
}
