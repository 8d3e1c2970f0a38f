package standalone_test

import (
	"encoding/json"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/bench/benchkit"
)

type forecastView struct {
	End          time.Time  `json:"end"`
	P90End       time.Time  `json:"p90_end"`
	CriticalPath []string   `json:"critical_path"`
	NoHistory    []string   `json:"no_history"`
	Slow         []string   `json:"slow"`
	Deadline     *time.Time `json:"deadline"`
	Late         bool       `json:"late"`
	At           time.Time  `json:"at"`
}

type forecastInstance struct {
	State     string        `json:"state"`
	StartTime *time.Time    `json:"start_time"`
	EndTime   *time.Time    `json:"end_time"`
	Forecast  *forecastView `json:"forecast"`
}

func (e *env) forecast(id int64) forecastInstance {
	e.t.Helper()
	var fi forecastInstance
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d?tasks_limit=0&forecast=true", id), "", http.StatusOK, &fi)
	return fi
}

// Known durations (benchkit's, which bench/forecast measures too).
const (
	forecastChain = benchkit.ForecastChainSpec
	forecastFan   = benchkit.ForecastFanSpec
)

// TestForecastOfAChain: after runs for history, a running chain's
// forecast (instance API) names its critical path, has no guessed task,
// and lands near the actual end; a finished run has none; an outsider gets
// 401 and a plain user without a grant on the project 404.
func TestForecastOfAChain(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(forecastChain)
		first := e.run("chain", nil)
		wait.Until(t, 30*time.Second, "the first run's forecast", func() bool {
			fi := e.forecast(first)
			if fi.Forecast != nil && fi.State == "running" {
				// no history yet: every task counts the default
				if !slices.Equal(fi.Forecast.NoHistory, []string{"a", "b", "c"}) {
					t.Fatalf("first run's forecast: %+v", fi.Forecast)
				}
				return true
			}
			if fi.State != "submitted" && fi.State != "running" {
				t.Fatalf("first run is %s before a forecast was seen", fi.State)
			}
			return false
		})
		e.wait(first, time.Minute)
		e.wait(e.run("chain", nil), time.Minute)

		id := e.run("chain", nil)
		var fi forecastInstance
		wait.Until(t, 30*time.Second, "the run started with a forecast", func() bool {
			fi = e.forecast(id)
			return fi.State == "running" && fi.Forecast != nil && fi.StartTime != nil
		})
		f := fi.Forecast
		if len(f.NoHistory) != 0 || len(f.Slow) != 0 || f.Deadline != nil || f.Late {
			t.Fatalf("forecast with history: %+v", f)
		}
		if len(f.CriticalPath) == 0 || f.CriticalPath[len(f.CriticalPath)-1] != "c" {
			t.Fatalf("critical path %v, want it to end with c", f.CriticalPath)
		}
		if f.P90End.Before(f.End) {
			t.Fatalf("p90 end %v before end %v", f.P90End, f.End)
		}

		// outsider and a plain user without a grant: the forecast is the
		// instance's, behind its grants
		path := fmt.Sprintf("/api/v1/instances/%d", id)
		if st := statusWith(t, e.base, path, ""); st != http.StatusUnauthorized {
			t.Fatalf("outsider: %d, want 401", st)
		}
		if st := statusWith(t, e.base, path, "not-a-token"); st != http.StatusUnauthorized {
			t.Fatalf("bad token: %d, want 401", st)
		}
		var raw string
		e.as("pat", "user").do("GET", path, "", http.StatusNotFound, &raw)
		if strings.Contains(raw, "forecast") {
			t.Fatalf("a refusal shows the forecast: %s", raw)
		}

		done := e.wait(id, time.Minute)
		if done.State != "succeeded" {
			t.Fatalf("run: %+v", done)
		}
		after := e.forecast(id)
		if after.Forecast != nil {
			t.Fatalf("a finished run has a forecast: %+v", after.Forecast)
		}
		// 4s of sleeps: the projection made at the start lands within 1.5s
		// on a quiet machine; a loaded one stretches the run and its
		// history unevenly, so the bound grows with the run (40 %): a
		// projection off by a default or a lost task is still caught.
		bound := max(1500*time.Millisecond, after.EndTime.Sub(*after.StartTime)*2/5)
		if miss := f.End.Sub(*after.EndTime); absDur(miss) > bound {
			t.Fatalf("projected end %v, actual %v: %v off (bound %v)", f.End, *after.EndTime, miss, bound)
		}
	})
}

