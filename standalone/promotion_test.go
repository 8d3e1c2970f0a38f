package standalone_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestPromotionGatesScheduledRuns (README, "Promotion with review"): ann
// promotes demo/etl into prod; rob (approve on prod) rejects it, she
// promotes again, he approves: prod gets the version as its own, and its
// schedule, gated, runs it. A direct edit of prod's etl after that is
// drift: flagged by the API, alerted once through the gate's channel, and
// the schedule still runs the approved version, not the edit.
func TestPromotionGatesScheduledRuns(t *testing.T) {
	var mu sync.Mutex
	var alerts []map[string]any
	got := make(chan struct{}, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		alerts = append(alerts, body)
		mu.Unlock()
		got <- struct{}{}
	}))
	defer recv.Close()

	e := start(t, "")
	runs := filepath.Join(e.dir, "runs")
	etl := func(v string) string {
		return fmt.Sprintf("name: etl\ntasks:\n  - {name: load, command: \"echo %s >> %s\"}\n", v, runs)
	}
	// The reviewers here are plain users: let them apply shell tasks on a
	// server that is not root.
	e.do("PUT", "/api/v1/settings/tasks.allow_unsandboxed_code", `{"value":1}`, http.StatusOK, nil)
	e.do("PUT", "/api/v1/alert-channels/ops", fmt.Sprintf(`{"kind":"webhook","url":%q}`, recv.URL), http.StatusCreated, nil)
	e.do("POST", "/api/v1/projects", `{"name":"prod"}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/prod/workflows/etl", etl("prod-v1"), http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/prod/promotion", `{"source_project":"demo","require_review":true,"alert_channels":["ops"]}`, http.StatusOK, nil)
	e.apply(etl("dev-v2"))
	// prod's schedule fires every second; gated, it runs version 1 until
	// a promotion is approved.
	var sc struct {
		PinVersion int `json:"pin_version"`
	}
	e.do("PUT", "/api/v1/projects/prod/workflows/etl/schedule", `{"cron":"@every 1s"}`, http.StatusCreated, &sc)
	if sc.PinVersion != 1 {
		t.Fatalf("the gated schedule pins %d, want the baseline 1", sc.PinVersion)
	}
	// scheduledAfter waits for a scheduled run with an id above after, to
	// its end, and returns it and its version.
	scheduledAfter := func(after int64) (int64, int) {
		t.Helper()
		var id int64
		wait.UntilErr(t, 60*time.Second, fmt.Sprintf("a scheduled run of prod/etl after %d", after), func() error {
			var l struct {
				Items []struct {
					ID         int64 `json:"id"`
					ScheduleID int64 `json:"schedule_id"`
				} `json:"items"`
			}
			e.do("GET", "/api/v1/instances?project=prod&workflow=etl", "", http.StatusOK, &l)
			for _, it := range l.Items {
				if it.ScheduleID != 0 && it.ID > after && (id == 0 || it.ID < id) {
					id = it.ID
				}
			}
			if id == 0 {
				return fmt.Errorf("none in %+v", l.Items)
			}
			return nil
		})
		if iv := e.wait(id, 60*time.Second); iv.State != "succeeded" {
			t.Fatalf("scheduled run %d: %s", id, iv.State)
		}
		return id, e.versionOf(id).Version
	}
	if _, v := scheduledAfter(0); v != 1 {
		t.Fatalf("a fire before any promotion ran version %d, want 1", v)
	}

	ann, rob := e.as("ann", "user"), e.as("rob", "user")
	for _, g := range []struct{ project, user, level string }{{"demo", "ann", "edit"}, {"prod", "ann", "view"}, {"prod", "rob", "approve"}} {
		e.do("PUT", "/api/v1/projects/"+g.project+"/grants/"+g.user, `{"level":"`+g.level+`"}`, http.StatusOK, nil)
	}
	type request struct {
		ID             int64  `json:"id"`
		State          string `json:"state"`
		AppliedVersion int    `json:"applied_version"`
		CanReview      bool   `json:"can_review"`
		Diff           struct {
			Text string `json:"text"`
		} `json:"diff"`
	}
	promote := func() request {
		var r request
		ann.do("POST", "/api/v1/projects/prod/promotions", `{"source_project":"demo","workflow":"etl","message":"dev-v2"}`, http.StatusCreated, &r)
		if r.State != "open" || !strings.Contains(r.Diff.Text, "dev-v2") || !strings.Contains(r.Diff.Text, "prod-v1") {
			t.Fatalf("request: %+v", r)
		}
		return r
	}
	first := promote()
	ann.do("POST", fmt.Sprintf("/api/v1/projects/prod/promotions/%d/approve", first.ID), "", http.StatusForbidden, nil)
	var r request
	rob.do("POST", fmt.Sprintf("/api/v1/projects/prod/promotions/%d/reject", first.ID), `{"comment":"not on a Friday"}`, http.StatusOK, &r)
	if r.State != "rejected" {
		t.Fatalf("rejected: %+v", r)
	}
	second := promote()
	rob.do("GET", fmt.Sprintf("/api/v1/projects/prod/promotions/%d", second.ID), "", http.StatusOK, &r)
	if !r.CanReview {
		t.Fatalf("rob may not review: %+v", r)
	}
	rob.do("POST", fmt.Sprintf("/api/v1/projects/prod/promotions/%d/approve", second.ID), `{"comment":"ok"}`, http.StatusOK, &r)
	if r.State != "applied" || r.AppliedVersion != 2 {
		t.Fatalf("approved: %+v", r)
	}

	// A direct edit on prod, twice: drift, flagged, alerted once.
	e.do("PUT", "/api/v1/projects/prod/workflows/etl", etl("prod-hotfix"), http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/prod/workflows/etl", etl("prod-hotfix-2"), http.StatusCreated, nil)
	var edited int64 // the newest run when the edits were made
	var l struct {
		Items []struct {
			ID int64 `json:"id"`
		} `json:"items"`
	}
	e.do("GET", "/api/v1/instances?project=prod&workflow=etl", "", http.StatusOK, &l)
	for _, it := range l.Items {
		edited = max(edited, it.ID)
	}
	var gate struct {
		Drift []struct {
			Workflow        string `json:"workflow"`
			SinceVersion    int    `json:"since_version"`
			PromotedVersion int    `json:"promoted_version"`
		} `json:"drift"`
	}
	e.do("GET", "/api/v1/projects/prod/promotion", "", http.StatusOK, &gate)
	if len(gate.Drift) != 1 || gate.Drift[0].Workflow != "etl" || gate.Drift[0].SinceVersion != 3 || gate.Drift[0].PromotedVersion != 2 {
		t.Fatalf("drift: %+v", gate.Drift)
	}
	wait.Signal(t, 60*time.Second, "the drift alert", got)

	// The schedule, re-pinned by the approval, runs version 2; after the
	// edits too, not them.
	var last int64
	for n := 0; ; n++ {
		var v int
		last, v = scheduledAfter(last)
		if v == 2 {
			break
		}
		// Fires planned before the approval still run v1; a few, not more.
		if v != 1 || n == 30 {
			t.Fatalf("scheduled run %d ran version %d (%d runs after the approval's start)", last, v, n)
		}
	}
	if after, v := scheduledAfter(max(last, edited)); v != 2 {
		t.Fatalf("scheduled run %d after the edits ran version %d, want the approved 2", after, v)
	}
	e.do("GET", "/api/v1/projects/prod/workflows/etl/schedule", "", http.StatusOK, &sc)
	if sc.PinVersion != 2 {
		t.Fatalf("the schedule pins %d after the approval, want 2", sc.PinVersion)
	}
	e.do("DELETE", "/api/v1/projects/prod/workflows/etl/schedule", "", http.StatusNoContent, nil)
	if got := runsOf(t, runs); strings.Contains(got, "hotfix") || !strings.Contains(got, "dev-v2") {
		t.Fatalf("the schedule ran %q, want prod-v1 then the approved dev-v2 only", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(alerts) != 1 || alerts[0]["kind"] != "promotion_drift" || alerts[0]["workflow"] != "etl" ||
		!strings.Contains(fmt.Sprint(alerts[0]["text"]), "version 3") {
		t.Fatalf("drift alerts: %v", alerts)
	}
}
