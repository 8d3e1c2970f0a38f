package standalone_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/gittest"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestGitFilesOverSSH: a project bound over SSH (a real sshd, the key
// sealed, the host key checked) to a repository holding a workflow, its
// schedule and datasource and task group references. A binding that
// expects another host key fetches nothing; the right one syncs all, and
// the schedule from Git fires the workflow in its task group. A commit
// with a bad schedule file changes nothing and names it. A schedule edit
// in Beluga (write_back) is a commit by the user, pushed over SSH, that
// syncs back.
func TestGitFilesOverSSH(t *testing.T) {
	e := start(t, "")
	e.do("PUT", "/api/v1/datasources/wh", `{"type":"postgres","host":"db.internal","port":5432,"database":"wh","user":"etl","projects":["demo"]}`, http.StatusCreated, nil)
	e.do("POST", "/api/v1/task-groups", `{"name":"gpu","capacity":1,"projects":["demo"]}`, http.StatusCreated, nil)
	repo := gittest.New(t)
	ping := "tasks:\n  - {name: ping, command: \"echo ping\", task_group: gpu}\n"
	dsFile := "type: postgres\nhost: db.internal\nport: 5432\ndatabase: wh\nuser: etl\n"
	c1 := repo.Commit("main", "first", map[string]string{"etl/workflows/ping.yaml": ping, "etl/schedules/ping.yaml": "cron: \"@every 1s\"\n",
		"etl/datasources/wh.yaml": dsFile, "etl/task-groups/gpu.yaml": "capacity: 1\n"})
	srv := repo.ServeSSH()
	bind := func(known string, status int) {
		body, _ := json.Marshal(map[string]string{"url": srv.URL, "branch": "main", "dir": "etl", "mode": "write_back",
			"ssh_key": srv.Key, "known_hosts": known})
		e.do("PUT", "/api/v1/projects/demo/git", string(body), status, nil)
	}
	bind(srv.OtherHost, http.StatusCreated)
	var refused string
	e.do("POST", "/api/v1/projects/demo/git/sync", "", http.StatusBadGateway, &refused)
	if !strings.Contains(refused, "not the one known_hosts gives") || strings.Contains(refused, "PRIVATE KEY") {
		t.Fatalf("a sync from a host with another key: %s", refused)
	}
	var binding struct {
		SSHKeySet bool `json:"ssh_key_set"`
	}
	var raw string
	e.do("GET", "/api/v1/projects/demo/git", "", http.StatusOK, &raw)
	if err := json.Unmarshal([]byte(raw), &binding); err != nil || !binding.SSHKeySet || strings.Contains(raw, "PRIVATE KEY") {
		t.Fatalf("the binding: %s", raw)
	}
	if stored, err := e.store().GitBindingGet(t.Context(), "demo"); err != nil || !strings.HasPrefix(stored.SSHKeySealed, "beluga:sealed:") ||
		strings.Contains(stored.SSHKeySealed, "PRIVATE KEY") {
		t.Fatalf("the key at rest: %.40q (%v), want it sealed", stored.SSHKeySealed, err)
	}
	bind(srv.KnownHosts, http.StatusOK)

	var res struct {
		Commit    string `json:"commit"`
		Workflows []struct {
			Workflow string `json:"workflow"`
		} `json:"workflows"`
		Schedules   []struct{ Workflow string } `json:"schedules"`
		Datasources []struct{ Name string }     `json:"datasources"`
		TaskGroups  []struct{ Name string }     `json:"task_groups"`
	}
	e.do("POST", "/api/v1/projects/demo/git/sync", "", http.StatusOK, &res)
	if res.Commit != c1 || len(res.Workflows) != 1 || len(res.Schedules) != 1 || res.Schedules[0].Workflow != "ping" ||
		len(res.Datasources) != 1 || res.Datasources[0].Name != "wh" || len(res.TaskGroups) != 1 || res.TaskGroups[0].Name != "gpu" {
		t.Fatalf("the sync: %+v", res)
	}
	id := e.scheduledRun("ping")
	if iv := e.wait(id, 60*time.Second); iv.State != "succeeded" {
		t.Fatalf("the scheduled run: %+v", iv)
	}

	// One commit, a valid workflow change and a bad schedule: nothing.
	bad := repo.Commit("main", "bad", map[string]string{"etl/workflows/ping.yaml": strings.Replace(ping, "echo ping", "echo pong", 1),
		"etl/schedules/ping.yaml": "cron: every now and then\n"})
	e.do("POST", "/api/v1/projects/demo/git/sync", "", http.StatusBadRequest, &refused)
	if !strings.Contains(refused, bad[:12]) || !strings.Contains(refused, "etl/schedules/ping.yaml") {
		t.Fatalf("the bad commit's refusal: %s", refused)
	}
	var wf struct {
		Version int `json:"version"`
	}
	e.do("GET", "/api/v1/projects/demo/workflows/ping", "", http.StatusOK, &wf)
	var sc struct {
		Cron    string `json:"cron"`
		Enabled bool   `json:"enabled"`
	}
	e.do("GET", "/api/v1/projects/demo/workflows/ping/schedule", "", http.StatusOK, &sc)
	if wf.Version != 1 || sc.Cron != "@every 1s" || !sc.Enabled {
		t.Fatalf("after the refused commit: workflow version %d, schedule %+v", wf.Version, sc)
	}

	// The schedule paused in Beluga: a commit by the user, over SSH.
	var saved struct {
		GitCommit string `json:"git_commit"`
	}
	e.do("PUT", "/api/v1/projects/demo/workflows/ping/schedule?message=pause+ping", `{"cron":"@every 1s","enabled":false}`, http.StatusOK, &saved)
	if saved.GitCommit == "" {
		t.Fatal("the save made no commit")
	}
	if file := repo.Show("main", "etl/schedules/ping.yaml"); !strings.Contains(file, "enabled: false") || !strings.Contains(file, "@every 1s") {
		t.Fatalf("the committed schedule file:\n%s", file)
	}
	if who, _, msg := repo.Head("main"); who != "admin" || msg != "pause ping" {
		t.Fatalf("head commit by %q: %q", who, msg)
	}
	// The branch (the bad schedule replaced by the save) syncs now.
	e.do("POST", "/api/v1/projects/demo/git/sync", "", http.StatusOK, &res)
	if res.Commit != saved.GitCommit {
		t.Fatalf("synced %s, want the save's commit %s", res.Commit, saved.GitCommit)
	}
	e.do("GET", "/api/v1/projects/demo/workflows/ping", "", http.StatusOK, &wf)
	e.do("GET", "/api/v1/projects/demo/workflows/ping/schedule", "", http.StatusOK, &sc)
	if wf.Version != 2 || sc.Enabled {
		t.Fatalf("after the sync: workflow version %d, schedule %+v", wf.Version, sc)
	}
}

// scheduledRun waits for a run a schedule of workflow fired and returns
// the first's id.
func (e *env) scheduledRun(workflow string) int64 {
	e.t.Helper()
	var id int64
	wait.UntilErr(e.t, 60*time.Second, "a fire of the schedule of "+workflow, func() error {
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
	return id
}
