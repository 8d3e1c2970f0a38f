package cluster

import (
	"net/http"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/metricstest"
)

// TestMetricsEveryProcess scrapes /metrics on every process of a real
// cluster (two masters, a worker, the api) before and after a run: 401
// without the token; the leader's task, dispatch, report and DB families
// move, exactly one master says it leads, every process holding a
// ZooKeeper session says it is connected, the worker reports its slots and
// the api counts the requests.
func TestMetricsEveryProcess(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout})
	url := func(p *clustertest.Process) string {
		if p.Role == clustertest.RoleAPI {
			return "http://" + p.Addr + "/metrics"
		}
		return "http://" + p.MetricsAddr + "/metrics"
	}
	scrape := func(p *clustertest.Process) metricstest.Scrape {
		t.Helper()
		code, s, err := metricstest.Get(nil, url(p), c.MetricsToken)
		if err != nil || code != http.StatusOK {
			t.Fatalf("scrape %s: %d %v", p.Name, code, err)
		}
		return s
	}
	for _, p := range c.Processes() {
		if code, _, err := metricstest.Get(nil, url(p), ""); err != nil || code != http.StatusUnauthorized {
			t.Fatalf("%s: scrape without a token: %d %v, want 401", p.Name, code, err)
		}
	}
	leader := c.WaitLeader(t, failoverWithin, nil)
	before := map[string]metricstest.Scrape{}
	for _, p := range c.Processes() {
		before[p.Name] = scrape(p)
	}
	marks := t.TempDir()
	c.Apply(t, diamond(marks, "diamond", 0))
	id := c.Run(t, "diamond")
	c.WaitFinished(t, id, finishWithin)

	var after metricstest.Scrape
	c.Eventually(t, 30*time.Second, "the leader's families to move", func() bool {
		after = scrape(leader)
		b := before[leader.Name]
		return after.Value("beluga_task_transitions_total", "state=succeeded")-b.Value("beluga_task_transitions_total", "state=succeeded") >= 4 &&
			// ack and result of each of the 4 tasks (a short task's Running is held)
			after.Value("beluga_report_ack_latency_seconds")-b.Value("beluga_report_ack_latency_seconds") >= 8
	})
	b := before[leader.Name]
	for _, f := range []string{"beluga_dispatch_latency_seconds", "beluga_db_transaction_seconds"} {
		if d := after.Value(f) - b.Value(f); d < 4 {
			t.Errorf("leader %s moved by %v, want >= 4", f, d)
		}
	}
	if d := after.Value("beluga_instance_transitions_total", "state=succeeded") - b.Value("beluga_instance_transitions_total", "state=succeeded"); d != 1 {
		t.Errorf("leader's succeeded instances moved by %v, want 1", d)
	}
	leaders := 0.0
	for _, p := range c.Masters {
		s := scrape(p)
		leaders += s.Value("beluga_leader")
		if p == leader && (s.Value("beluga_leader") != 1 || s.Value("beluga_epoch") < 1) {
			t.Errorf("leader %s: beluga_leader %v, epoch %v", p.Name, s.Value("beluga_leader"), s.Value("beluga_epoch"))
		}
	}
	if leaders != 1 {
		t.Errorf("beluga_leader summed over the masters = %v, want 1", leaders)
	}
	for _, p := range append(append([]*clustertest.Process{}, c.Masters...), c.Workers...) {
		if v := scrape(p).Value("beluga_zookeeper_session_connected"); v != 1 {
			t.Errorf("%s: beluga_zookeeper_session_connected = %v, want 1", p.Name, v)
		}
	}
	w := c.Workers[0]
	ws := scrape(w)
	if ws.Value("beluga_worker_slots", "worker="+w.Addr) <= 0 || !ws.Has("beluga_worker_free_slots") || !ws.Has("beluga_worker_running_tasks") {
		t.Errorf("worker gauges: slots %v", ws.Value("beluga_worker_slots", "worker="+w.Addr))
	}
	as := scrape(c.API)
	route := "route=POST /api/v1/projects/{project}/workflows/{name}/runs"
	if d := as.Value("beluga_http_requests_total", route, "code=201") - before[c.API.Name].Value("beluga_http_requests_total", route, "code=201"); d != 1 {
		t.Errorf("api runs requests moved by %v, want 1", d)
	}
}
