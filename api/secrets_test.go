package api

import (
	"github.com/beluga-scheduler/beluga/testkit/authtest"

	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
)

// setupSealed is setup with a store that seals secret params, as every
// server's is.
func setupSealed(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core)
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "beluga.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sec, _ := clusterkey.New([]byte("api-test-cluster-secret"))
	box, err := secret.NewBox(sec)
	if err != nil {
		t.Fatal(err)
	}
	st = st.WithSecrets(box)
	b := &bundle{t: t, store: st, logs: logs, token: authtest.Admin(t, st)}
	b.srv = httptest.NewServer(NewHandler(Deps{Store: st, Notify: func() { b.notified.Add(1) }, Log: log}))
	t.Cleanup(b.srv.Close)
	return b
}

const (
	apiWfSecret  = "api-wf-Secret-1"
	apiRunSecret = "api-run-Secret-2"
)

const secretYAML = `name: nightly_etl
params: {bizdate: "20260101", db_password: "` + apiWfSecret + `"}
secret_params: [db_password]
tasks:
  - name: extract
    command: echo extract ${bizdate}
`

// noSecret fails when an answer shows a secret's plaintext or its sealed
// form.
func noSecret(t *testing.T, what string, r resp) resp {
	t.Helper()
	for _, s := range []string{apiWfSecret, apiRunSecret, secret.Prefix} {
		if strings.Contains(string(r.body), s) {
			t.Fatalf("%s shows %q: %s", what, s, r.body)
		}
	}
	return r
}

func TestSecretParamsMaskedInAnswers(t *testing.T) {
	b := setupSealed(t)
	b.mustProject("p")
	put := b.putSpec("p", "nightly_etl", "application/yaml", secretYAML).want(t, http.StatusCreated)
	noSecret(t, "PUT answer", put)
	wf := noSecret(t, "workflow GET", b.get("/api/v1/projects/p/workflows/nightly_etl").want(t, http.StatusOK))
	if !strings.Contains(string(wf.body), `"db_password":"***"`) || !strings.Contains(string(wf.body), `"bizdate":"20260101"`) {
		t.Fatalf("workflow GET: want the secret masked and the rest plain: %s", wf.body)
	}
	noSecret(t, "versions", b.get("/api/v1/projects/p/workflows/nightly_etl/versions").want(t, http.StatusOK))
	b.putSpec("p", "nightly_etl", "application/yaml", secretYAML).want(t, http.StatusOK) // unchanged: no new version

	run := b.send("POST", "/api/v1/projects/p/workflows/nightly_etl/runs",
		`{"params": {"api_key": "`+apiRunSecret+`", "plain": "x"}, "secret_params": ["api_key"]}`).want(t, http.StatusCreated)
	var inst Instance
	noSecret(t, "run answer", run).json(t, &inst)
	if inst.Params["api_key"] != secret.Mask || inst.Params["plain"] != "x" || len(inst.SecretParams) != 1 {
		t.Fatalf("run answer params %v secret_params %v", inst.Params, inst.SecretParams)
	}
	noSecret(t, "instance GET", b.get("/api/v1/instances/"+itoa(inst.ID)).want(t, http.StatusOK))
	noSecret(t, "instance list", b.get("/api/v1/instances").want(t, http.StatusOK))

	sched := b.send("PUT", "/api/v1/projects/p/workflows/nightly_etl/schedule",
		`{"cron": "@daily", "params": {"api_key": "`+apiRunSecret+`"}, "secret_params": ["api_key"]}`).want(t, http.StatusCreated)
	noSecret(t, "schedule PUT", sched)
	got := noSecret(t, "schedule GET", b.get("/api/v1/projects/p/workflows/nightly_etl/schedule").want(t, http.StatusOK))
	if !strings.Contains(string(got.body), `"api_key":"***"`) {
		t.Fatalf("schedule GET: %s", got.body)
	}
	noSecret(t, "schedules", b.get("/api/v1/schedules").want(t, http.StatusOK))
	bf := b.send("POST", "/api/v1/projects/p/workflows/nightly_etl/backfill",
		`{"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z", "cron": "@daily", "params": {"api_key": "`+apiRunSecret+`"}, "secret_params": ["api_key"]}`).
		want(t, http.StatusCreated)
	noSecret(t, "backfill POST", bf)
	noSecret(t, "backfills", b.get("/api/v1/backfills").want(t, http.StatusOK))

	for _, e := range b.logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + strings.ReplaceAll(toString(v), "\n", " ")
		}
		if strings.Contains(line, apiWfSecret) || strings.Contains(line, apiRunSecret) {
			t.Fatalf("API log line shows a secret: %s", line)
		}
	}
}