// TestForecastError measures the forecast on bench-like workloads (a chain
// and a fan-out of known sleeps): three runs of each for history, then one
// run sampled, and the projection at 25, 50 and 75 % of its actual run
// time compared with its actual end. The figures are logged (go test -v);
// each must be within a second, or a quarter of the run on a loaded machine.
func TestForecastError(t *testing.T) {
	e := start(t, "")
	e.apply(forecastChain)
	e.apply(forecastFan)
	for range 3 {
		c, f := e.run("chain", nil), e.run("fan", nil)
		e.wait(c, time.Minute)
		e.wait(f, time.Minute)
	}
	for _, wf := range []string{"chain", "fan"} {
		id := e.run(wf, nil)
		type sample struct {
			at  time.Time
			end time.Time
		}
		var samples []sample
		var fi forecastInstance
		for {
			fi = e.forecast(id)
			if fi.Forecast != nil {
				if len(fi.Forecast.NoHistory) != 0 {
					t.Fatalf("%s: tasks without history after 3 runs: %v", wf, fi.Forecast.NoHistory)
				}
				samples = append(samples, sample{fi.Forecast.At, fi.Forecast.End})
			}
			if fi.State != "submitted" && fi.State != "running" {
				break
			}
			time.Sleep(50 * time.Millisecond) // time is the subject: the projection sampled over the run, as a page does
		}
		if fi.State != "succeeded" || fi.StartTime == nil || fi.EndTime == nil {
			t.Fatalf("%s: %+v", wf, fi)
		}
		start, end := *fi.StartTime, *fi.EndTime
		total := end.Sub(start)
		var report []string
		for _, pct := range []int{25, 50, 75} {
			at := start.Add(total * time.Duration(pct) / 100)
			best := -1
			for i, s := range samples {
				if best < 0 || absDur(s.at.Sub(at)) < absDur(samples[best].at.Sub(at)) {
					best = i
				}
			}
			if best < 0 {
				t.Fatalf("%s: no forecast sampled", wf)
			}
			miss := samples[best].end.Sub(end)
			report = append(report, fmt.Sprintf("%d%%: %+.2fs", pct, miss.Seconds()))
			if absDur(miss) > max(time.Second, total/4) { // a loaded machine's runs vary: see TestForecastOfAChain
				t.Errorf("%s at %d%%: projected %v, actual end %v: %v off", wf, pct, samples[best].end, end, miss)
			}
		}
		t.Logf("forecast error, %s (run %.2fs, %d samples): %s", wf, total.Seconds(), len(samples), strings.Join(report, ", "))
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// TestDeadlineAlertBeforeTheMiss: a run whose history says it will miss
// its deadline alerts deadline_risk once, before the deadline, naming its
// critical path; when its first task ends early and the projection comes
// back under the deadline, deadline_ok clears it; the run then succeeds in
// time, so no miss alert follows.
func TestDeadlineAlertBeforeTheMiss(t *testing.T) {
	type got struct {
		at   time.Time
		body map[string]any
	}
	var mu sync.Mutex
	var alerts []got
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		alerts = append(alerts, got{time.Now(), b})
		mu.Unlock()
	}))
	defer recv.Close()
	e := start(t, "")
	e.do("PUT", "/api/v1/alert-channels/hook", fmt.Sprintf(`{"kind":"webhook","url":%q}`, recv.URL), http.StatusCreated, nil)
	// Each task waits for its gate file once its sleep is done: the test,
	// not the machine's pace, says when a ends, so a loaded machine cannot
	// end a before the first projection (no risk) or too late for the
	// clear (history 8 s + 2 s against a 7 s deadline; once a ends the
	// projection is now + 2 s).
	gateA, gate := filepath.Join(e.dir, "gate-a"), filepath.Join(e.dir, "gate")
	tasks := "tasks:\n" +
		"  - {name: a, command: \"sleep ${a_sleep}; while [ ! -f ${gate_a} ]; do sleep 0.05; done\"}\n" +
		"  - {name: b, command: \"sleep ${b_sleep}; while [ ! -f ${gate} ]; do sleep 0.05; done\", depends_on: [a]}\n"
	params := "params: {a_sleep: \"8\", b_sleep: \"2\", gate_a: \"" + gateA + "\", gate: \"" + gate + "\"}\n"
	// history: a takes 8s and b 2s, with no deadline (no alerts)
	e.apply("name: tight\n" + params + tasks)
	for _, g := range []string{gateA, gate} {
		if err := os.WriteFile(g, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.wait(e.run("tight", nil), time.Minute)
	for _, g := range []string{gateA, gate} {
		if err := os.Remove(g); err != nil {
			t.Fatal(err)
		}
	}
	// now with a deadline 7s after the run is created: projected at 10s
	e.apply("name: tight\ndeadline: 7s\nalerts: {on: [failure], channels: [hook]}\n" + params + tasks)
	id := e.run("tight", map[string]string{"a_sleep": "0", "b_sleep": "0"})
	var iv struct {
		CreatedAt time.Time `json:"created_at"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d?tasks_limit=0", id), "", http.StatusOK, &iv)
	deadline := iv.CreatedAt.Add(7 * time.Second)
	kinds := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var ks []string
		for _, a := range alerts {
			ks = append(ks, fmt.Sprint(a.body["kind"]))
		}
		return ks
	}
	wait.Until(t, 30*time.Second, "deadline_risk", func() bool { return len(kinds()) >= 1 })
	if err := os.WriteFile(gateA, nil, 0o644); err != nil { // a ends: back on track
		t.Fatal(err)
	}
	wait.Until(t, 30*time.Second, "deadline_ok", func() bool { return len(kinds()) >= 2 })
	mu.Lock()
	risk, ok := alerts[0], alerts[1]
	mu.Unlock()
	if risk.body["kind"] != "deadline_risk" || ok.body["kind"] != "deadline_ok" {
		t.Fatalf("alerts %v, want deadline_risk then deadline_ok", kinds())
	}
	if !risk.at.Before(deadline) || !ok.at.Before(deadline) {
		t.Fatalf("risk at %v, clear at %v: deadline %v", risk.at, ok.at, deadline)
	}
	text := fmt.Sprint(risk.body["text"])
	if risk.body["instance_id"] != float64(id) || !strings.Contains(text, "critical path: a (p50 8s) -> b (p50 2s)") ||
		!strings.Contains(text, "after its deadline") {
		t.Fatalf("risk alert: %v", risk.body)
	}
	if !strings.Contains(fmt.Sprint(ok.body["text"]), "back on track") {
		t.Fatalf("clear alert: %v", ok.body)
	}
	if fi := e.forecast(id); fi.Forecast == nil || fi.Forecast.Late || fi.Forecast.Deadline == nil || !fi.Forecast.Deadline.Equal(deadline) {
		t.Fatalf("forecast while back on track: %+v", fi.Forecast)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if done := e.wait(id, time.Minute); done.State != "succeeded" {
		t.Fatalf("run: %+v", done)
	}
	// once only: the alerts of the run, past its deadline, are the two
	time.Sleep(time.Until(deadline.Add(1500 * time.Millisecond))) // time is the subject: past the deadline, to show no miss alert comes
	var hist struct {
		Items []struct{ Kind string } `json:"items"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/alerts?instance=%d", id), "", http.StatusOK, &hist)
	if ks := kinds(); len(ks) != 2 || len(hist.Items) != 2 {
		t.Fatalf("alerts received %v, recorded %+v: want deadline_risk and deadline_ok only", ks, hist.Items)
	}
}
