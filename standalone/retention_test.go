package standalone_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

type retentionPlanView struct {
	Roots     []int64        `json:"roots"`
	Instances []int64        `json:"instances"`
	Kept      map[string]int `json:"kept"`
	TaskRows  int64          `json:"task_rows"`
	EventRows int64          `json:"event_rows"`
	LogFiles  int64          `json:"log_files"`
	Bytes     int64          `json:"bytes"`
	Skipped   []int64        `json:"skipped"`
}

// TestRetentionThroughREST: on a real standalone, runs that really ran are
// planned and purged under a project's keep_runs by its editor; the purge
// deletes what the plan listed and nothing else (a running run and each
// workflow's newest stay); outsiders get 401 and plain users 403 on the
// admins' routes, and 404 on a project they cannot see.
func TestRetentionThroughREST(t *testing.T) {
	e := start(t, "")
	e.apply(`name: etl
tasks:
  - {name: extract, command: "echo extract"}
  - {name: load, command: "echo load", depends_on: [extract]}
`)
	e.apply(`name: slow
params: {secs: "0"}
tasks:
  - {name: nap, command: "sleep ${secs}"}
`)
	var etl []int64
	for range 4 {
		id := e.run("etl", nil)
		if iv := e.wait(id, 60*time.Second); iv.State != "succeeded" {
			t.Fatalf("etl run %d: %+v", id, iv)
		}
		etl = append(etl, id)
	}
	running := e.run("slow", map[string]string{"secs": "120"})
	e.waitTask(running, "nap", "running")
	quick := e.run("slow", nil)
	e.wait(quick, 60*time.Second)

	ed := e.plainUser("ed") // edit on demo
	ed.do("PUT", "/api/v1/projects/demo/retention", `{"keep_runs":-1}`, http.StatusBadRequest, nil)
	ed.do("PUT", "/api/v1/projects/demo/retention", `{"keep_runs":1}`, http.StatusOK, nil)

	// The runs' events reach the alert planner within its cursor interval;
	// until then the plan keeps them, saying why.
	var plan retentionPlanView
	deadline := time.Now().Add(90 * time.Second)
	for {
		ed.do("POST", "/api/v1/projects/demo/retention/plan", "", http.StatusOK, &plan)
		if len(plan.Roots) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan after %v: %+v", 90*time.Second, plan)
		}
		time.Sleep(100 * time.Millisecond) // polling the API as an operator does
	}
	if !slices.Equal(plan.Roots, etl[:3]) || plan.TaskRows != 6 || plan.LogFiles != 6 || plan.Bytes <= 0 || plan.EventRows == 0 {
		t.Fatalf("plan %+v, want etl runs %v with 6 task rows", plan, etl[:3])
	}
	if plan.Kept["not finished (running, waiting, paused or stopping)"] != 1 {
		t.Fatalf("plan keeps %v, want the running run kept as unfinished", plan.Kept)
	}
	var purged retentionPlanView
	ed.do("POST", "/api/v1/projects/demo/retention/purge", "", http.StatusOK, &purged)
	if !slices.Equal(purged.Instances, plan.Instances) || purged.TaskRows != plan.TaskRows || purged.EventRows != plan.EventRows {
		t.Fatalf("purge %+v, plan %+v", purged, plan)
	}
	for _, id := range etl[:3] {
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusNotFound, nil)
	}
	for _, id := range []int64{etl[3], running, quick} {
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, nil)
	}
	ed.do("POST", "/api/v1/projects/demo/retention/plan", "", http.StatusOK, &plan)
	if len(plan.Instances) != 0 {
		t.Fatalf("a plan after the purge lists %v", plan.Instances)
	}
	// The scheduler goes on: a new run after the purge runs to its end.
	if iv := e.wait(e.run("etl", nil), 60*time.Second); iv.State != "succeeded" {
		t.Fatalf("a run after the purge: %+v", iv)
	}

	// Who may: outsiders 401; a plain user without grants 403 on the
	// admins' routes and 404 on a project she cannot see.
	for _, path := range []string{"/api/v1/retention/plan", "/api/v1/projects/demo/retention/purge"} {
		resp, err := http.Post(e.base+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("outsider POST %s: %d, want 401", path, resp.StatusCode)
		}
	}
	nobody := e.as("nobody", "user")
	nobody.do("PUT", "/api/v1/retention", `{"keep_days":1}`, http.StatusForbidden, nil)
	nobody.do("POST", "/api/v1/retention/purge", "", http.StatusForbidden, nil)
	nobody.do("POST", "/api/v1/projects/demo/retention/purge", "", http.StatusNotFound, nil)
	e.do("POST", "/api/v1/retention/plan", `{"projects":["nope"]}`, http.StatusBadRequest, nil)
}