func toString(v any) string { return fmt.Sprint(v) }

func TestSecretParamsBadShapes(t *testing.T) {
	b := setupSealed(t)
	b.mustProject("p")
	for _, c := range []struct{ name, spec, want string }{
		{"unknown", strings.Replace(secretYAML, "[db_password]", "[db_pasword]", 1), `secret_params names "db_pasword"`},
		{"not a list", strings.Replace(secretYAML, "[db_password]", "db_password", 1), "secret_params: expected a list"},
		{"json not a list", `{"name": "nightly_etl", "params": {"a": "x"}, "secret_params": "a", "tasks": [{"name": "a", "command": "x"}]}`, "secret_params"},
		{"sealed-looking value", strings.Replace(secretYAML, apiWfSecret, secret.Prefix+"AAAA", 1), "reserved for sealed secrets"},
	} {
		ct := "application/yaml"
		if strings.HasPrefix(c.spec, "{") {
			ct = "application/json"
		}
		e := b.putSpec("p", "nightly_etl", ct, c.spec).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", c.name, e.Message, c.want)
		}
	}
	b.putSpec("p", "nightly_etl", "application/yaml", secretYAML).want(t, http.StatusCreated)
	runs := "/api/v1/projects/p/workflows/nightly_etl/runs"
	for _, c := range []struct{ name, path, body, want string }{
		{"run names a missing param", runs, `{"params": {"a": "x"}, "secret_params": ["b"]}`, `secret_params names "b"`},
		{"run not a list", runs, `{"params": {"a": "x"}, "secret_params": "a"}`, `"secret_params"`},
		{"run twice", runs, `{"params": {"a": "x"}, "secret_params": ["a", "a"]}`, `secret_params lists "a" twice`},
		{"schedule names a missing param", "/api/v1/projects/p/workflows/nightly_etl/schedule",
			`{"cron": "@daily", "secret_params": ["b"]}`, `secret_params names "b"`},
		{"backfill not a list", "/api/v1/projects/p/workflows/nightly_etl/backfill",
			`{"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z", "cron": "@daily", "secret_params": {"a": 1}}`, `"secret_params"`},
		// A mask (what answers show) with no sealed value to keep: never stored as the value.
		{"run with the mask", runs, `{"params": {"a": "***"}, "secret_params": ["a"]}`, `param a: secret param is ***`},
		{"schedule with the mask", "/api/v1/projects/p/workflows/nightly_etl/schedule",
			`{"cron": "@daily", "params": {"a": "***"}, "secret_params": ["a"]}`, `param a: secret param is ***`},
		{"backfill with the mask", "/api/v1/projects/p/workflows/nightly_etl/backfill",
			`{"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z", "cron": "@daily", "params": {"a": "***"}, "secret_params": ["a"]}`, `param a: secret param is ***`},
	} {
		e := b.send(map[bool]string{true: "PUT", false: "POST"}[strings.HasSuffix(c.path, "/schedule")], c.path, c.body).
			wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", c.name, e.Message, c.want)
		}
	}
}

// The spec a workflow GET shows (secrets as ***) applied back as it is:
// no new version, the secret kept; a *** where nothing is sealed is a 400
// naming the param.
func TestSecretSpecReadAndAppliedBack(t *testing.T) {
	b := setupSealed(t)
	b.mustProject("p")
	b.putSpec("p", "nightly_etl", "application/yaml", secretYAML).want(t, http.StatusCreated)
	var wf Workflow
	b.get("/api/v1/projects/p/workflows/nightly_etl").want(t, http.StatusOK).json(t, &wf)
	if !strings.Contains(string(wf.Spec), `"db_password":"***"`) {
		t.Fatalf("workflow GET spec: %s", wf.Spec)
	}
	var res ApplyResult
	b.putSpec("p", "nightly_etl", "application/json", string(wf.Spec)).want(t, http.StatusOK).json(t, &res)
	if res.Created || res.Version != 1 || res.SpecHash != wf.SpecHash {
		t.Fatalf("the masked spec applied back: %+v (read version %d hash %s)", res, wf.Version, wf.SpecHash)
	}
	def, err := b.store.WorkflowGet(context.Background(), "p", "nightly_etl", 0)
	if err != nil || strings.Contains(string(def.SpecJSON), `"***"`) {
		t.Fatalf("stored spec holds the mask: %s %v", def.SpecJSON, err)
	}
	e := b.putSpec("p", "fresh", "application/yaml", strings.Replace(strings.Replace(secretYAML, apiWfSecret, secret.Mask, 1), "name: nightly_etl", "name: fresh", 1)).
		wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "db_password") {
		t.Fatalf("400 does not name the param: %s", e.Message)
	}
}
