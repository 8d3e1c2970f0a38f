package standalone_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
)

// newAttempts are the task names of instance id's attempts not in before
// (ids), sorted, and every attempt id now.
func (e *env) newAttempts(id int64, before map[int64]bool) ([]string, map[int64]bool) {
	e.t.Helper()
	var iv instanceView
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
	var names []string
	now := map[int64]bool{}
	for _, t := range iv.Tasks {
		now[t.ID] = true
		if !before[t.ID] {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names, now
}

// TestPlanCascade: a rerun planned with every downstream level reaches a
// 3-level cascade across two projects (extract <- transform <- crm/report,
// each waiting with a dependent task), and applying it runs exactly the
// plan: the same runs, the same tasks, nothing else. A plan made before
// the world changed (a schedule paused meanwhile) is refused, naming it.
func TestPlanCascade(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(`name: extract
tasks:
  - {name: e1, command: "true"}
  - {name: e2, command: "true", depends_on: [e1]}
`)
		e.apply(`name: transform
tasks:
  - {name: wait, type: dependent, wait_for: [{workflow: extract, date: today}], check_interval: 1s}
  - {name: t1, command: "true", depends_on: [wait]}
`)
		e.apply(`name: lonely
tasks:
  - {name: l1, command: "true"}
`)
		e.do("POST", "/api/v1/projects", `{"name":"crm"}`, http.StatusCreated, nil)
		e.do("PUT", "/api/v1/projects/crm/workflows/report", `name: report
tasks:
  - {name: wait, type: dependent, wait_for: [{project: demo, workflow: transform, date: today}], check_interval: 1s}
  - {name: r1, command: "true", depends_on: [wait]}
  - {name: r2, command: "true", depends_on: [wait]}
`, http.StatusCreated, nil)
		ext := e.run("extract", nil)
		e.succeeded(ext, 60*time.Second)
		tr := e.run("transform", nil)
		e.succeeded(tr, 60*time.Second)
		var rep struct {
			ID int64 `json:"id"`
		}
		e.do("POST", "/api/v1/projects/crm/workflows/report/runs", `{}`, http.StatusCreated, &rep)
		e.succeeded(rep.ID, 60*time.Second)
		lonely := e.run("lonely", nil)
		e.succeeded(lonely, 60*time.Second)

		// Direct reaches one level; all reaches the three, in order.
		var p api.Plan
		e.do("POST", fmt.Sprintf("/api/v1/instances/%d/plan", ext), `{"action":"rerun","downstream":"direct"}`, http.StatusCreated, &p)
		if len(p.Instances) != 2 || p.Instances[1].ID != tr {
			t.Fatalf("direct plan %+v", p.Instances)
		}
		e.do("POST", fmt.Sprintf("/api/v1/instances/%d/plan", ext), `{"action":"rerun","downstream":"all"}`, http.StatusCreated, &p)
		want := map[int64][]string{ext: {"e1", "e2"}, tr: {"t1", "wait"}, rep.ID: {"r1", "r2", "wait"}}
		planned := map[int64][]string{}
		for _, in := range p.Instances {
			var names []string
			for _, t := range in.Tasks {
				names = append(names, t.Name)
			}
			slices.Sort(names)
			planned[in.ID] = names
		}
		if len(p.Instances) != 3 || p.Instances[0].ID != ext || p.Instances[1].ID != tr || p.Instances[2].ID != rep.ID ||
			p.Instances[2].Project != "crm" || p.Instances[2].Level != 2 || p.Blocked || fmt.Sprint(planned) != fmt.Sprint(want) {
			t.Fatalf("plan %+v (tasks %v)", p.Instances, planned)
		}
		if p.Estimate.P50 <= 0 || p.Estimate.P50 < p.Instances[0].Estimate.P50 {
			t.Fatalf("estimates: whole %+v, root %+v", p.Estimate, p.Instances[0].Estimate)
		}

		// A second plan, made now, goes stale below.
		var stale api.Plan
		e.do("POST", fmt.Sprintf("/api/v1/instances/%d/plan", ext), `{"action":"rerun","downstream":"all"}`, http.StatusCreated, &stale)

		before := map[int64]map[int64]bool{}
		for _, id := range []int64{ext, tr, rep.ID, lonely} {
			_, before[id] = e.newAttempts(id, nil)
		}
		var applied api.Plan
		e.do("POST", fmt.Sprintf("/api/v1/plans/%d/apply", p.ID), "", http.StatusAccepted, &applied)
		if len(applied.Commands) != 3 {
			t.Fatalf("apply wrote %v", applied.Commands)
		}
		ran := map[int64][]string{}
		for _, id := range []int64{ext, tr, rep.ID} {
			e.applied(id, "rerun")
			e.succeeded(id, 60*time.Second)
			ran[id], _ = e.newAttempts(id, before[id])
		}
		if fmt.Sprint(ran) != fmt.Sprint(planned) {
			t.Fatalf("ran %v, planned %v", ran, planned)
		}
		if got, _ := e.newAttempts(lonely, before[lonely]); len(got) != 0 {
			t.Fatalf("a run outside the plan ran %v", got)
		}

		// The world changes: crm/report gets a paused schedule.
		e.do("PUT", "/api/v1/projects/crm/workflows/report/schedule", `{"cron":"0 2 * * *","enabled":false}`, http.StatusCreated, nil)
		var msg string
		e.do("POST", fmt.Sprintf("/api/v1/plans/%d/apply", stale.ID), "", http.StatusConflict, &msg)
		if !strings.Contains(msg, "schedule of crm/report: was none, now paused") || !strings.Contains(msg, fmt.Sprintf("instance %d runs: was 1, now 2", ext)) {
			t.Fatalf("stale apply: %s", msg)
		}
		e.do("POST", fmt.Sprintf("/api/v1/plans/%d/apply", p.ID), "", http.StatusConflict, &msg)
		if !strings.Contains(msg, "was applied") {
			t.Fatalf("second apply: %s", msg)
		}
	})
}
