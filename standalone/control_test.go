package standalone_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRetriesWithInterval(t *testing.T) {
	e := start(t, "")
	count := filepath.Join(e.dir, "count")
	// Fails on its first two runs, succeeds on the third.
	e.apply(fmt.Sprintf(`name: flaky
tasks:
  - name: f
    command: 'echo x >> %[1]s; [ "$(wc -l < %[1]s)" -ge 3 ]'
    retries: 2
    retry_interval: 300ms
  - {name: after, command: "true", depends_on: [f]}
  - name: hopeless
    command: "exit 4"
    retries: 1
`, count))
	iv := e.wait(e.run("flaky", nil), 30*time.Second)
	if iv.State != "failed" {
		t.Fatalf("instance %s, want failed (hopeless fails after its retry)", iv.State)
	}
	rows, _ := e.store().TaskList(context.Background(), iv.ID)
	var f []int
	var ends, starts []time.Time
	hopeless := 0
	for _, r := range rows {
		switch r.Name {
		case "f":
			f = append(f, r.Attempt)
			if r.Attempt < 3 && (r.State != "failed" || !r.Superseded) {
				t.Fatalf("attempt %d of f: %+v", r.Attempt, r)
			}
			if r.Attempt == 3 && (r.State != "succeeded" || r.Superseded) {
				t.Fatalf("last attempt of f: %+v", r)
			}
			starts = append(starts, *r.StartTime)
			ends = append(ends, *r.EndTime)
		case "hopeless":
			hopeless++
			if r.State != "failed" {
				t.Fatalf("hopeless: %+v", r)
			}
		}
	}
	if len(f) != 3 || hopeless != 2 || iv.count("after") != 0 {
		t.Fatalf("attempts of f %v, of hopeless %d, after ran %d times", f, hopeless, iv.count("after"))
	}
	for i := 1; i < 3; i++ {
		if gap := starts[i].Sub(ends[i-1]); gap < 300*time.Millisecond {
			t.Fatalf("attempt %d started %v after the previous ended; interval is 300ms", i+1, gap)
		}
	}
}

func TestTaskTimeouts(t *testing.T) {
	e := start(t, "")
	e.apply(`name: slow
failure_strategy: continue
tasks:
  - {name: killed, command: "sleep 30", timeout: 300ms, timeout_strategy: fail}
  - {name: warned, command: "sleep 0.5", timeout: 100ms, timeout_strategy: warn}
`)
	began := time.Now()
	iv := e.wait(e.run("slow", nil), 20*time.Second)
	if time.Since(began) > 15*time.Second {
		t.Fatalf("the timeout did not kill the task")
	}
	if iv.State != "failed" || iv.task("killed").State != "failed" || iv.task("warned").State != "succeeded" {
		t.Fatalf("instance %s, killed %s, warned %s", iv.State, iv.task("killed").State, iv.task("warned").State)
	}
}

func TestStartNodesScopeAndDryRun(t *testing.T) {
	e := start(t, "")
	runs := filepath.Join(e.dir, "runs")
	e.apply(fmt.Sprintf(`name: scoped
tasks:
  - {name: a, command: "echo a >> %[1]s"}
  - {name: b, command: "echo b >> %[1]s", depends_on: [a]}
  - {name: c, command: "echo c >> %[1]s", depends_on: [b]}
  - {name: d, command: "echo d >> %[1]s", depends_on: [c]}
`, runs))
	runWith := func(body string) instanceView {
		var out struct{ ID int64 }
		e.do("POST", "/api/v1/projects/demo/workflows/scoped/runs", body, http.StatusCreated, &out)
		return e.wait(out.ID, 30*time.Second)
	}
	for _, tc := range []struct {
		body string
		want string
	}{
		{`{"start_nodes":["b"]}`, "b"},
		{`{"start_nodes":["b"],"scope":"downstream"}`, "b,c,d"},
		{`{"start_nodes":["c"],"scope":"upstream"}`, "a,b,c"},
	} {
		os.Remove(runs)
		iv := runWith(tc.body)
		if iv.State != "succeeded" || runsOf(t, runs) != tc.want || len(iv.Tasks) != strings.Count(tc.want, ",")+1 {
			t.Fatalf("%s: state %s, ran %q, %d task rows; want %q", tc.body, iv.State, runsOf(t, runs), len(iv.Tasks), tc.want)
		}
	}
	os.Remove(runs)
	iv := runWith(`{"dry_run":true}`)
	if iv.State != "succeeded" || len(iv.Tasks) != 4 || runsOf(t, runs) != "" {
		t.Fatalf("dry run: %s, %d rows, ran %q", iv.State, len(iv.Tasks), runsOf(t, runs))
	}
	var raw struct {
		DryRun bool `json:"dry_run"`
		Tasks  []struct {
			DryRun bool   `json:"dry_run"`
			State  string `json:"state"`
		} `json:"tasks"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", iv.ID), "", http.StatusOK, &raw)
	for _, tk := range raw.Tasks {
		if !raw.DryRun || !tk.DryRun || tk.State != "succeeded" {
			t.Fatalf("dry run flags: %+v", raw)
		}
	}
	var bad string
	e.do("POST", "/api/v1/projects/demo/workflows/scoped/runs", `{"start_nodes":["zz"]}`, http.StatusBadRequest, &bad)
	if !strings.Contains(bad, `zz`) {
		t.Fatalf("unknown start node: %s", bad)
	}
	e.do("POST", "/api/v1/projects/demo/workflows/scoped/runs", `{"start_nodes":["a"],"scope":"sideways"}`, http.StatusBadRequest, &bad)
	if !strings.Contains(bad, "sideways") {
		t.Fatalf("bad scope: %s", bad)
	}
}

func TestWorkflowTimeout(t *testing.T) {
	e := start(t, "")
	e.apply(`name: overtime
timeout: 300ms
timeout_strategy: stop
tasks:
  - {name: long, command: "sleep 30"}
  - {name: after, command: "true", depends_on: [long]}
`)
	e.apply(`name: warned
timeout: 100ms
timeout_strategy: warn
tasks:
  - {name: short, command: "sleep 0.4"}
`)
	began := time.Now()
	iv := e.wait(e.run("overtime", nil), 20*time.Second)
	if iv.State != "stopped" || iv.task("long").State != "killed" || iv.count("after") != 0 || time.Since(began) > 15*time.Second {
		t.Fatalf("stop on timeout: %s, long %s, after rows %d, after %v", iv.State, iv.task("long").State, iv.count("after"), time.Since(began))
	}
	id := e.run("warned", nil)
	if iv := e.wait(id, 20*time.Second); iv.State != "succeeded" {
		t.Fatalf("warn on timeout: %s", iv.State)
	}
	var body string
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &body)
	if !strings.Contains(body, "timeout_warning") {
		t.Fatalf("no timeout warning in the history: %s", body)
	}
}
