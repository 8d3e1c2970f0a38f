package cluster

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// retryInterval is the tests' retry_interval: short, and long enough that a
// retry started before it passed is seen.
const retryInterval = time.Second

// retryTask is a task of a one-task workflow that fails until its attempt
// number reaches passAt (never when passAt is 0), with retries and a 1 s
// retry interval. Each execution appends a line to the ledger in marks
// (clustertest.Marker), outside Beluga.
func retryTask(marks string, retries, passAt int) spec.Task {
	cmd := "sleep 0.5; exit 1"
	if passAt > 0 {
		cmd = `sleep 0.5; [ "$BELUGA_ATTEMPT" -ge ` + strconv.Itoa(passAt) + ` ] || exit 1`
	}
	tk := task(marks, "a", cmd)
	tk.Retries, tk.RetryInterval = retries, spec.Duration(retryInterval)
	return tk
}

// crashAt starts two masters (master-1 leads and kills itself at point),
// runs a one-task workflow of task tk, and waits until master-1 died at
// the point, another leads and the instance has finished.
func crashAt(t *testing.T, point string, tk spec.Task) (*clustertest.Cluster, int64) {
	t.Helper()
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout,
		Env: map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + point}}})
	c.Apply(t, spec.Workflow{Name: "retry", Tasks: []spec.Task{tk}})
	id := c.Run(t, "retry")
	crashed := c.Masters[0]
	if err := crashed.Wait(failoverWithin); err == nil {
		t.Fatalf("%s exited cleanly; want it killed by the failpoint", crashed.Name)
	}
	name, _, _ := strings.Cut(point, "@")
	if log := crashed.Log(); !strings.Contains(log, "failpoint "+name+": killing the process") {
		t.Fatalf("%s died, but not at %s:\n%s", crashed.Name, point, crashed.LogTail(30))
	}
	lead := c.WaitLeader(t, failoverWithin, crashed)
	c.WaitFinished(t, id, finishWithin)
	if inst := c.Instance(t, id); inst.Host != lead.Addr {
		t.Fatalf("instance owned by %s, want the new leader %s", inst.Host, lead.Addr)
	}
	return c, id
}

// assertAttempts checks task a's attempts against the ledger: the rows are
// failed (executed), lost (need_fault_tolerance, never executed) and, in
// that order, the last ends as last; every row but the last is superseded;
// every failed or last row executed exactly once and nothing else did; and
// each retry started no sooner than retryInterval after the failure before
// it (the clock runs from the failed attempt's end, across the failover).
// It returns the number of executions.
func assertAttempts(t *testing.T, c *clustertest.Cluster, id int64, marks string, want []model.TaskState) int {
	t.Helper()
	rows := c.Tasks(t, id)["a"]
	execs := clustertest.Executions(t, marks, id)
	if len(rows) != len(want) {
		t.Fatalf("task a has %d attempts, want %d (%v): %+v; executions %+v", len(rows), len(want), want, rows, execs)
	}
	ran := map[int64]int{}
	for _, e := range execs {
		ran[e.TaskInstanceID]++
	}
	var failedEnd *time.Time
	executions := 0
	for i, r := range rows {
		if r.Attempt != i+1 || r.State != want[i] {
			t.Fatalf("attempt %d is #%d %s, want #%d %s: %+v", i+1, r.Attempt, r.State, i+1, want[i], rows)
		}
		if last := i == len(rows)-1; r.Superseded == last {
			t.Fatalf("attempt %d superseded=%v, want %v: %+v", r.Attempt, r.Superseded, !last, rows)
		}
		wantRuns := 1
		if r.State == model.TaskNeedFaultTolerance {
			wantRuns = 0
		}
		if ran[r.ID] != wantRuns {
			t.Fatalf("attempt %d (%s) executed %d times, want %d: executions %+v", r.Attempt, r.State, ran[r.ID], wantRuns, execs)
		}
		executions += ran[r.ID]
		delete(ran, r.ID)
		if wantRuns == 0 {
			continue
		}
		if failedEnd != nil {
			if r.StartTime == nil || r.StartTime.Before(failedEnd.Add(retryInterval-10*time.Millisecond)) {
				t.Fatalf("attempt %d started at %v, before the interval after the failure at %v", r.Attempt, r.StartTime, *failedEnd)
			}
			t.Logf("attempt %d started %v after the failure before it (interval %v)", r.Attempt, r.StartTime.Sub(*failedEnd).Round(time.Millisecond), retryInterval)
		}
		if r.State == model.TaskFailed {
			failedEnd = r.EndTime
		}
	}
	if len(ran) > 0 {
		t.Fatalf("executions of no attempt of task a: %+v (rows %+v)", execs, rows)
	}
	return executions
}

