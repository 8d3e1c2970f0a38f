package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestTriggerDeliveriesAcrossCrashes sends webhook deliveries, each key
// retried by its sender until answered, while the api kills itself at
// after-trigger-deliver (the third delivery and its run committed, the
// sender not answered) and, once it is back, the leading master is killed
// -9. Each Idempotency-Key made exactly one run, which ran once: the key
// whose answer was lost is answered by its retry as a duplicate naming the
// run the crash left, and the runs written while no master led are
// claimed by the new leader.
func TestTriggerDeliveriesAcrossCrashes(t *testing.T) {
	databases(t, func(t *testing.T, db string) {
		c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout, DB: db,
			Env: map[string][]string{"api": {"BELUGA_FAILPOINT=" + failpoint.AfterTriggerDeliver + "@3"}}})
		marks := t.TempDir()
		wf := spec.Workflow{Name: "hooked", Params: map[string]string{"ref": "none"},
			Tasks: []spec.Task{task(marks, "a", "echo ref=$ref; "+sleep(200*time.Millisecond))}}
		c.Apply(t, wf)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		nt, err := c.Client.CreateTrigger(ctx, c.Project, "hooked", api.TriggerRequest{Name: "gh", Params: map[string]string{"ref": "ref"}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		const keys = 8
		type answer struct {
			status int
			d      api.TriggerDelivery
			tries  int
		}
		answers := make(chan answer, keys)
		killed := make(chan struct{})
		var once sync.Once
		closeKilled := func() { once.Do(func() { close(killed) }) }
		t.Cleanup(closeKilled) // a failed test does not strand the sender
		go func() {
			hc := &http.Client{Timeout: 5 * time.Second}
			for k := range keys {
				if k == 4 { // the rest arrive while no master leads
					<-killed
				}
				var a answer
				// The sender's retry: the same key until an answer (a
				// crashed api refuses connections until restarted).
				_ = wait.Poll(2*failoverWithin, fmt.Sprintf("delivery %d answered", k), func() bool {
					a.tries++
					req, _ := http.NewRequest("POST", "http://"+c.API.Addr+nt.HookPath, strings.NewReader(fmt.Sprintf(`{"ref":"r%d"}`, k)))
					req.Header.Set("Authorization", "Bearer "+nt.Token)
					req.Header.Set("Idempotency-Key", fmt.Sprintf("key-%d", k))
					res, err := hc.Do(req)
					if err != nil {
						return false
					}
					defer res.Body.Close()
					b, _ := io.ReadAll(res.Body)
					if res.StatusCode >= 500 {
						return false
					}
					a.status = res.StatusCode
					_ = json.Unmarshal(b, &a.d)
					return true
				})
				answers <- a
			}
			close(answers)
		}()

		// The api dies at the third accepted delivery; it comes back
		// without the failpoint, and then the leader is killed.
		if err := c.API.Wait(failoverWithin); err == nil {
			t.Fatal("the api exited cleanly; want it killed at " + failpoint.AfterTriggerDeliver)
		}
		if !strings.Contains(c.API.Log(), "failpoint "+failpoint.AfterTriggerDeliver+": killing the process") {
			t.Fatalf("the api died, but not at %s:\n%s", failpoint.AfterTriggerDeliver, c.API.LogTail(30))
		}
		c.API.SetEnv()
		if err := c.API.Restart(); err != nil {
			t.Fatal(err)
		}
		old := c.WaitLeader(t, failoverWithin, nil) // read through the restarted api
		killedAt := time.Now()
		old.Kill9()
		closeKilled()
		lead := c.WaitLeader(t, failoverWithin, old)
		t.Logf("%s leads %v after the kill of %s", lead.Name, time.Since(killedAt).Round(time.Millisecond), old.Name)

		var got []answer
		for a := range answers {
			got = append(got, a)
		}
		if len(got) != keys {
			t.Fatalf("%d deliveries answered, want %d", len(got), keys)
		}
		tries := make([]int, len(got))
		for k, a := range got {
			tries[k] = a.tries
		}
		t.Logf("tries per key: %v", tries)
		runs := map[int64]int{}
		for k, a := range got {
			want := http.StatusCreated
			if k == 2 { // its first answer was lost with the api
				want = http.StatusOK
			}
			if a.status != want || a.d.RunID == 0 {
				t.Fatalf("key-%d: %d %+v after %d tries, want %d naming a run", k, a.status, a.d, a.tries, want)
			}
			runs[a.d.RunID]++
		}
		if len(runs) != keys {
			t.Fatalf("%d keys made %d distinct runs: %v", keys, len(runs), runs)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		ds, err := c.Client.TriggerDeliveries(ctx, c.Project, "hooked", "gh", 1000, 0)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		accepted := map[string]int64{}
		for _, d := range ds {
			if d.Outcome == model.DeliveryAccepted {
				if _, twice := accepted[d.IdempotencyKey]; twice {
					t.Fatalf("%s accepted twice: %+v", d.IdempotencyKey, ds)
				}
				accepted[d.IdempotencyKey] = d.RunID
			}
		}
		for k, a := range got {
			if accepted[fmt.Sprintf("key-%d", k)] != a.d.RunID {
				t.Fatalf("key-%d: the ledger's accepted run %d, the answer's %d", k, accepted[fmt.Sprintf("key-%d", k)], a.d.RunID)
			}
		}
		for k, a := range got {
			c.WaitFinished(t, a.d.RunID, finishWithin)
			c.AssertRanOnce(t, a.d.RunID, marks)
			if inst := c.Instance(t, a.d.RunID); inst.Params["ref"] != fmt.Sprintf("r%d", k) || inst.CommandType != model.CommandTriggered {
				t.Fatalf("key-%d's run: params %v, command %s", k, inst.Params, inst.CommandType)
			}
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := c.Client.ListInstances(ctx, client.InstanceFilter{Project: c.Project})
		if err != nil || list.Total != keys {
			t.Fatalf("%d runs in the project, want %d: %v", list.Total, keys, err)
		}
		c.AssertNoStuckRows(t)
	})
}
