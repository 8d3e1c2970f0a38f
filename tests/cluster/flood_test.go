package cluster

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/metricstest"
)

// TestAdmissionFloodAcrossLeaderKill floods a two-master cluster far past
// its admission limits (admission.max_running_instances 4,
// admission.claim_batch 2): 60 runs asked for by 4 clients at once, then,
// once the leader is saturated and has finished some, it is killed -9 and
// 20 more runs are asked for while no master leads. Throughout, no more
// than 4 runs are running at any sampled moment (the DB's count, under the
// old leader, between them and under the new one); the runs asked for
// while the leader was held are answered with the limit as their reason,
// and /healthz says saturated under each leader (its admission row is read
// only with the term's epoch, so the second time it is the new leader's).
// The new leader drains the queue without a restart: every run succeeds,
// each task ran exactly once (the DB and the marker ledger the tasks
// append to), /healthz says admitting, and a run asked for then runs.
func TestAdmissionFloodAcrossLeaderKill(t *testing.T) {
	const (
		first, second, third = 60, 20, 10
		clients              = 4
		maxRunning           = 4
	)
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, WorkerSlots: 8, SessionTimeout: sessionTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for name, v := range map[string]int64{model.SettingMaxRunningInstances: maxRunning, model.SettingClaimBatch: 2} {
		if _, err := c.Client.SetSetting(ctx, name, v); err != nil {
			t.Fatal(err)
		}
	}
	marks := t.TempDir()
	c.Apply(t, spec.Workflow{Name: "flood", Tasks: []spec.Task{task(marks, "a", sleep(300*time.Millisecond))}})
	old := c.Leader()
	if old == nil {
		t.Fatal("no leader")
	}
	// The leader reads the settings at most a second apart: the flood
	// begins once it has these.
	c.Eventually(t, 30*time.Second, "the leader read the limits", func() bool {
		code, s, err := metricstest.Get(nil, "http://"+old.MetricsAddr+"/metrics", c.MetricsToken)
		return err == nil && code == http.StatusOK && s.Value("beluga_admission_limit", "queue=running_instances") == maxRunning
	})

	// The sampler: runs running (the DB's count) and /healthz's admission.
	var (
		mostRunning  atomic.Int64
		samples      atomic.Int64
		saturatedOld atomic.Bool // /healthz said saturated before the kill
		saturatedNew atomic.Bool // and after the new leader took over
		killed       atomic.Bool
		newLeader    atomic.Bool
		sampleErr    atomic.Value
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			_, n, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, State: model.WorkflowRunning, Limit: 1})
			if err != nil {
				sampleErr.Store(err)
				return
			}
			samples.Add(1)
			if n > mostRunning.Load() {
				mostRunning.Store(n)
			}
			h, err := c.Client.Healthz(ctx)
			if err != nil || h.Admission == nil {
				continue // the api's answer is not what this samples
			}
			if h.Admission.Saturated && strings.Contains(h.Admission.Reason, model.SettingMaxRunningInstances) {
				switch {
				case newLeader.Load():
					saturatedNew.Store(true)
				case !killed.Load():
					saturatedOld.Store(true)
				}
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-sampled
	}()

	var (
		mu       sync.Mutex
		ids      []int64
		withWhy  int
		firstErr error
	)
	flood := func(n int) (why int) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					inst, err := c.Client.Run(ctx, c.Project, "flood", client.RunOptions{})
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					if err == nil {
						ids = append(ids, inst.ID)
						if strings.Contains(inst.Reason, model.SettingMaxRunningInstances) {
							withWhy++
							why++
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			t.Fatalf("POST run: %v", firstErr)
		}
		return why
	}
	succeeded := func() int64 {
		_, n, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Workflow: "flood", State: model.WorkflowSucceeded, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	flood(first)
	// Kill the leader while it is saturated, with runs done and most
	// still waiting.
	c.Eventually(t, 60*time.Second, "the leader saturated with some runs done", func() bool {
		return saturatedOld.Load() && succeeded() >= 8
	})
	doneAtKill := succeeded()
	killed.Store(true)
	old.Kill9()
	flood(second) // asked for while no master leads: stored, answered
	lead := c.WaitLeader(t, failoverWithin, old)
	newLeader.Store(true)
	c.Eventually(t, 30*time.Second, "/healthz says the new leader is saturated", saturatedNew.Load)
	// Runs asked for now wait under the new leader and are told why.
	if why := flood(third); why == 0 {
		t.Fatalf("none of %d runs asked for while the new leader is saturated was answered with the reason", third)
	}
	t.Logf("killed %s with %d of %d runs succeeded; %s leads", old.Name, doneAtKill, first, lead.Name)

	c.Eventually(t, 90*time.Second, "every run succeeded", func() bool { return succeeded() >= first+second+third })
	close(stop)
	<-sampled
	if err, _ := sampleErr.Load().(error); err != nil {
		t.Fatalf("sampling: %v", err)
	}
	if len(ids) != first+second+third {
		t.Fatalf("%d runs answered, want %d", len(ids), first+second+third)
	}
	// Exactly once: the ledger holds one execution of each run, attempt 1,
	// and the DB one succeeded task row.
	runs := map[int64]int{}
	for _, e := range clustertest.Executions(t, marks, 0) {
		runs[e.WorkflowInstanceID]++
		if e.Attempt != 1 {
			t.Errorf("run %d's task ran as attempt %d", e.WorkflowInstanceID, e.Attempt)
		}
	}
	for _, id := range ids {
		if runs[id] != 1 {
			t.Fatalf("run %d executed %d times, want once", id, runs[id])
		}
		rows := c.Tasks(t, id)["a"]
		if len(rows) != 1 || rows[0].State != model.TaskSucceeded {
			t.Fatalf("run %d's task rows: %+v", id, rows)
		}
	}
	if len(runs) != len(ids) {
		t.Fatalf("the ledger has %d runs, %d were asked for", len(runs), len(ids))
	}
	if n := mostRunning.Load(); n > maxRunning {
		t.Fatalf("%d runs running at once, the limit is %d", n, maxRunning)
	}
	if withWhy == 0 || !saturatedOld.Load() || !saturatedNew.Load() {
		t.Fatalf("runs answered with the reason: %d; /healthz saturated under the old leader %v, under the new %v",
			withWhy, saturatedOld.Load(), saturatedNew.Load())
	}
	// Drained without a restart: admitting again, and a new run runs.
	c.Eventually(t, 30*time.Second, "healthz says admitting", func() bool {
		h, err := c.Client.Healthz(ctx)
		return err == nil && h.Admission != nil && !h.Admission.Saturated
	})
	if id := c.Run(t, "flood"); c.WaitFinished(t, id, finishWithin).State != model.WorkflowSucceeded {
		t.Fatal("a run after the flood did not succeed")
	}
	c.AssertNoStuckRows(t)
	t.Logf("%d runs; at most %d running of %d samples; %d answered with the reason", len(ids), mostRunning.Load(), samples.Load(), withWhy)
}