// TestRetryCrashPoints kills the leader at every point between a task's
// failure and its retry (docs/architecture.md "Crash points"): the first
// attempt of a fails, the second succeeds, retries 3 with a 1 s interval.
// Every time the retry runs exactly once after the failover (in the DB and
// in the ledger the task appends to), the instance succeeds and nothing is
// left stuck. Before the rebuild derived the retry from the failed attempt
// and its budget, the result points ended the instance failed with retries
// left.
func TestRetryCrashPoints(t *testing.T) {
	F, L, S := model.TaskFailed, model.TaskNeedFaultTolerance, model.TaskSucceeded
	for _, tc := range []struct {
		point string
		want  []model.TaskState // task a's attempts
	}{
		{failpoint.BeforePersistResult, []model.TaskState{F, S}},          // the worker re-sends the failure to the new leader
		{failpoint.BeforeDBAckResult, []model.TaskState{F, S}},            // the failure persisted, its retry not decided
		{failpoint.BeforeWriteRetry, []model.TaskState{F, S}},             // decided, not written
		{failpoint.BeforeSubmitRetry, []model.TaskState{F, S}},            // written delayed, interval passed, not submitted
		{failpoint.BeforeRecordDispatch + "@2", []model.TaskState{F, S}},  // the retry submitted, no worker recorded
		{failpoint.BeforeSendDispatch + "@2", []model.TaskState{F, L, S}}, // recorded, never sent: lost, run anew
		{failpoint.BeforePersistAck + "@2", []model.TaskState{F, S}},      // the worker holds the retry, its ack not persisted
	} {
		t.Run(tc.point, func(t *testing.T) {
			marks := t.TempDir()
			c, id := crashAt(t, tc.point, retryTask(marks, 3, 2))
			if inst := c.Instance(t, id); inst.State != model.WorkflowSucceeded {
				t.Fatalf("instance %d is %s (%s), want succeeded", id, inst.State, inst.Reason)
			}
			if n := assertAttempts(t, c, id, marks, tc.want); n != 2 {
				t.Fatalf("task a executed %d times, want 2 (the failure and its retry)", n)
			}
			c.AssertNoStuckRows(t)
		})
	}
}

// TestRetryExhaustedCrashPoints: a task that fails every attempt (retries
// 2) ends failed after exactly 3 executions whatever point between a
// failure and the next attempt its leader died at, including the last
// failure (@3), after which no retry is left to run.
func TestRetryExhaustedCrashPoints(t *testing.T) {
	for _, point := range []string{
		failpoint.BeforePersistResult,
		failpoint.BeforeDBAckResult,
		failpoint.BeforeWriteRetry,
		failpoint.BeforeSubmitRetry,
		failpoint.BeforeDBAckResult + "@3",
	} {
		t.Run(point, func(t *testing.T) {
			marks := t.TempDir()
			c, id := crashAt(t, point, retryTask(marks, 2, 0))
			inst := c.Instance(t, id)
			if inst.State != model.WorkflowFailed || !strings.Contains(inst.Reason, "task a failed") {
				t.Fatalf("instance %d is %s (%s), want failed by task a", id, inst.State, inst.Reason)
			}
			F := model.TaskFailed
			if n := assertAttempts(t, c, id, marks, []model.TaskState{F, F, F}); n != 3 {
				t.Fatalf("task a executed %d times, want 3 (retries + 1)", n)
			}
			c.AssertNoStuckRows(t)
		})
	}
}
