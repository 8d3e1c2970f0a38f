package standalone_test

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func (e *env) act(kind string, id int64, action string, want int) string {
	e.t.Helper()
	path := fmt.Sprintf("/api/v1/instances/%d/actions", id)
	if kind == "task" {
		path = fmt.Sprintf("/api/v1/task-instances/%d/actions", id)
	}
	var out string
	e.do("POST", path, fmt.Sprintf(`{"action":%q,"by":"test"}`, action), want, &out)
	return out
}

// waitTask waits until the latest attempt of task name is in state.
func (e *env) waitTask(id int64, name, state string) taskView {
	e.t.Helper()
	var last taskView
	wait.UntilErr(e.t, 30*time.Second, fmt.Sprintf("task %s of instance %d %s", name, id, state), func() error {
		var iv instanceView
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
		last = taskView{}
		for _, tk := range iv.Tasks {
			if tk.Name == name && tk.Attempt >= last.Attempt {
				last = tk
			}
		}
		if last.State != state {
			return fmt.Errorf("tasks %+v", iv.Tasks)
		}
		return nil
	})
	return last
}

func runsOf(t *testing.T, path string) string {
	b, _ := os.ReadFile(path)
	return strings.Join(strings.Fields(string(b)), ",")
}

func TestStopThenResume(t *testing.T) {
	e := start(t, "")
	runs, gate := filepath.Join(e.dir, "runs"), filepath.Join(e.dir, "gate")
	e.apply(fmt.Sprintf(`name: stoppable
tasks:
  - {name: long, command: "echo long >> %[1]s; while [ ! -f %[2]s ]; do sleep 0.01; done"}
  - {name: after, command: "echo after >> %[1]s", depends_on: [long]}
`, runs, gate))
	id := e.run("stoppable", nil)
	e.waitTask(id, "long", "running")
	e.act("instance", id, "stop", http.StatusAccepted)
	iv := e.wait(id, 30*time.Second)
	if iv.State != "stopped" || iv.task("long").State != "killed" || iv.count("after") != 0 {
		t.Fatalf("after stop: %s, long %s, after ran %d", iv.State, iv.task("long").State, iv.count("after"))
	}
	if body := e.act("instance", id, "stop", http.StatusConflict); !strings.Contains(body, "stopped") {
		t.Fatalf("stop of a stopped instance: %s", body)
	}
	os.WriteFile(gate, nil, 0o644)
	e.act("instance", id, "resume", http.StatusAccepted)
	e.waitTask(id, "after", "succeeded")
	iv = e.wait(id, 30*time.Second)
	if iv.State != "succeeded" || iv.count("long") != 2 {
		t.Fatalf("after resume: %s, long attempts %d", iv.State, iv.count("long"))
	}
	if got := runsOf(t, runs); got != "long,long,after" {
		t.Fatalf("executions %s", got)
	}
}

func TestPauseThenResume(t *testing.T) {
	e := start(t, "")
	runs, gate := filepath.Join(e.dir, "runs"), filepath.Join(e.dir, "gate")
	e.apply(fmt.Sprintf(`name: pausable
tasks:
  - {name: a, command: "echo a >> %[1]s; while [ ! -f %[2]s ]; do sleep 0.01; done"}
  - {name: b, command: "echo b >> %[1]s", depends_on: [a]}
  - {name: c, command: "echo c >> %[1]s", depends_on: [b]}
`, runs, gate))
	id := e.run("pausable", nil)
	e.waitTask(id, "a", "running")
	e.act("instance", id, "pause", http.StatusAccepted)
	e.applied(id, "pause")
	os.WriteFile(gate, nil, 0o644) // a finishes while pausing
	iv := e.wait(id, 30*time.Second)
	if iv.State != "paused" || iv.task("a").State != "succeeded" || iv.task("b").State != "paused" || iv.count("c") != 0 {
		t.Fatalf("after pause: %s, a %s, b %s, c rows %d", iv.State, iv.task("a").State, iv.task("b").State, iv.count("c"))
	}
	e.act("instance", id, "resume", http.StatusAccepted)
	e.waitTask(id, "c", "succeeded")
	iv = e.wait(id, 30*time.Second)
	if iv.State != "succeeded" || len(iv.Tasks) != 3 {
		t.Fatalf("after resume: %+v", iv)
	}
	if got := runsOf(t, runs); got != "a,b,c" {
		t.Fatalf("executions %s", got)
	}
}

func TestRerunAndRecoverFailed(t *testing.T) {
	e := start(t, "")
	runs, fixed := filepath.Join(e.dir, "runs"), filepath.Join(e.dir, "fixed")
	e.apply(fmt.Sprintf(`name: fixable
failure_strategy: continue
tasks:
  - {name: ok, command: "echo ok >> %[1]s"}
  - {name: bad, command: "echo bad >> %[1]s; [ -f %[2]s ]"}
  - {name: down, command: "echo down >> %[1]s", depends_on: [bad]}
`, runs, fixed))
	id := e.run("fixable", nil)
	if iv := e.wait(id, 30*time.Second); iv.State != "failed" {
		t.Fatalf("first run: %s", iv.State)
	}
	os.WriteFile(fixed, nil, 0o644)
	e.act("instance", id, "recover_failed", http.StatusAccepted)
	e.waitTask(id, "down", "succeeded")
	iv := e.wait(id, 30*time.Second)
	if iv.State != "succeeded" || iv.count("ok") != 1 || iv.count("bad") != 2 || iv.count("down") != 1 {
		t.Fatalf("after recover_failed: %s ok=%d bad=%d down=%d", iv.State, iv.count("ok"), iv.count("bad"), iv.count("down"))
	}
	e.act("instance", id, "rerun", http.StatusAccepted)
	waitCount := func() bool {
		var v instanceView
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &v)
		return v.count("down") == 2 && v.State == "succeeded"
	}
	wait.Until(t, 30*time.Second, "the rerun to finish with down run twice", waitCount)
	var v struct {
		RunTimes int `json:"run_times"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &v)
	if v.RunTimes != 2 {
		t.Fatalf("run_times %d after rerun", v.RunTimes)
	}
	if got := runsOf(t, runs); strings.Count(got, "ok") != 2 || strings.Count(got, "bad") != 3 || strings.Count(got, "down") != 2 {
		t.Fatalf("executions %s", got)
	}
}

func TestKillThenForceSuccess(t *testing.T) {
	e := start(t, "")
	runs := filepath.Join(e.dir, "runs")
	e.apply(fmt.Sprintf(`name: killable
tasks:
  - {name: stuck, command: "echo stuck >> %[1]s; sleep 300"}
  - {name: next, command: "echo next >> %[1]s", depends_on: [stuck]}
`, runs))
	id := e.run("killable", nil)
	tk := e.waitTask(id, "stuck", "running")
	e.act("task", tk.ID, "kill", http.StatusAccepted)
	iv := e.wait(id, 30*time.Second)
	if iv.State != "failed" || iv.task("stuck").State != "killed" || iv.count("stuck") != 1 {
		t.Fatalf("after kill: %s, stuck %s (%d rows): a killed task is never retried", iv.State, iv.task("stuck").State, iv.count("stuck"))
	}
	e.act("task", tk.ID, "force_success", http.StatusAccepted)
	e.waitTask(id, "next", "succeeded")
	iv = e.wait(id, 30*time.Second)
	if iv.State != "succeeded" || iv.task("stuck").State != "forced_success" {
		t.Fatalf("after force_success: %s, stuck %s", iv.State, iv.task("stuck").State)
	}
	if got := runsOf(t, runs); got != "stuck,next" {
		t.Fatalf("executions %s", got)
	}
}
