package standalone_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/standalone"
)

// TestSecretParamsEndToEnd: a workflow secret and a run's secret reach the
// task as they are (it checks their digests), while the task's log, every
// API answer, every master and worker log line and every file under the
// data dir (the database among them) show neither.
func TestSecretParamsEndToEnd(t *testing.T) {
	const wfSecret, runSecret = "e2e-Wf-secret-77", "e2e-Run-secret-88"
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

	c := config.Defaults()
	c.DataDir = t.TempDir()
	c.API.Listen = "127.0.0.1:0"
	core, logs := observer.New(zap.DebugLevel)
	sa, err := standalone.Start(context.Background(), c, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)

	// The command holds only digests: it is not secret and answers show it.
	e.apply(`name: sec
params: {db_password: "` + wfSecret + `"}
secret_params: [db_password]
tasks:
  - name: show
    command: |
      echo "pw=${db_password} key=${api_key}"
      printf 'half=%s' "${api_key%????}"; sleep 0.1; printf '%s\n' "${api_key#${api_key%????}}"
      test "$(printf %s "$db_password" | sha256sum | cut -c1-64)" = ` + sum(wfSecret) + ` &&
      test "$(printf %s "$api_key" | sha256sum | cut -c1-64)" = ` + sum(runSecret) + ` && echo VALUES-MATCH
`)
	var runAnswer string
	e.do("POST", "/api/v1/projects/demo/workflows/sec/runs",
		`{"params": {"api_key": "`+runSecret+`"}, "secret_params": ["api_key"]}`, http.StatusCreated, &runAnswer)
	var inst struct{ ID int64 }
	if err := json.Unmarshal([]byte(runAnswer), &inst); err != nil {
		t.Fatal(err)
	}
	iv := e.wait(inst.ID, 60*time.Second)
	if iv.State != "succeeded" {
		t.Fatalf("instance: %+v", iv)
	}
	var log, wf, answer string
	e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("show").ID), "", http.StatusOK, &log)
	e.do("GET", "/api/v1/projects/demo/workflows/sec", "", http.StatusOK, &wf)
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", inst.ID), "", http.StatusOK, &answer)
	if !strings.Contains(log, "VALUES-MATCH") {
		t.Fatalf("the task did not get the real values: log %q", log)
	}
	if !strings.Contains(log, "pw=*** key=***") || !strings.Contains(log, "half=***") {
		t.Fatalf("log does not mask the secrets: %q", log)
	}
	shown := map[string]string{"task log": log, "workflow answer": wf, "instance answer": answer, "run answer": runAnswer}
	for _, en := range logs.All() {
		line := en.Message
		for k, v := range en.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		shown["log line "+line] = line
	}
	_ = filepath.WalkDir(c.DataDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil {
				shown["file "+p] = string(b)
			}
		}
		return nil
	})
	for what, text := range shown {
		for _, s := range []string{wfSecret, runSecret} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q", what, s)
			}
		}
	}
}
