package metrics

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/beluga-scheduler/beluga/common/model"
)

// names are the fully qualified names of Beluga's families.
func names(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range beluga {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("desc %s", d)
		}
		out[m[1]] = true
	}
	return out
}

// TestDashboardUsesTheFamilies: every beluga_* series the Grafana
// dashboard and the docs query exists, and every family is on the
// dashboard.
func TestDashboardUsesTheFamilies(t *testing.T) {
	fams := names(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "docker", "grafana", "dashboards", "beluga.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	used := map[string]bool{}
	series := regexp.MustCompile(`beluga_[a-z_]+`)
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, s := range series.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "_bucket"), "_count"), "_sum")
				if !fams[base] {
					t.Errorf("panel %q queries %s: no such family", p.Title, s)
				}
				used[base] = true
			}
		}
	}
	for f := range fams {
		if !used[f] && f != "beluga_worker_slots" && f != "beluga_worker_queued_tasks" {
			t.Errorf("family %s is on no panel", f)
		}
	}
	prom, err := os.ReadFile(filepath.Join("..", "..", "docker", "prometheus.yml"))
	if err != nil || strings.Count(string(prom), "bearer_token_file: /run/secrets/metrics_token") != 3 {
		t.Fatalf("prometheus.yml: every job scrapes with the token file (%v)", err)
	}
}

func TestHandlerWantsTheToken(t *testing.T) {
	srv := httptest.NewServer(Handler("s3cret"))
	defer srv.Close()
	for _, c := range []struct {
		auth string
		code int
	}{{"", 401}, {"Bearer wrong", 401}, {"s3cret", 401}, {"Basic s3cret", 401}, {"Bearer s3cret", 200}} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("Authorization %q: %d, want %d", c.auth, resp.StatusCode, c.code)
		}
	}
	empty := httptest.NewServer(Handler(""))
	defer empty.Close()
	req, _ := http.NewRequest("GET", empty.URL, nil)
	req.Header.Set("Authorization", "Bearer ")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("no token set: %d, want 401", resp.StatusCode)
	}
}

func TestEnsureToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics-token")
	a, err := EnsureToken(path)
	if err != nil || len(a) != 64 {
		t.Fatalf("made %q %v", a, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if b, err := EnsureToken(path); err != nil || b != a {
		t.Fatalf("second start read %q %v, want %q", b, err, a)
	}
	if err := os.WriteFile(path, []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadToken(path); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty file: %v", err)
	}
}

// Task counts each state into its own pre-resolved child.
func TestTaskCounters(t *testing.T) {
	before := func(s model.TaskState) float64 {
		return counterValue(t, TaskTransitions.WithLabelValues(string(s), "t_test"))
	}
	for _, s := range taskStates {
		b := before(s)
		Task("t_test", s)
		if after := before(s); after != b+1 {
			t.Errorf("state %s: %v -> %v", s, b, after)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestStateIndexCoversEveryState: each task state has its pre-resolved
// counter (a state left out would take the slower labelled path).
func TestStateIndexCoversEveryState(t *testing.T) {
	for i, s := range taskStates {
		if got := stateIndex(s); got != i {
			t.Errorf("stateIndex(%s) = %d, want %d", s, got, i)
		}
	}
	if len(taskStates) != len(typeCounters{}) {
		t.Errorf("%d states, %d counters", len(taskStates), len(typeCounters{}))
	}
	for _, s := range model.TaskStates() {
		if stateIndex(s) < 0 {
			t.Errorf("state %s has no pre-resolved counter", s)
		}
	}
}
