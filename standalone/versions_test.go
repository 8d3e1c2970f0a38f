package standalone_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/gittest"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// versionView is what these tests read of an instance.
type versionView struct {
	State         string `json:"state"`
	Version       int    `json:"version"`
	LatestVersion int    `json:"latest_version"`
	GitCommit     string `json:"git_commit"`
	RunTimes      int    `json:"run_times"`
	ScheduleID    int64  `json:"schedule_id"`
}

func (e *env) versionOf(id int64) versionView {
	e.t.Helper()
	var v versionView
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &v)
	return v
}

// waitRunTimes waits until the instance has ended its n-th run.
func (e *env) waitRunTimes(id int64, n int) versionView {
	e.t.Helper()
	var v versionView
	wait.UntilErr(e.t, 30*time.Second, fmt.Sprintf("run %d of instance %d to end", n, id), func() error {
		v = e.versionOf(id)
		if v.RunTimes != n || v.State != "succeeded" && v.State != "failed" {
			return fmt.Errorf("run_times %d, %s", v.RunTimes, v.State)
		}
		return nil
	})
	return v
}

// firstFire waits for the first run a schedule of workflow fired, to its
// end, then deletes the schedule.
func (e *env) firstFire(workflow string) (int64, versionView) {
	e.t.Helper()
	var id int64
	wait.UntilErr(e.t, 30*time.Second, "a fire of the schedule of "+workflow, func() error {
		var l struct {
			Items []struct {
				ID         int64 `json:"id"`
				ScheduleID int64 `json:"schedule_id"`
			} `json:"items"`
		}
		e.do("GET", "/api/v1/instances?project=demo&workflow="+workflow, "", http.StatusOK, &l)
		for _, it := range l.Items {
			if it.ScheduleID != 0 && (id == 0 || it.ID < id) {
				id = it.ID
			}
		}
		if id == 0 {
			return fmt.Errorf("no scheduled run in %+v", l.Items)
		}
		return nil
	})
	e.do("DELETE", "/api/v1/projects/demo/workflows/"+workflow+"/schedule", "", http.StatusNoContent, nil)
	e.wait(id, 30*time.Second)
	return id, e.versionOf(id)
}

