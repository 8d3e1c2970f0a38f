package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

var timeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestHealthz(t *testing.T) {
	t.Parallel()
	var ready atomic.Bool
	b := setup(t, options{ready: ready.Load})
	b.get("/healthz").wantError(t, http.StatusServiceUnavailable, CodeUnavailable)
	ready.Store(true)
	var h Health
	b.get("/healthz").want(t, http.StatusOK).json(t, &h)
	if h.Status != "ok" {
		t.Fatalf("health %+v", h)
	}
}

func TestProjects(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})

	r := b.send("POST", "/api/v1/projects", `{"name":"etl","description":"nightly batches"}`).want(t, http.StatusCreated)
	var p Project
	r.json(t, &p)
	if p.Name != "etl" || p.Description != "nightly batches" || p.ID == 0 || r.header.Get("Location") != "/api/v1/projects/etl" {
		t.Fatalf("created %+v, location %q", p, r.header.Get("Location"))
	}
	if !strings.Contains(string(r.body), `"created_at":"`) || !timeRE.MatchString(p.CreatedAt.UTC().Format(TimeFormat)) {
		t.Fatalf("created_at in %s", r.body)
	}
	var raw map[string]any
	r.json(t, &raw)
	if s, _ := raw["created_at"].(string); !timeRE.MatchString(s) {
		t.Fatalf("created_at %q is not RFC 3339 UTC with milliseconds", s)
	}

	b.send("POST", "/api/v1/projects", `{"name":"etl"}`).wantError(t, http.StatusConflict, CodeConflict)

	for _, tc := range []struct{ name, body, want string }{
		{"bad name", `{"name":"a b"}`, "not valid"},
		{"empty name", `{"name":""}`, "not valid"},
		{"dot name", `{"name":".."}`, "not valid"},
		{"long name", `{"name":"` + strings.Repeat("x", 129) + `"}`, "not valid"},
		{"unknown field", `{"name":"x","owner":"me"}`, `unknown field "owner"`},
		{"bad json", `{"name":`, "invalid JSON"},
		{"wrong type", `{"name":5}`, `field "name"`},
		{"not an object", `[1]`, "invalid JSON"},
		{"trailing data", `{"name":"x"} {}`, "data after"},
		{"empty body", ``, "empty"},
		{"long description", `{"name":"x","description":"` + strings.Repeat("d", 1025) + `"}`, "description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.do("POST", "/api/v1/projects", "application/json", strings.NewReader(tc.body)).
				wantError(t, http.StatusBadRequest, CodeBadRequest)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}

	b.mustProject("adhoc")
	var list List[Project]
	b.get("/api/v1/projects").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 2 || list.Items[0].Name != "adhoc" || list.Items[1].Name != "etl" {
		t.Fatalf("rejected requests stored something or order is wrong: %+v", list.Items)
	}

	b.get("/api/v1/projects/etl").want(t, http.StatusOK).json(t, &p)
	if p.Name != "etl" {
		t.Fatalf("get %+v", p)
	}
	e := b.get("/api/v1/projects/nope").wantError(t, http.StatusNotFound, CodeNotFound)
	if !strings.Contains(e.Message, `"nope"`) {
		t.Fatalf("404 message %q does not name the project", e.Message)
	}
	b.get("/api/v1/projects/a%20b").wantError(t, http.StatusBadRequest, CodeBadRequest)
}

