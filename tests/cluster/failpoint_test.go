package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestCrashPoints kills the leader at each crash point of dispatch (docs/architecture.md
// "Crash points"): master-1 runs with BELUGA_FAILPOINT and kills itself at the first
// hit, master-2 takes over. Every time, a (the first task, where the point
// is hit) executes exactly once, the instance succeeds and nothing is
// left stuck. What the new leader finds differs per point:
//   - before-record-dispatch: a is still submitted; it is queued again.
//   - before-send-dispatch: a is recorded as dispatched to a worker that
//     never got it; the worker says so, a's attempt 1 becomes
//     need_fault_tolerance (never executed) and attempt 2 runs.
//   - before-persist-ack: the worker holds a, not started (it starts only
//     once its ack is persisted); it re-sends the ack to the new leader and
//     a runs in its only attempt.
//   - before-dback-result: a's result is persisted; the worker re-sends it,
//     the new leader acks the duplicate and goes on.
func TestCrashPoints(t *testing.T) {
	databases(t, func(t *testing.T, db string) {
		for _, tc := range []struct {
			point    string
			attempts int // rows of task a
		}{
			{failpoint.BeforeRecordDispatch, 1},
			{failpoint.BeforeSendDispatch, 2},
			{failpoint.BeforePersistAck, 1},
			{failpoint.BeforeDBAckResult, 1},
		} {
			t.Run(tc.point, func(t *testing.T) {
				c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout, DB: db,
					Env: map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + tc.point}}})
				marks := t.TempDir()
				c.Apply(t, spec.Workflow{Name: "crash", Tasks: []spec.Task{
					task(marks, "a", sleep(200*time.Millisecond)),
					task(marks, "b", sleep(200*time.Millisecond), "a"),
				}})
				id := c.Run(t, "crash")
				crashed := c.Masters[0]
				if err := crashed.Wait(failoverWithin); err == nil {
					t.Fatalf("%s exited cleanly; want it killed by the failpoint", crashed.Name)
				}
				if log := crashed.Log(); !strings.Contains(log, "failpoint "+tc.point+": killing the process") {
					t.Fatalf("%s died, but not at %s:\n%s", crashed.Name, tc.point, crashed.LogTail(30))
				}
				lead := c.WaitLeader(t, failoverWithin, crashed)
				c.WaitFinished(t, id, finishWithin)
				c.AssertRanOnce(t, id, marks)
				if rows := c.Tasks(t, id)["a"]; len(rows) != tc.attempts {
					t.Fatalf("task a has %d attempts, want %d: %+v", len(rows), tc.attempts, rows)
				}
				if inst := c.Instance(t, id); inst.Host != lead.Addr {
					t.Fatalf("instance owned by %s, want the new leader %s", inst.Host, lead.Addr)
				}
				c.AssertNoStuckRows(t)
			})
		}
	})
}