// TestRunKeepsItsVersion: a rerun runs the instance's own version after a
// new one is applied; rerun with version latest runs the new one, in
// place; a schedule pinned to v1 fires v1 after v2 is applied; the diff
// of the run's version and the latest says what changed.
func TestRunKeepsItsVersion(t *testing.T) {
	e := start(t, "")
	runs := filepath.Join(e.dir, "runs")
	spec := func(v string, extra bool) string {
		s := fmt.Sprintf("name: versioned\ntasks:\n  - {name: t, command: \"echo %[1]s >> %[2]s\"}\n", v, runs)
		if extra {
			s += fmt.Sprintf("  - {name: extra, command: \"echo extra >> %s\", depends_on: [t]}\n", runs)
		}
		return s
	}
	e.apply(spec("v1", false))
	id := e.run("versioned", nil)
	if iv := e.wait(id, 30*time.Second); iv.State != "succeeded" {
		t.Fatalf("first run: %s", iv.State)
	}
	e.do("PUT", "/api/v1/projects/demo/workflows/versioned", spec("v2", true), http.StatusCreated, nil)

	e.act("instance", id, "rerun", http.StatusAccepted)
	if v := e.waitRunTimes(id, 2); v.Version != 1 || v.LatestVersion != 2 || v.State != "succeeded" {
		t.Fatalf("after rerun: %+v", v)
	}
	if got := runsOf(t, runs); got != "v1,v1" {
		t.Fatalf("the rerun ran %s, want v1's task again", got)
	}

	var d struct {
		Same         bool     `json:"same"`
		TasksAdded   []string `json:"tasks_added"`
		TasksChanged []struct {
			Name string `json:"name"`
		} `json:"tasks_changed"`
		From, To struct{ Version int }
		Text     string `json:"text"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d/diff", id), "", http.StatusOK, &d)
	if d.Same || d.From.Version != 1 || d.To.Version != 2 || len(d.TasksAdded) != 1 || d.TasksAdded[0] != "extra" ||
		len(d.TasksChanged) != 1 || d.TasksChanged[0].Name != "t" || d.Text == "" {
		t.Fatalf("diff of the run's version and the latest: %+v", d)
	}

	// Bad versions change nothing.
	path := fmt.Sprintf("/api/v1/instances/%d/actions", id)
	e.do("POST", path, `{"action":"rerun","version":7}`, http.StatusBadRequest, nil)
	e.do("POST", path, `{"action":"rerun","version":"newest"}`, http.StatusBadRequest, nil)
	e.do("POST", path, `{"action":"stop","version":"latest"}`, http.StatusBadRequest, nil)

	e.do("POST", path, `{"action":"rerun","version":"latest"}`, http.StatusAccepted, nil)
	if v := e.waitRunTimes(id, 3); v.Version != 2 || v.State != "succeeded" {
		t.Fatalf("after rerun latest: %+v", v)
	}
	if got := runsOf(t, runs); got != "v1,v1,v2,extra" {
		t.Fatalf("the rerun of the latest ran %s", got)
	}
	// And back to v1 by number: extra's attempt stays as history.
	e.do("POST", path, `{"action":"rerun","version":1}`, http.StatusAccepted, nil)
	if v := e.waitRunTimes(id, 4); v.Version != 1 || v.State != "succeeded" {
		t.Fatalf("after rerun of v1: %+v", v)
	}
	if got := runsOf(t, runs); got != "v1,v1,v2,extra,v1" {
		t.Fatalf("the rerun of v1 ran %s", got)
	}

	// A schedule pinned to v1 fires v1 although v2 is the latest.
	e.do("PUT", "/api/v1/projects/demo/workflows/versioned/schedule", `{"cron":"@every 1s","pin_version":9}`, http.StatusBadRequest, nil)
	var sc struct {
		PinVersion int `json:"pin_version"`
	}
	e.do("PUT", "/api/v1/projects/demo/workflows/versioned/schedule", `{"cron":"@every 1s","pin_version":1}`, http.StatusCreated, &sc)
	if sc.PinVersion != 1 {
		t.Fatalf("schedule answer pin_version %d", sc.PinVersion)
	}
	fired, v := e.firstFire("versioned")
	if iv := e.wait(fired, 30*time.Second); v.Version != 1 || iv.State != "succeeded" || iv.count("extra") != 0 || iv.count("t") != 1 {
		t.Fatalf("pinned fire: %+v, tasks %+v", v, iv.Tasks)
	}
}

// TestRunPinnedToCommit: a Git project's schedule pinned to a commit fires
// the version that commit's sync made, after a later commit is synced; the
// run records the commit.
func TestRunPinnedToCommit(t *testing.T) {
	e := start(t, "")
	runs := filepath.Join(e.dir, "runs")
	repo := gittest.New(t)
	file := func(v string) map[string]string {
		return map[string]string{"workflows/pinned.yaml": fmt.Sprintf("name: pinned\ntasks:\n  - {name: t, command: \"echo %s >> %s\"}\n", v, runs)}
	}
	a := repo.Commit("main", "A", file("A"))
	e.do("PUT", "/api/v1/projects/demo/git", `{"url":"`+repo.Bare+`","branch":"main"}`, http.StatusCreated, nil)
	e.do("POST", "/api/v1/projects/demo/git/sync", "", http.StatusOK, nil)
	b := repo.Commit("main", "B", file("B"))
	e.do("POST", "/api/v1/projects/demo/git/sync", "", http.StatusOK, nil)

	var v1 struct {
		Version   int    `json:"version"`
		GitCommit string `json:"git_commit"`
	}
	e.do("GET", "/api/v1/projects/demo/workflows/pinned?version=1", "", http.StatusOK, &v1)
	if v1.GitCommit != a {
		t.Fatalf("version 1 records commit %q, want %s", v1.GitCommit, a)
	}
	var vs struct {
		Items []json.RawMessage `json:"items"`
	}
	e.do("GET", "/api/v1/projects/demo/workflows/pinned/versions", "", http.StatusOK, &vs)
	if len(vs.Items) != 2 {
		t.Fatalf("versions %s", vs.Items)
	}

	sched := "/api/v1/projects/demo/workflows/pinned/schedule"
	e.do("PUT", sched, `{"cron":"@every 1s","pin_commit":"0000000deadbeef"}`, http.StatusBadRequest, nil)
	e.do("PUT", sched, `{"cron":"@every 1s","pin_commit":"not hex"}`, http.StatusBadRequest, nil)
	e.do("PUT", sched, `{"cron":"@every 1s","pin_commit":"`+a[:10]+`","pin_version":2}`, http.StatusBadRequest, nil)
	var sc struct {
		PinVersion int `json:"pin_version"`
	}
	e.do("PUT", sched, `{"cron":"@every 1s","pin_commit":"`+a[:10]+`"}`, http.StatusCreated, &sc)
	if sc.PinVersion != 1 {
		t.Fatalf("pin_commit %s pinned version %d, want 1", a[:10], sc.PinVersion)
	}
	_, v := e.firstFire("pinned")
	if v.Version != 1 || v.GitCommit != a || v.LatestVersion != 2 || v.State != "succeeded" {
		t.Fatalf("the pinned fire: %+v, want version 1 of commit %s (B is %s)", v, a, b)
	}
	if got := runsOf(t, runs); got != "A" {
		t.Fatalf("the pinned fire ran %s, want commit A's task", got)
	}
}

// TestRecoverFailedUnderTheLatest: recover_failed with version latest
// keeps the succeeded tasks the new version still has, reruns its failed
// one as fixed there, runs the task it adds, and leaves the task it
// dropped as history.
func TestRecoverFailedUnderTheLatest(t *testing.T) {
	e := start(t, "")
	runs := filepath.Join(e.dir, "runs")
	e.apply(fmt.Sprintf(`name: recoverable
failure_strategy: continue
tasks:
  - {name: ok, command: "echo ok >> %[1]s"}
  - {name: broken, command: "echo broken >> %[1]s; exit 1", depends_on: [ok]}
  - {name: gone, command: "echo gone >> %[1]s; exit 1"}
`, runs))
	id := e.run("recoverable", nil)
	if iv := e.wait(id, 30*time.Second); iv.State != "failed" {
		t.Fatalf("first run: %s", iv.State)
	}
	e.do("PUT", "/api/v1/projects/demo/workflows/recoverable", fmt.Sprintf(`name: recoverable
failure_strategy: continue
tasks:
  - {name: ok, command: "echo ok >> %[1]s"}
  - {name: broken, command: "echo fixed >> %[1]s", depends_on: [ok]}
  - {name: added, command: "echo added >> %[1]s", depends_on: [broken]}
`, runs), http.StatusCreated, nil)
	e.do("POST", fmt.Sprintf("/api/v1/instances/%d/actions", id), `{"action":"recover_failed","version":"latest"}`, http.StatusAccepted, nil)
	e.waitTask(id, "added", "succeeded")
	iv := e.wait(id, 30*time.Second)
	if v := e.versionOf(id); v.Version != 2 || iv.State != "succeeded" || iv.count("ok") != 1 || iv.count("broken") != 2 || iv.count("gone") != 1 {
		t.Fatalf("after recover_failed latest: %+v %s ok=%d broken=%d gone=%d", v, iv.State, iv.count("ok"), iv.count("broken"), iv.count("gone"))
	}
	// The first run's three in any order, then the fixed task and the new one.
	if got := runsOf(t, runs); !strings.HasSuffix(got, ",fixed,added") || len(strings.Split(got, ",")) != 5 {
		t.Fatalf("executions %s", got)
	}
}