func TestApplyWorkflowVersions(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")

	var res ApplyResult
	b.putSpec("p", "nightly_etl", "application/yaml", etlYAML).want(t, http.StatusCreated).json(t, &res)
	if !res.Created || res.Version != 1 || res.Project != "p" || res.Name != "nightly_etl" || len(res.SpecHash) != 64 || res.CreatedAt.IsZero() {
		t.Fatalf("first apply %+v", res)
	}
	hash := res.SpecHash

	// The same spec again, and the same meaning in JSON with other key order
	// and defaults spelled out: no new version.
	b.putSpec("p", "nightly_etl", "application/yaml", etlYAML).want(t, http.StatusOK).json(t, &res)
	if res.Created || res.Version != 1 || res.SpecHash != hash {
		t.Fatalf("identical apply %+v", res)
	}
	sameJSON := `{"tasks":[{"name":"extract","type":"shell","command":"echo extract ${bizdate}","retries":2,"retry_interval":"30s"},
	  {"name":"load","command":"echo load","depends_on":["extract"]}],
	  "failure_strategy":"end","name":"nightly_etl","params":{"bizdate":"20260101"}}`
	b.putSpec("p", "nightly_etl", "application/json", sameJSON).want(t, http.StatusOK).json(t, &res)
	if res.Created || res.Version != 1 {
		t.Fatalf("equivalent JSON made a version: %+v", res)
	}

	// A change makes version 2.
	changed := strings.Replace(etlYAML, "echo load", "echo load2", 1)
	b.putSpec("p", "nightly_etl", "text/yaml; charset=utf-8", changed).want(t, http.StatusCreated).json(t, &res)
	if !res.Created || res.Version != 2 || res.SpecHash == hash {
		t.Fatalf("changed apply %+v", res)
	}

	// Name left out: taken from the path, in YAML and in JSON.
	noName := strings.Replace(etlYAML, "name: nightly_etl\n", "", 1)
	b.putSpec("p", "other", "application/yaml", noName).want(t, http.StatusCreated).json(t, &res)
	if res.Name != "other" || res.Version != 1 {
		t.Fatalf("nameless YAML %+v", res)
	}
	b.putSpec("p", "json_one", "application/json", `{"tasks":[{"name":"a","command":"true"}]}`).
		want(t, http.StatusCreated).json(t, &res)
	if res.Name != "json_one" {
		t.Fatalf("nameless JSON %+v", res)
	}
	// Nameless YAML without a final newline, and with a document end marker.
	b.putSpec("p", "nl", "application/yaml", "tasks:\n  - name: a\n    command: |\n      echo a").want(t, http.StatusCreated)
	b.putSpec("p", "docend", "application/yaml", "tasks:\n  - name: a\n    command: true\n...\n").want(t, http.StatusCreated)

	// Errors in a nameless spec still name the user's line.
	e := b.putSpec("p", "w", "application/yaml", "# a comment\ntasks:\n  - name: a\n    comand: x\n").wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "line 4") {
		t.Fatalf("message %q does not name line 4", e.Message)
	}

	var wf Workflow
	b.get("/api/v1/projects/p/workflows/nl").want(t, http.StatusOK).json(t, &wf)
	if !strings.Contains(string(wf.Spec), `"command":"echo a"`) {
		t.Fatalf("block scalar damaged by the name: %s", wf.Spec)
	}
}

func TestApplyWorkflowRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")

	for _, tc := range []struct {
		name, ct, body string
		status         int
		code, want     string
	}{
		{"unknown field", "application/yaml", etlYAML + "owner: me\n", 400, CodeBadRequest, "owner"},
		{"unknown field json", "application/json", `{"name":"w","tasks":[{"name":"a","command":"x","bogus":1}]}`, 400, CodeBadRequest, "bogus"},
		{"cycle", "application/yaml", "name: w\ntasks:\n  - {name: a, command: x, depends_on: [b]}\n  - {name: b, command: x, depends_on: [a]}\n", 400, CodeBadRequest, "cycle"},
		{"dangling dependency", "application/yaml", "name: w\ntasks:\n  - {name: a, command: x, depends_on: [zz]}\n", 400, CodeBadRequest, `"zz"`},
		{"duplicate task", "application/yaml", "name: w\ntasks:\n  - {name: a, command: x}\n  - {name: a, command: y}\n", 400, CodeBadRequest, "duplicate"},
		{"no tasks", "application/yaml", "name: w\ntasks: []\n", 400, CodeBadRequest, "no tasks"},
		{"bad yaml", "application/yaml", "name: w\ntasks: [\n", 400, CodeBadRequest, "line"},
		{"bad json", "application/json", `{"name":"w",`, 400, CodeBadRequest, "invalid workflow spec"},
		{"empty", "", "", 400, CodeBadRequest, "empty"},
		{"name mismatch", "application/yaml", strings.Replace(etlYAML, "nightly_etl", "other", 1), 400, CodeBadRequest, "must match"},
		{"json type with yaml body", "application/json", etlYAML, 400, CodeBadRequest, "not a JSON object"},
		{"unsupported media type", "application/xml", etlYAML, 415, CodeUnsupportedMedia, "application/xml"},
		// The types a page of another site may send without asking, and none.
		{"text/plain", "text/plain", etlYAML, 415, CodeUnsupportedMedia, "application/yaml"},
		{"form", "application/x-www-form-urlencoded", etlYAML, 415, CodeUnsupportedMedia, "application/json or application/yaml"},
		{"multipart", "multipart/form-data; boundary=x", etlYAML, 415, CodeUnsupportedMedia, "multipart/form-data"},
		{"no Content-Type", "", etlYAML, 415, CodeUnsupportedMedia, "no Content-Type"},
		{"bad Content-Type", "yaml;;", etlYAML, 415, CodeUnsupportedMedia, "bad Content-Type"},
		{"spec over the spec limit", "application/yaml", etlYAML + "# " + strings.Repeat("x", spec.MaxSpecBytes) + "\n", 413, CodePayloadTooLarge, "limit"},
		{"over the task limit", "application/yaml", manyTasks(spec.MaxTasks + 1), 400, CodeBadRequest,
			fmt.Sprintf("workflow has %d tasks, the limit is %d", spec.MaxTasks+1, spec.MaxTasks)},
		{"alias bomb", "application/yaml", "name: w\nparams:\n  big: &s \"" + strings.Repeat("x", spec.MaxSpecBytes/10) + "\"\n" +
			aliasKeys(20) + "tasks:\n  - {name: a, command: x}\n", 400, CodeBadRequest, "YAML aliases expand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "w"
			if strings.Contains(tc.body, "nightly_etl") || tc.name == "name mismatch" {
				name = "nightly_etl"
			}
			e := b.putSpec("p", name, tc.ct, tc.body).wantError(t, tc.status, tc.code)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}
	b.putSpec("nope", "nightly_etl", "application/yaml", etlYAML).wantError(t, http.StatusNotFound, CodeNotFound)
	b.putSpec("p", "bad%20name", "application/yaml", etlYAML).wantError(t, http.StatusBadRequest, CodeBadRequest)

	var list List[Workflow]
	b.get("/api/v1/projects/p/workflows").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("rejected specs were stored: %+v", list.Items)
	}
}

// manyTasks is a spec of n independent tasks named w.
func manyTasks(n int) string {
	var b strings.Builder
	b.WriteString("name: w\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: t%d, command: x}\n", i)
	}
	return b.String()
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")
	big := strings.Repeat("#", MaxBodyBytes+1)

	// Content-Length over the limit: refused before reading.
	e := b.putSpec("p", "w", "application/yaml", big).wantError(t, http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
	if !strings.Contains(e.Message, "limit") {
		t.Fatalf("message %q", e.Message)
	}
	// Chunked (no Content-Length): refused while reading.
	req, _ := http.NewRequest("PUT", b.srv.URL+"/api/v1/projects/p/workflows/w", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+b.token)
	res, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked oversized body: status %d", res.StatusCode)
	}
	b.send("POST", "/api/v1/projects", `{"name":"x","description":"`+big+`"}`).
		wantError(t, http.StatusRequestEntityTooLarge, CodePayloadTooLarge)

	var list List[Project]
	b.get("/api/v1/projects").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 1 {
		t.Fatalf("projects %+v", list.Items)
	}
}

