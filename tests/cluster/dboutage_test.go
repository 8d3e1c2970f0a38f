package cluster

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestDatabaseOutageAnswers503 stops the cluster's MariaDB under a running
// api and master. Reads, writes and logins answer 503 with Retry-After, and
// the body names neither the database's address nor the driver's error
// (before: 500). Once MariaDB is back, the same requests succeed and a run
// succeeds, with no Beluga process restarted.
func TestDatabaseOutageAnswers503(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, SessionTimeout: sessionTimeout, PrivateDB: true})
	marks := t.TempDir()
	c.Apply(t, chain(marks, "after", 1, 100*time.Millisecond))
	base := "http://" + c.API.Addr
	do := func(method, path, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.Token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	requests := []struct{ method, path, body string }{
		{"GET", "/api/v1/projects", ""},
		{"GET", "/api/v1/instances", ""},
		{"POST", "/api/v1/projects/" + c.Project + "/workflows/after/runs", "{}"},
		{"POST", "/api/v1/login", `{"username":"admin","password":"` + clustertest.AdminPassword + `"}`},
	}

	c.MariaDB.Stop()
	for _, rq := range requests {
		resp, body := do(rq.method, rq.path, rq.body)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s with the database down: %d, Retry-After %q, body %s; want 503 with Retry-After",
				rq.method, rq.path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		for _, leak := range []string{c.MariaDB.Addr(), "dial tcp", "127.0.0.1", "connection refused", "invalid connection"} {
			if strings.Contains(body, leak) {
				t.Errorf("%s %s: the body shows %q: %s", rq.method, rq.path, leak, body)
			}
		}
	}
	if t.Failed() {
		return
	}

	if err := c.MariaDB.Restart(); err != nil {
		t.Fatal(err)
	}
	c.Eventually(t, failoverWithin, "the api to answer again", func() bool {
		resp, _ := do("GET", "/api/v1/projects", "")
		return resp.StatusCode == http.StatusOK
	})
	for _, rq := range requests {
		if resp, body := do(rq.method, rq.path, rq.body); resp.StatusCode >= 300 {
			t.Errorf("%s %s after the database came back: %d %s", rq.method, rq.path, resp.StatusCode, body)
		}
	}
	id := c.Run(t, "after")
	if inst := c.WaitFinished(t, id, finishWithin); inst.State != model.WorkflowSucceeded {
		t.Fatalf("a run after the outage ended %s", inst.State)
	}
	assertAllRunning(t, c)
}

// TestStopBeforeStartSurvivesDBOutage: a stop of a run that never started
// (queued behind max_active_runs) is claimed by the master, and the
// database goes away before the master ends the run (failpoint
// before-end-unstarted holds it there while MariaDB stops). The stop's
// command is gone; the master writes the end once MariaDB is back, so the
// run ends stopped instead of staying ready_stop for good (which held
// every later run of its workflow or schedule in the queue: the soak found
// it for an overlap-replace schedule). The run before it then succeeds,
// and nothing is left stuck.
func TestStopBeforeStartSurvivesDBOutage(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, SessionTimeout: sessionTimeout, PrivateDB: true,
		Env: map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + failpoint.BeforeEndUnstarted + ":sleep=3s"}}})
	marks, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
	wf := gated(marks, "one-at-a-time", gate)
	one := 1
	wf.MaxActiveRuns = &one
	c.Apply(t, wf)
	first := c.Run(t, wf.Name)
	clustertest.WaitExecution(t, marks, first, "t", finishWithin)
	second := c.Run(t, wf.Name)
	c.Eventually(t, finishWithin, "the second run queued", func() bool { return c.Instance(t, second).Queued })
	ctx, cancel := context.WithTimeout(context.Background(), finishWithin)
	defer cancel()
	if _, err := c.Client.InstanceAction(ctx, second, "stop", "ann"); err != nil {
		t.Fatal(err)
	}
	m := c.Masters[0]
	c.Eventually(t, finishWithin, "the master to claim the stop and wait at "+failpoint.BeforeEndUnstarted, func() bool {
		return strings.Contains(m.Log(), "failpoint "+failpoint.BeforeEndUnstarted+": sleeping")
	})
	c.MariaDB.Stop()
	c.Eventually(t, finishWithin, "the master to go on with MariaDB down", func() bool {
		return strings.Contains(m.Log(), "failpoint "+failpoint.BeforeEndUnstarted+": woke")
	})
	if err := c.MariaDB.Restart(); err != nil {
		t.Fatal(err)
	}
	if in := c.WaitFinished(t, second, finishWithin); in.State != model.WorkflowStopped || in.StartTime != nil {
		t.Fatalf("the stopped run ended %s (started %v), want stopped before it started", in.State, in.StartTime)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if in := c.WaitFinished(t, first, finishWithin); in.State != model.WorkflowSucceeded {
		t.Fatalf("the first run ended %s", in.State)
	}
	c.AssertRanOnce(t, first, marks)
	if n := len(clustertest.Executions(t, marks, second)); n != 0 {
		t.Fatalf("the run stopped before it started executed %d tasks", n)
	}
	c.AssertNoStuckRows(t)
}
