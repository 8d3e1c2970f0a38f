package standalone_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReservedParamsRefused (docs/security.md, params): names that change
// how a shell or the loader runs a task are refused where a param comes in
// (400 naming it, nothing stored or started) and again where a task's
// params are resolved: an upstream's output (or a spec stored before the
// rule) fails the task with the reason, and its command never runs.
func TestReservedParamsRefused(t *testing.T) {
	e := start(t, "")
	// BASH_ENV names a file bash runs before the task's command.
	hook := filepath.Join(e.dir, "hook.sh")
	pwned := filepath.Join(e.dir, "pwned")
	if err := os.WriteFile(hook, []byte("echo pwned > "+pwned+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantBad := func(method, path, body, name string) {
		t.Helper()
		var raw string
		e.do(method, path, body, http.StatusBadRequest, &raw)
		if !strings.Contains(raw, `param \"`+name+`\"`) {
			t.Fatalf("%s %s: the refusal does not name %s: %s", method, path, name, raw)
		}
	}
	// At apply: workflow and task params.
	wantBad("PUT", "/api/v1/projects/demo/workflows/evil", "name: evil\nparams: {BASH_ENV: "+hook+"}\ntasks:\n  - name: a\n    command: bash -c true\n", "BASH_ENV")
	wantBad("PUT", "/api/v1/projects/demo/workflows/evil", "name: evil\ntasks:\n  - name: a\n    command: 'true'\n    params: {LD_PRELOAD: /tmp/x.so}\n", "LD_PRELOAD")
	e.do("GET", "/api/v1/projects/demo/workflows/evil", "", http.StatusNotFound, nil)

	// At run, schedule and backfill: the run's params.
	e.apply("name: plain\ntasks:\n  - name: a\n    command: bash -c 'echo ran'\n")
	wantBad("POST", "/api/v1/projects/demo/workflows/plain/runs", `{"params":{"BASH_ENV":"`+hook+`"}}`, "BASH_ENV")
	wantBad("POST", "/api/v1/projects/demo/workflows/plain/runs", `{"params":{"LD_PRELOAD":"/tmp/x.so"}}`, "LD_PRELOAD")
	wantBad("PUT", "/api/v1/projects/demo/workflows/plain/schedule", `{"cron":"0 2 * * *","params":{"PATH":"/tmp"}}`, "PATH")
	wantBad("POST", "/api/v1/projects/demo/workflows/plain/backfill",
		`{"start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z","cron":"0 2 * * *","params":{"PYTHONSTARTUP":"/tmp/x.py"}}`, "PYTHONSTARTUP")
	var runs struct{ Items []struct{ ID int64 } }
	e.do("GET", "/api/v1/instances?project=demo", "", http.StatusOK, &runs)
	if len(runs.Items) != 0 {
		t.Fatalf("a refused run started: %+v", runs.Items)
	}

	var raw string
	// An upstream's output named LD_PRELOAD never becomes a downstream's
	// environment: the downstream fails, naming it.
	e.apply("name: chain\ntasks:\n  - name: up\n    command: echo '${setValue(LD_PRELOAD=/tmp/x.so)}'\n  - name: down\n    command: bash -c 'echo ran'\n    depends_on: [up]\n")
	id := e.run("chain", nil)
	iv := e.wait(id, 30*time.Second)
	if iv.task("up").State != "succeeded" || iv.task("down").State != "failed" || iv.task("down").Host != "" {
		t.Fatalf("upstream LD_PRELOAD: %+v", iv)
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &raw)
	if !strings.Contains(raw, `upstream outputs: param \"LD_PRELOAD\"`) {
		t.Fatalf("the failure does not name the output: %s", raw)
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Fatalf("the BASH_ENV hook ran: %v", err)
	}
}