func TestWorkflowReads(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	b.putSpec("p", "nightly_etl", "application/yaml", strings.Replace(etlYAML, "echo load", "echo v2", 1)).want(t, http.StatusCreated)
	b.putSpec("p", "adhoc", "application/yaml", "tasks:\n  - {name: a, command: x}\n").want(t, http.StatusCreated)

	var wf Workflow
	b.get("/api/v1/projects/p/workflows/nightly_etl").want(t, http.StatusOK).json(t, &wf)
	if wf.Version != 2 || !strings.Contains(string(wf.Spec), "echo v2") || wf.Spec[0] != '{' {
		t.Fatalf("latest %+v spec %s", wf, wf.Spec)
	}
	b.get("/api/v1/projects/p/workflows/nightly_etl?version=1").want(t, http.StatusOK).json(t, &wf)
	if wf.Version != 1 || !strings.Contains(string(wf.Spec), "echo load") {
		t.Fatalf("v1 %+v", wf)
	}
	e := b.get("/api/v1/projects/p/workflows/nightly_etl?version=abc").wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "version") {
		t.Fatalf("message %q", e.Message)
	}
	b.get("/api/v1/projects/p/workflows/nightly_etl?version=0").wantError(t, http.StatusBadRequest, CodeBadRequest)
	b.get("/api/v1/projects/p/workflows/nightly_etl?version=9").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/projects/p/workflows/nope").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/projects/nope/workflows/nightly_etl").wantError(t, http.StatusNotFound, CodeNotFound)

	var list List[Workflow]
	b.get("/api/v1/projects/p/workflows").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 2 || list.Items[0].Name != "adhoc" || list.Items[1].Name != "nightly_etl" ||
		list.Items[1].Version != 2 || list.Items[1].Spec != nil {
		t.Fatalf("list %+v", list.Items)
	}
	b.get("/api/v1/projects/nope/workflows").wantError(t, http.StatusNotFound, CodeNotFound)

	b.get("/api/v1/projects/p/workflows/nightly_etl/versions").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 2 || list.Items[0].Version != 2 || list.Items[1].Version != 1 {
		t.Fatalf("versions %+v", list.Items)
	}
	b.get("/api/v1/projects/p/workflows/nope/versions").wantError(t, http.StatusNotFound, CodeNotFound)
}

func TestDeleteWorkflow(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")

	e := b.do("DELETE", "/api/v1/projects/p/workflows/nightly_etl", "", nil).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "unfinished") {
		t.Fatalf("message %q", e.Message)
	}
	b.get("/api/v1/projects/p/workflows/nightly_etl").want(t, http.StatusOK)

	if err := b.store.InstanceFinish(context.Background(), inst.ID, model.WorkflowSucceeded, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	r := b.do("DELETE", "/api/v1/projects/p/workflows/nightly_etl", "", nil).want(t, http.StatusNoContent)
	if len(r.body) != 0 {
		t.Fatalf("204 with body %q", r.body)
	}
	b.get("/api/v1/projects/p/workflows/nightly_etl").wantError(t, http.StatusNotFound, CodeNotFound)
	b.do("DELETE", "/api/v1/projects/p/workflows/nightly_etl", "", nil).wantError(t, http.StatusNotFound, CodeNotFound)
	b.do("DELETE", "/api/v1/projects/nope/workflows/x", "", nil).wantError(t, http.StatusNotFound, CodeNotFound)
}

