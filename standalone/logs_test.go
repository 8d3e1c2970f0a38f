package standalone_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestLogsSurviveRestart: a task's log stays readable after standalone is
// stopped and started again on the same data dir, when its worker now
// listens on another port than the one recorded on the task.
func TestLogsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	e := startOn(t, dir, "")
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	e.apply(`name: talk
tasks:
  - {name: say, command: "echo hello from before"}
`)
	iv := e.wait(e.run("talk", nil), 30*time.Second)
	tk := iv.task("say")
	logOf := func(e *env) (int, string) {
		resp, err := e.client().Get(fmt.Sprintf("%s/api/v1/task-instances/%d/log", e.base, tk.ID))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := logOf(e); code != http.StatusOK || body != "hello from before\n" {
		t.Fatalf("log before the restart: %d %q", code, body)
	}
	e.sa.Stop()

	e = startOn(t, dir, "")
	if e.sa.Worker.Host() == tk.Host {
		t.Fatalf("the worker came back on the same address %s: the test needs another port", tk.Host)
	}
	if code, body := logOf(e); code != http.StatusOK || body != "hello from before\n" {
		t.Fatalf("log after the restart (task ran on %s, worker now on %s): %d %q", tk.Host, e.sa.Worker.Host(), code, body)
	}
}
