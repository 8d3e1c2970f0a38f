package standalone_test

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
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

// TestLogStreamsThroughTheAPI: a task that interleaves stdout and stderr
// has one log of both in order; the log route's stream filter splits it,
// the streams route names stderr's bytes, a bad stream is a 400 naming
// the choices, and all of it still holds after a restart.
func TestLogStreamsThroughTheAPI(t *testing.T) {
	dir := t.TempDir()
	e := startOn(t, dir, "")
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	// w waits until the log holds its text: the next print is later than
	// the last one reached the worker.
	logf := filepath.Join(dir, "worker", "logs") + `/$BELUGA_WORKFLOW_INSTANCE_ID/$BELUGA_TASK_INSTANCE_ID.log`
	cmd := `w() { until grep -qF -- "$1" "` + logf + `"; do sleep 0.01; done; }; ` +
		`echo first out; w 'first out'; echo oops on err >&2; w oops; echo second out`
	e.apply(fmt.Sprintf("name: mixed\ntasks:\n  - {name: say, command: %q}\n", cmd))
	tk := e.wait(e.run("mixed", nil), 30*time.Second).task("say")
	get := func(e *env, query string) (int, string, http.Header) {
		resp, err := e.client().Get(fmt.Sprintf("%s/api/v1/task-instances/%d/log%s", e.base, tk.ID, query))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	const all = "first out\noops on err\nsecond out\n"
	check := func(e *env, when string) {
		for _, c := range []struct{ query, want string }{
			{"", all}, {"?stream=all", all},
			{"?stream=stdout", "first out\nsecond out\n"},
			{"?stream=stderr", "oops on err\n"},
		} {
			code, body, h := get(e, c.query)
			if code != http.StatusOK || body != c.want {
				t.Fatalf("%s: log%s = %d %q, want %q", when, c.query, code, body, c.want)
			}
			if c.query != "" && h.Get("X-Next-Offset") != fmt.Sprint(len(all)) {
				t.Fatalf("%s: log%s X-Next-Offset %q, want %d (of the whole log)", when, c.query, h.Get("X-Next-Offset"), len(all))
			}
		}
		var st struct {
			NextOffset int64 `json:"next_offset"`
			Recorded   bool
			Stderr     [][2]int64
		}
		e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log/streams", tk.ID), "", http.StatusOK, &st)
		if !st.Recorded || st.NextOffset != int64(len(all)) || len(st.Stderr) != 1 || st.Stderr[0] != [2]int64{10, 22} {
			t.Fatalf("%s: streams %+v, want stderr [[10 22]] of %d bytes", when, st, len(all))
		}
		code, body, _ := get(e, "?stream=err")
		if code != http.StatusBadRequest || !strings.Contains(body, "stream must be all, stdout or stderr") || !strings.Contains(body, `got \"err\"`) {
			t.Fatalf("%s: a bad stream: %d %s", when, code, body)
		}
	}
	check(e, "before the restart")
	e.sa.Stop()
	check(startOn(t, dir, ""), "after the restart")
}