func TestRun(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	b.putSpec("p", "nightly_etl", "application/yaml", strings.Replace(etlYAML, "echo load", "echo v2", 1)).want(t, http.StatusCreated)

	r := b.do("POST", "/api/v1/projects/p/workflows/nightly_etl/runs", "", nil).want(t, http.StatusCreated)
	var inst Instance
	r.json(t, &inst)
	if inst.ID == 0 || inst.State != "submitted" || inst.Version != 2 || inst.Project != "p" || inst.Workflow != "nightly_etl" ||
		inst.Priority != "medium" || inst.WorkerGroup != "default" || inst.RunTimes != 1 || inst.StartTime != nil {
		t.Fatalf("run %+v", inst)
	}
	if r.header.Get("Location") != "/api/v1/instances/"+itoa(inst.ID) {
		t.Fatalf("location %q", r.header.Get("Location"))
	}
	if b.notified.Load() != 1 {
		t.Fatalf("notify called %d times", b.notified.Load())
	}

	inst = b.mustRun("p", `{"params":{"bizdate":"20260102","_x1":"y","multi":"a\tb\r\nc"},"version":1,"priority":"high","worker_group":"gpu"}`)
	if inst.Version != 1 || inst.Priority != "high" || inst.WorkerGroup != "gpu" || inst.Params["bizdate"] != "20260102" {
		t.Fatalf("run with options %+v", inst)
	}
	if b.notified.Load() != 2 {
		t.Fatalf("notify called %d times", b.notified.Load())
	}

	for _, tc := range []struct {
		name, path, body string
		status           int
		code, want       string
	}{
		{"bad param name", "nightly_etl", `{"params":{"1x":"a","ok":"b","a-b":"c"}}`, 400, CodeBadRequest, `"1x", "a-b"`},
		{"bad time param", "nightly_etl", `{"params":{"ok":"$[yyyyMMdd]","bizdate":"$[yyyyQQ-1]"}}`, 400, CodeBadRequest,
			`param "bizdate": $[yyyyQQ-1]: unknown pattern "QQ"`},
		{"param not a string", "nightly_etl", `{"params":{"a":1}}`, 400, CodeBadRequest, "params"},
		{"NUL in a param", "nightly_etl", `{"params":{"ok":"a\tb\nc\r","P":"x\u0000y"}}`, 400, CodeBadRequest,
			`param "P": control character U+0000 at byte 1`},
		{"escape in a param", "nightly_etl", `{"params":{"P":"\u001b[31m"}}`, 400, CodeBadRequest, `param "P": control character U+001B`},
		{"DEL in a param", "nightly_etl", `{"params":{"P":"a\u007f"}}`, 400, CodeBadRequest, `param "P": control character U+007F`},
		{"bad priority", "nightly_etl", `{"priority":"urgent"}`, 400, CodeBadRequest, "urgent"},
		{"bad worker group", "nightly_etl", `{"worker_group":"a/b"}`, 400, CodeBadRequest, "worker_group"},
		{"negative version", "nightly_etl", `{"version":-1}`, 400, CodeBadRequest, "version"},
		{"unknown field", "nightly_etl", `{"start_node":["a"]}`, 400, CodeBadRequest, "start_node"},
		{"bad json", "nightly_etl", `{"params":`, 400, CodeBadRequest, "invalid JSON"},
		{"missing version", "nightly_etl", `{"version":7}`, 404, CodeNotFound, "nightly_etl"},
		{"missing workflow", "nope", ``, 404, CodeNotFound, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.send("POST", "/api/v1/projects/p/workflows/"+tc.path+"/runs", tc.body).wantError(t, tc.status, tc.code)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}
	b.send("POST", "/api/v1/projects/nope/workflows/nightly_etl/runs", "").wantError(t, http.StatusNotFound, CodeNotFound)

	var list InstanceList
	b.get("/api/v1/instances").want(t, http.StatusOK).json(t, &list)
	if list.Total != 2 || b.notified.Load() != 2 {
		t.Fatalf("rejected runs stored or notified: total %d, notified %d", list.Total, b.notified.Load())
	}
}

func TestInstances(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	b.mustWorkflow("p")
	b.mustWorkflow("q")
	first := b.mustRun("p", `{"params":{"k":"v"}}`)
	for range 3 {
		b.mustRun("p", "")
	}
	b.mustRun("q", "")

	// The master claims the first run and writes two attempts of a task.
	claimed, err := b.store.InstanceClaimCommands(ctx, "master-1:5678", 1, 1)
	if err != nil || len(claimed) != 1 || claimed[0].ID != first.ID {
		t.Fatalf("claim %+v %v", claimed, err)
	}
	now := time.Now().UTC()
	exit := 1
	tasks := []*model.TaskInstance{
		{WorkflowInstanceID: first.ID, Name: "extract", Type: "shell", State: model.TaskFailed, Attempt: 1, Superseded: true,
			Host: "worker-1:1234", PID: 42, ExitCode: &exit, SubmitTime: &now, StartTime: &now, EndTime: &now},
		{WorkflowInstanceID: first.ID, Name: "extract", Type: "shell", State: model.TaskSubmitted, Attempt: 2, SubmitTime: &now},
	}
	if err := b.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}

	var d InstanceDetail
	r := b.get("/api/v1/instances/"+itoa(first.ID)).want(t, http.StatusOK)
	r.json(t, &d)
	if d.ID != first.ID || d.State != "running" || d.Host != "master-1:5678" || d.StartTime == nil || d.Params["k"] != "v" || len(d.Tasks) != 2 {
		t.Fatalf("instance %+v", d)
	}
	t0, t1 := d.Tasks[0], d.Tasks[1]
	if t0.Name != "extract" || t0.Attempt != 1 || !t0.Superseded || t0.State != "failed" || t0.Host != "worker-1:1234" ||
		t0.PID != 42 || t0.ExitCode == nil || *t0.ExitCode != 1 || t0.EndTime == nil ||
		t1.Attempt != 2 || t1.Superseded || t1.ExitCode != nil || t1.StartTime != nil {
		t.Fatalf("tasks %+v %+v", t0, t1)
	}
	var raw map[string]any
	r.json(t, &raw)
	for _, k := range []string{"start_time", "created_at"} {
		if s, _ := raw[k].(string); !timeRE.MatchString(s) {
			t.Fatalf("%s = %v", k, raw[k])
		}
	}
	if raw["end_time"] != nil {
		t.Fatalf("end_time = %v, want null", raw["end_time"])
	}

	var ti TaskInstance
	b.get("/api/v1/task-instances/"+itoa(tasks[0].ID)).want(t, http.StatusOK).json(t, &ti)
	if ti.ID != tasks[0].ID || ti.WorkflowInstanceID != first.ID || ti.Attempt != 1 {
		t.Fatalf("task instance %+v", ti)
	}

	var list InstanceList
	b.get("/api/v1/instances").want(t, http.StatusOK).json(t, &list)
	if list.Total != 5 || len(list.Items) != 5 || list.Limit != 50 || list.Offset != 0 || list.Items[0].ID < list.Items[4].ID {
		t.Fatalf("list %+v", list)
	}
	b.get("/api/v1/instances?project=p&limit=2&offset=1").want(t, http.StatusOK).json(t, &list)
	if list.Total != 4 || len(list.Items) != 2 || list.Limit != 2 || list.Offset != 1 || list.Items[0].Project != "p" {
		t.Fatalf("paged %+v", list)
	}
	// By cursor: the same five newest first, two a page, nothing counted.
	var ids []int64
	for cursor, pages := "", 0; ; pages++ {
		var page InstanceList
		b.get("/api/v1/instances?limit=2&cursor="+cursor).want(t, http.StatusOK).json(t, &page)
		if page.Total != -1 || len(page.Items) > 2 || pages > 3 {
			t.Fatalf("cursor page %d: %+v", pages, page)
		}
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	b.get("/api/v1/instances").want(t, http.StatusOK).json(t, &list)
	if len(ids) != 5 || fmt.Sprint(ids) != fmt.Sprint(func() (out []int64) {
		for _, it := range list.Items {
			out = append(out, it.ID)
		}
		return out
	}()) {
		t.Fatalf("cursor pages %v, want the list %+v", ids, list.Items)
	}
	b.get("/api/v1/instances?state=running").want(t, http.StatusOK).json(t, &list)
	if list.Total != 1 || list.Items[0].ID != first.ID {
		t.Fatalf("by state %+v", list)
	}
	b.get("/api/v1/instances?project=q&workflow=nightly_etl&state=submitted").want(t, http.StatusOK).json(t, &list)
	if list.Total != 1 {
		t.Fatalf("by workflow %+v", list)
	}

	for _, tc := range []struct{ path, want string }{
		{"/api/v1/instances?state=done", "state"},
		{"/api/v1/instances?limit=0", "limit"},
		{"/api/v1/instances?limit=1001", "limit"},
		{"/api/v1/instances?limit=ten", "limit"},
		{"/api/v1/instances?offset=-1", "offset"},
		{"/api/v1/instances?cursor=xx", "cursor"},
		{"/api/v1/instances?cursor=&offset=2", "offset"},
		{"/api/v1/instances?project=a%20b", "project"},
		{"/api/v1/instances/abc", "id"},
		{"/api/v1/instances/0", "id"},
		{"/api/v1/instances/-3", "id"},
		{"/api/v1/instances/99999999999999999999", "id"},
		{"/api/v1/task-instances/x", "id"},
		{"/api/v1/task-instances/x/log", "id"},
	} {
		e := b.get(tc.path).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, tc.want) {
			t.Fatalf("%s: message %q lacks %q", tc.path, e.Message, tc.want)
		}
	}
	b.get("/api/v1/instances/999").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/task-instances/999").wantError(t, http.StatusNotFound, CodeNotFound)
}

func TestTaskLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logs := &fakeLogs{data: []byte("line one\nline two\n")}
	b := setup(t, options{logs: logs})
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	tasks := []*model.TaskInstance{
		{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning, Attempt: 1, Host: "w1:1234", LogPath: "/logs/1.log"},
		{WorkflowInstanceID: inst.ID, Name: "load", Type: "shell", State: model.TaskSubmitted, Attempt: 1},
	}
	if err := b.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/task-instances/" + itoa(tasks[0].ID) + "/log"

	r := b.get(path).want(t, http.StatusOK)
	if string(r.body) != "line one\nline two\n" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") ||
		r.header.Get("X-Next-Offset") != "18" {
		t.Fatalf("log %q, headers %v", r.body, r.header)
	}
	r = b.get(path+"?offset=5&limit=3").want(t, http.StatusOK)
	if string(r.body) != "one" || r.header.Get("X-Next-Offset") != "8" {
		t.Fatalf("page %q next %q", r.body, r.header.Get("X-Next-Offset"))
	}
	if c := logs.calls[0]; c.Host != "w1:1234" || c.LogPath != "/logs/1.log" {
		t.Fatalf("reader got %+v", c)
	}
	b.get(path+"?limit=0").wantError(t, http.StatusBadRequest, CodeBadRequest)
	b.get(path+"?offset=x").wantError(t, http.StatusBadRequest, CodeBadRequest)
	b.get("/api/v1/task-instances/999/log").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/task-instances/"+itoa(tasks[1].ID)+"/log").wantError(t, http.StatusConflict, CodeConflict)

	logs.err = errors.New("connection refused")
	e := b.get(path).wantError(t, http.StatusBadGateway, CodeBadGateway)
	if !strings.Contains(e.Message, "w1:1234") || !strings.Contains(e.Message, "connection refused") {
		t.Fatalf("message %q", e.Message)
	}

	nologs := setup(t, options{})
	nologs.get("/api/v1/task-instances/1/log").wantError(t, http.StatusServiceUnavailable, CodeUnavailable)
}

