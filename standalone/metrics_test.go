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

	"github.com/beluga-scheduler/beluga/testkit/metricstest"
)

// TestMetricsMoveWithARun scrapes a standalone's /metrics (master, worker
// and API in one registry on the API port) before and after a run with a
// task group and a retried task, and checks every family moved; a scrape
// without the token (made at <data-dir>/metrics-token, 0600) gets 401.
func TestMetricsMoveWithARun(t *testing.T) {
	e := start(t, "")
	tokFile := filepath.Join(e.dir, "metrics-token")
	if e.sa.MetricsTokenFile != tokFile {
		t.Fatalf("token file %q, want %q", e.sa.MetricsTokenFile, tokFile)
	}
	fi, err := os.Stat(tokFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, fi)
	}
	b, _ := os.ReadFile(tokFile)
	token := strings.TrimSpace(string(b))
	url := e.base + "/metrics"
	for _, tok := range []string{"", "wrong", token + "x"} {
		if code, _, err := metricstest.Get(nil, url, tok); err != nil || code != http.StatusUnauthorized {
			t.Fatalf("scrape with token %q: %d %v, want 401", tok, code, err)
		}
	}
	scrape := func() metricstest.Scrape {
		t.Helper()
		code, s, err := metricstest.Get(nil, url, token)
		if err != nil || code != http.StatusOK {
			t.Fatalf("scrape: %d %v", code, err)
		}
		return s
	}
	before := scrape()
	e.do("POST", "/api/v1/task-groups", `{"name":"tg1","capacity":1}`, http.StatusCreated, nil)
	marker := filepath.Join(t.TempDir(), "marker")
	e.apply(`name: metered
tasks:
  - {name: a, command: "true", task_group: tg1}
  - {name: b, command: "true", task_group: tg1}
  - {name: c, command: "test -f ` + marker + ` || { touch ` + marker + `; exit 1; }", retries: 1, depends_on: [a]}
`)
	id := e.run("metered", nil)
	if iv := e.wait(id, time.Minute); iv.State != "succeeded" {
		t.Fatalf("run %s: %+v", iv.State, iv.Tasks)
	}
	var after metricstest.Scrape
	// The last report's DB-ack is counted right after the result lands; the
	// checks below say which family did not move.
	_ = wait.Poll(30*time.Second, "the ack latencies of 8 reports", func() bool {
		after = scrape()
		return after.Value("beluga_report_ack_latency_seconds")-before.Value("beluga_report_ack_latency_seconds") >= 8
	})
	delta := func(name string, labels ...string) float64 {
		return after.Value(name, labels...) - before.Value(name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"beluga_task_transitions_total", []string{"state=submitted", "type=shell"}, 4}, // a, b, c, c's retry
		{"beluga_task_transitions_total", []string{"state=dispatched", "type=shell"}, 4},
		{"beluga_task_transitions_total", []string{"state=running", "type=shell"}, 4},
		{"beluga_task_transitions_total", []string{"state=succeeded", "type=shell"}, 3},
		{"beluga_task_transitions_total", []string{"state=failed", "type=shell"}, 1},
		{"beluga_instance_transitions_total", []string{"state=running"}, 1},
		{"beluga_instance_transitions_total", []string{"state=succeeded"}, 1},
		{"beluga_dispatch_latency_seconds", nil, 4},
		{"beluga_report_ack_latency_seconds", nil, 8}, // ack and result per attempt (a short task's Running is held)
		{"beluga_db_transaction_seconds", nil, 5},
		{"beluga_http_requests_total", []string{"route=POST /api/v1/projects/{project}/workflows/{name}/runs", "code=201"}, 1},
		{"beluga_http_requests_total", []string{"route=GET /api/v1/instances/{id}", "code=200"}, 1},
	} {
		if d := delta(c.name, c.labels...); d < c.min {
			t.Errorf("%s%v moved by %v, want >= %v", c.name, c.labels, d, c.min)
		}
	}
	// A schedule firing every second: the cron families move.
	e.apply("name: ticker\ntasks:\n  - {name: t, command: \"true\"}\n")
	e.do("PUT", "/api/v1/projects/demo/workflows/ticker/schedule", `{"cron":"* * * * * *","timezone":"UTC"}`, http.StatusCreated, nil)
	wait.UntilErr(t, 30*time.Second, "the cron families to move by 2", func() error {
		fired := scrape()
		if fired.Value("beluga_cron_fire_lag_seconds")-before.Value("beluga_cron_fire_lag_seconds") >= 2 &&
			fired.Value("beluga_schedule_times_total", "outcome=fired")-before.Value("beluga_schedule_times_total", "outcome=fired") >= 2 {
			return nil
		}
		return fmt.Errorf("lag %v, fired %v", fired.Value("beluga_cron_fire_lag_seconds"),
			fired.Value("beluga_schedule_times_total", "outcome=fired"))
	})
	e.do("DELETE", "/api/v1/projects/demo/workflows/ticker/schedule", "", http.StatusNoContent, nil)
	if v := after.Value("beluga_leader"); v != 1 {
		t.Errorf("beluga_leader = %v, want 1", v)
	}
	if v := after.Value("beluga_epoch"); v < 1 {
		t.Errorf("beluga_epoch = %v, want >= 1", v)
	}
	worker := "worker=" + e.sa.Worker.Addr()
	if v := after.Value("beluga_worker_slots", worker); v != 8 {
		t.Errorf("beluga_worker_slots = %v, want 8", v)
	}
	if v := after.Value("beluga_worker_free_slots", worker); v != 8 {
		t.Errorf("beluga_worker_free_slots after the run = %v, want 8", v)
	}
	for _, f := range []string{"beluga_queue_depth", "beluga_queue_oldest_seconds", "beluga_worker_running_tasks",
		"beluga_db_transaction_errors_total", "beluga_http_request_duration_seconds", "beluga_cron_fire_lag_seconds",
		"beluga_schedule_times_total", "beluga_zookeeper_session_connected", "beluga_zookeeper_reconnects_total"} {
		if !after.Has(f) && f != "beluga_db_transaction_errors_total" && f != "beluga_schedule_times_total" && f != "beluga_zookeeper_reconnects_total" {
			t.Errorf("family %s missing", f)
		}
	}
}
