package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/metricstest"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// metric is a family's value in this process (the standalone's master is
// here), summed over the series with the labels want ("k=v").
func metric(t *testing.T, name string, want ...string) float64 {
	t.Helper()
	s, err := metricstest.Gather(metrics.Registry)
	if err != nil {
		t.Fatal(err)
	}
	return s.Value(name, want...)
}

// TestAdmissionFlood floods a standalone far past its admission limits
// (admission.max_running_instances 10, admission.claim_batch 4,
// admission.max_pending_events 50): 500 runs asked for by 8 clients at once
// (50 times the running limit; 2,000 took 3 minutes under -race on a
// loaded 2-core machine). Throughout, the API answers every run (201,
// never refused) and /healthz within a bound, and no more than 10 runs are running at any
// sampled moment; the runs asked for while the master was held are
// answered with the reason, and /healthz says saturated. Then every run
// ends succeeded, having run its task exactly once, the master claims
// again without a restart, and /healthz says so.
func TestAdmissionFlood(t *testing.T) {
	const (
		runs       = 500
		clients    = 8
		maxRunning = 10
		answerMax  = 5 * time.Second // an API answer during the flood, on a loaded 2-core machine
	)
	e := start(t, "")
	for name, v := range map[string]int{model.SettingMaxRunningInstances: maxRunning, model.SettingClaimBatch: 4,
		model.SettingMaxPendingEvents: 50} {
		e.do("PUT", "/api/v1/settings/"+name, fmt.Sprintf(`{"value":%d}`, v), http.StatusOK, nil)
	}
	// The master reads the settings at most a second apart: the flood
	// begins once it has these (metrics are this process's).
	wait.Until(t, 10*time.Second, "the master read the limits", func() bool {
		return metric(t, "beluga_admission_limit", "queue=running_instances") == maxRunning
	})
	waitsBefore := metric(t, "beluga_admission_waits_total", "limit="+model.SettingMaxRunningInstances)
	e.apply("name: flood\ntasks:\n  - {name: a, command: \"sleep 0.02\"}\n")
	hc := e.client()
	hc.Timeout = 30 * time.Second
	ctx := context.Background()
	st := e.store()
	begin := time.Now()

	// The sampler: runs running (the DB's count), and the answer time of
	// /healthz, until the flood has drained.
	var (
		mostRunning, samples int64
		slowest              time.Duration
		sawSaturated         atomic.Bool
		sampleErr            atomic.Value
	)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			_, n, err := st.InstanceList(ctx, store.InstanceFilter{Project: "demo", State: model.WorkflowRunning, Limit: 1})
			if err != nil {
				sampleErr.Store(err)
				return
			}
			samples++
			mostRunning = max(mostRunning, n)
			at := time.Now()
			resp, err := hc.Get(e.base + "/healthz")
			if err != nil {
				sampleErr.Store(err)
				return
			}
			var h struct{ Admission struct{ Saturated bool } }
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				sampleErr.Store(fmt.Errorf("healthz: %d %v", resp.StatusCode, err))
				return
			}
			slowest = max(slowest, time.Since(at))
			if h.Admission.Saturated {
				sawSaturated.Store(true)
			}
		}
	}()

	var (
		mu        sync.Mutex
		ids       = make([]int64, 0, runs)
		withWhy   int
		slowestRn time.Duration
		firstErr  error
	)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= runs {
				at := time.Now()
				resp, err := hc.Post(e.base+"/api/v1/projects/demo/workflows/flood/runs", "application/json", strings.NewReader("{}"))
				var out struct {
					ID     int64
					State  string
					Reason string
				}
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						err = fmt.Errorf("POST run: %d %s", resp.StatusCode, b)
					} else {
						err = json.Unmarshal(b, &out)
					}
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					ids = append(ids, out.ID)
					if strings.Contains(out.Reason, model.SettingMaxRunningInstances) ||
						strings.Contains(out.Reason, model.SettingMaxPendingEvents) {
						withWhy++
					}
				}
				slowestRn = max(slowestRn, time.Since(at))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	asked := time.Since(begin)
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	if len(ids) != runs {
		t.Fatalf("%d runs answered, want %d", len(ids), runs)
	}
	ended := func() (int64, error) {
		var n int64
		for _, s := range []model.WorkflowState{model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped} {
			_, k, err := st.InstanceList(ctx, store.InstanceFilter{Project: "demo", Workflow: "flood", State: s, Limit: 1})
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	}
	wait.UntilErr(t, 2*time.Minute, "every run ended", func() error {
		if n, err := ended(); err != nil || n < runs {
			return fmt.Errorf("%d of %d ended (%v)", n, runs, err)
		}
		return nil
	})
	drained := time.Since(begin)
	close(done)
	<-sampled
	if err, _ := sampleErr.Load().(error); err != nil {
		t.Fatalf("during the flood: %v", err)
	}

	// Exactly once: each run succeeded, started once, with one task instance.
	perRun := map[int64]int{}
	for off := 0; ; off += 1000 {
		page, _, err := st.TaskFind(ctx, store.TaskFilter{Project: "demo", Limit: 1000, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range page {
			if tk.State != model.TaskSucceeded {
				t.Fatalf("task %d of run %d: %s", tk.ID, tk.WorkflowInstanceID, tk.State)
			}
			perRun[tk.WorkflowInstanceID]++
		}
		if len(page) < 1000 {
			break
		}
	}
	for _, id := range ids {
		if perRun[id] != 1 {
			t.Fatalf("run %d has %d task instances, want 1", id, perRun[id])
		}
	}
	if _, n, err := st.InstanceList(ctx, store.InstanceFilter{Project: "demo", Workflow: "flood", State: model.WorkflowSucceeded, Limit: 1}); err != nil || n != runs {
		t.Fatalf("%d runs succeeded of %d (%v)", n, runs, err)
	}

	if mostRunning > maxRunning {
		t.Fatalf("%d runs running at once, the limit is %d", mostRunning, maxRunning)
	}
	if waits := metric(t, "beluga_admission_waits_total", "limit="+model.SettingMaxRunningInstances) - waitsBefore; waits < 1 {
		t.Fatal("the master never held runs at its running limit: the flood did not reach it")
	}
	if withWhy == 0 || !sawSaturated.Load() {
		t.Fatalf("runs answered with the reason: %d; /healthz said saturated: %v", withWhy, sawSaturated.Load())
	}
	if slowest > answerMax || slowestRn > answerMax {
		t.Fatalf("slowest answers during the flood: /healthz %s, POST run %s (bound %s)", slowest, slowestRn, answerMax)
	}
	// Recovered without a restart: the master admits again and says so.
	wait.UntilErr(t, 10*time.Second, "healthz says admitting", func() error {
		var h struct{ Admission struct{ Saturated bool } }
		e.do("GET", "/healthz", "", http.StatusOK, &h)
		if h.Admission.Saturated {
			return fmt.Errorf("still saturated")
		}
		return nil
	})
	e.run("flood", nil) // and a run asked for now starts at once
	t.Logf("%d runs asked in %s, all ended after %s; at most %d running of %d samples; %d answered with the reason; "+
		"slowest POST run %s, slowest /healthz %s; held at: running %v times, events %v times", runs, asked.Round(time.Millisecond),
		drained.Round(time.Millisecond), mostRunning, samples, withWhy, slowestRn.Round(time.Millisecond), slowest.Round(time.Millisecond),
		metric(t, "beluga_admission_waits_total", "limit="+model.SettingMaxRunningInstances)-waitsBefore,
		metric(t, "beluga_admission_waits_total", "limit="+model.SettingMaxPendingEvents))
}