func TestCluster(t *testing.T) {
	t.Parallel()
	setup(t, options{}).get("/api/v1/cluster").wantError(t, http.StatusNotImplemented, CodeNotImplemented)

	b := setup(t, options{cluster: func(context.Context) (any, error) {
		return map[string]any{"leader": "m1:5678", "workers": []string{"w1"}}, nil
	}})
	r := b.get("/api/v1/cluster").want(t, http.StatusOK)
	if !strings.Contains(string(r.body), `"leader":"m1:5678"`) {
		t.Fatalf("cluster %s", r.body)
	}

	b = setup(t, options{cluster: func(context.Context) (any, error) { return nil, errors.New("registry down") }})
	e := b.get("/api/v1/cluster").wantError(t, http.StatusServiceUnavailable, CodeUnavailable)
	if !strings.Contains(e.Message, "registry down") {
		t.Fatalf("message %q", e.Message)
	}
	b = setup(t, options{cluster: func(context.Context) (any, error) { return func() {}, nil }})
	b.get("/api/v1/cluster").wantError(t, http.StatusInternalServerError, CodeInternal)
}

func TestRouting(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})

	e := b.get("/api/v1/nope").wantError(t, http.StatusNotFound, CodeNotFound)
	if !strings.Contains(e.Message, "/api/v1/nope") {
		t.Fatalf("message %q", e.Message)
	}
	b.get("/api/v1/projects/").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/ui/nope.js").wantError(t, http.StatusNotFound, CodeNotFound)
	b.do("POST", "/", "", nil).wantError(t, http.StatusNotFound, CodeNotFound)

	r := b.do("DELETE", "/api/v1/projects", "", nil)
	r.wantError(t, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if r.header.Get("Allow") != "GET, HEAD, POST" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	r = b.do("POST", "/api/v1/projects/p/workflows/w", "", nil)
	r.wantError(t, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if r.header.Get("Allow") != "DELETE, GET, HEAD, PUT" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	b.do("PUT", "/api/v1/instances/1", "", nil).wantError(t, http.StatusMethodNotAllowed, CodeMethodNotAllowed)

	// Request ids: a sane one is echoed, a missing or odd one replaced.
	req, _ := http.NewRequest("GET", b.srv.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "abc-123")
	res, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("request id %q", res.Header.Get("X-Request-Id"))
	}
	req.Header.Set("X-Request-Id", "not a sane id")
	res, err = b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if id := res.Header.Get("X-Request-Id"); id == "" || strings.Contains(id, " ") {
		t.Fatalf("request id %q", id)
	}

	r = b.get("/api/v1/openapi.yaml").want(t, http.StatusOK)
	if r.header.Get("Content-Type") != "application/yaml" || !strings.HasPrefix(string(r.body), "openapi: 3") {
		t.Fatalf("openapi %q...", r.body[:min(len(r.body), 40)])
	}

	// Every request is in the access log with its request id and status.
	found := false
	for _, e := range b.logs.FilterMessage("request").All() {
		f := e.ContextMap()
		if f["path"] == "/api/v1/nope" && f["status"] == int64(404) && f["request_id"] != "" && e.LoggerName == "api" {
			found = true
		}
	}
	if !found {
		t.Fatal("no access log entry for GET /api/v1/nope")
	}
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	b := setup(t, options{
		cluster: func(context.Context) (any, error) { panic("boom") },
		logs:    panicLogs{},
	})
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	tasks := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning, Attempt: 1, Host: "w1:1"}}
	if err := b.store.TaskInsert(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}

	for range 3 {
		b.get("/api/v1/cluster").wantError(t, http.StatusInternalServerError, CodeInternal)
		b.get("/api/v1/task-instances/"+itoa(tasks[0].ID)+"/log").wantError(t, http.StatusInternalServerError, CodeInternal)
		b.get("/healthz").want(t, http.StatusOK)
	}
	panics := b.logs.FilterMessage("handler panic").All()
	if len(panics) != 6 {
		t.Fatalf("%d panics logged, want 6", len(panics))
	}
	f := panics[0].ContextMap()
	if f["panic"] != "boom" || !strings.Contains(f["stack"].(string), "goroutine") {
		t.Fatalf("panic log %v", f)
	}
	var statuses []int64
	for _, e := range b.logs.FilterMessage("request").All() {
		if e.ContextMap()["path"] == "/api/v1/cluster" {
			statuses = append(statuses, e.ContextMap()["status"].(int64))
		}
	}
	if len(statuses) != 3 || statuses[0] != 500 {
		t.Fatalf("access log statuses %v", statuses)
	}
}

type panicLogs struct{}

func (panicLogs) ReadLog(context.Context, model.TaskInstance, int64, int64) ([]byte, error) {
	var m map[string]int
	m["x"]++ // a real nil-map panic, not only panic(string)
	return nil, nil
}

func TestStoreErrorMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
	}{
		{store.ErrNotFound, 404},
		{store.ErrConflict, 409},
	} {
		var he *httpError
		if !errors.As(storeError(tc.err), &he) || he.status != tc.status {
			t.Fatalf("%v -> %+v", tc.err, he)
		}
	}
	if errors.As(storeError(errors.New("disk")), new(*httpError)) {
		t.Fatal("an unknown error must stay a 500")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// aliasKeys is n params naming the anchor s.
func aliasKeys(n int) string {
	var sb strings.Builder
	for i := range n {
		sb.WriteString("  k" + strconv.Itoa(i) + ": *s\n")
	}
	return sb.String()
}
