package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestStaleElectedMasterStandsBy freezes a master between its election and
// the fence write (failpoint before-begin-term, action stop): master-1 is
// killed mid-chain, master-2 wins the ZooKeeper election and stops itself
// before recording its term. Its session expires, the restarted master-1
// wins a later election, records its term, recovers the chain and runs
// another. Then master-2 is continued with its old election in hand. It
// must not record a term (its epoch is older than the recorded one, and
// its ZooKeeper leadership is gone), recover or dispatch anything: the
// fence still names master-1's term, master-2 never logs a term start,
// every dispatch after its wake-up belongs to master-1's term, every task
// executed once and nothing is left stuck.
func TestStaleElectedMasterStandsBy(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout,
		Env: map[string][]string{"master-2": {"BELUGA_FAILPOINT=" + failpoint.BeforeBeginTerm + ":stop"}}})
	marks := t.TempDir()
	c.Apply(t, chain(marks, "long", 6, 300*time.Millisecond))
	c.Apply(t, chain(marks, "short", 3, 100*time.Millisecond))
	first := c.Run(t, "long")
	clustertest.WaitExecution(t, marks, first, "t1", finishWithin)

	m1, m2 := c.Masters[0], c.Masters[1]
	ctx := context.Background()
	before, err := c.Store.TermCurrentInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m1.Kill9()
	c.Eventually(t, failoverWithin, "master-2 to win the election and freeze before its fence write", func() bool {
		return strings.Contains(m2.Log(), "failpoint "+failpoint.BeforeBeginTerm+": stopping the process")
	})
	if err := m1.Restart(); err != nil {
		t.Fatal(err)
	}
	var term struct {
		epoch int64
		host  string
	}
	c.Eventually(t, failoverWithin, "the restarted master-1 to record a newer term", func() bool {
		ti, err := c.Store.TermCurrentInfo(ctx)
		term.epoch, term.host = ti.Epoch, ti.Host
		return err == nil && ti.Epoch > before.Epoch && ti.Host == m1.Addr
	})
	second := c.Run(t, "short")
	c.WaitFinished(t, second, finishWithin)

	mark := m2.LogMark()
	resumed := time.Now()
	m2.Resume()
	third := c.Run(t, "short")
	for _, id := range []int64{first, second, third} {
		c.WaitFinished(t, id, finishWithin)
	}
	c.Eventually(t, failoverWithin, "master-2 to go on from the failpoint", func() bool {
		return strings.Contains(m2.Log(), "failpoint "+failpoint.BeforeBeginTerm+": continued")
	})
	if err := c.WaitReady(failoverWithin); err != nil {
		t.Fatal(err)
	}
	if log := m2.LogSince(mark); strings.Contains(log, "leading: recovering") {
		t.Fatalf("master-2 began a term with its stale election after the wake-up:\n%s", log)
	}
	if log := m2.Log(); !strings.Contains(log, "before it was recorded") && !strings.Contains(log, "the recorded leader term is not older") {
		t.Fatalf("master-2 does not say why it stood by:\n%s", m2.LogTail(20))
	}
	assertTermKept(t, c, term.epoch, term.host, resumed, "master-2", marks, first, second, third)
}

// assertTermKept checks, after a master that slept woke up, that the
// recorded term is still epoch of host, that no task of the instances ids
// was dispatched after since for another master or epoch, that each task
// ran once and that no row is left stuck. sleeper names the master that
// slept, for the messages.
func assertTermKept(t *testing.T, c *clustertest.Cluster, epoch int64, host string, since time.Time, sleeper, marks string, ids ...int64) {
	t.Helper()
	now, err := c.Store.TermCurrentInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if now.Epoch != epoch || now.Host != host {
		t.Fatalf("fence is epoch %d of %s, want epoch %d of %s", now.Epoch, now.Host, epoch, host)
	}
	for _, id := range ids {
		inst := c.Instance(t, id)
		for name, rows := range c.Tasks(t, id) {
			for _, r := range rows {
				if r.DispatchTime != nil && r.DispatchTime.After(since) && (inst.Host != host || inst.Epoch != epoch) {
					t.Fatalf("task %s of instance %d dispatched at %v, after %s woke, for %s in epoch %d",
						name, id, r.DispatchTime, sleeper, inst.Host, inst.Epoch)
				}
			}
		}
		c.AssertRanOnce(t, id, marks)
	}
	c.AssertNoStuckRows(t)
}

// TestWorkerLostDuringRecovery kills -9 the leader and the worker running
// a mid-run, in two orders. The new leader's recovery still sees that
// worker registered (its session has not expired yet), so it waits for the
// worker's reports instead of running a again; the worker then leaves the
// registry before the worker watch starts (failpoint before-worker-watch,
// action sleep, holds that window open). The watch's baseline is the DB's
// hosts with tasks in flight, so the lost worker's tasks are failed over:
// each runs again elsewhere exactly once as a new attempt, every other task
// runs once, nothing is left stuck.
//   - together: both are killed at the same instant; the workers' sessions
//     last 4 s, the masters' 2 s, so the worker leaves during recovery.
//   - as the standby takes over: the worker is killed when the standby
//     begins its term.
func TestWorkerLostDuringRecovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		together bool
	}{
		{"together", true},
		{"as the standby takes over", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout,
				Env: map[string][]string{"master-2": {"BELUGA_FAILPOINT=" + failpoint.BeforeWorkerWatch + ":sleep=5s"}}}
			if tc.together {
				longer := []string{"--zk-session-timeout", (2 * sessionTimeout).String()}
				o.Args = map[string][]string{"worker-1": longer, "worker-2": longer}
			}
			c := clustertest.New(t, o)
			marks := t.TempDir()
			c.Apply(t, spec.Workflow{Name: "pair", Tasks: []spec.Task{
				task(marks, "a", sleep(8*time.Second)),
				task(marks, "b", sleep(8*time.Second)),
				task(marks, "c", sleep(100*time.Millisecond), "a", "b"),
			}})
			id := c.Run(t, "pair")
			ea := clustertest.WaitExecution(t, marks, id, "a", finishWithin)
			clustertest.WaitExecution(t, marks, id, "b", finishWithin)
			victimAddr := taskRow(t, c, id, "a", ea.Attempt).Host
			var victim *clustertest.Process
			for _, w := range c.Workers {
				if w.Addr == victimAddr {
					victim = w
				}
			}
			if victim == nil {
				t.Fatalf("a runs on %q, not one of the workers", victimAddr)
			}
			want := map[string]int{}
			for name, rows := range c.Tasks(t, id) {
				if last := rows[len(rows)-1]; last.Host == victim.Addr {
					want[name] = 2 // its attempt dies with the worker; a new one runs elsewhere
				}
			}

			old, standby := c.Masters[0], c.Masters[1]
			if tc.together {
				victim.Kill9()
				old.Kill9()
			} else {
				old.Kill9()
				c.Eventually(t, failoverWithin, "the standby to begin its term", func() bool {
					return strings.Contains(standby.Log(), "leading: recovering")
				})
				victim.Kill9()
			}
			c.WaitFinished(t, id, finishWithin)
			c.AssertRuns(t, id, marks, want)
			for name := range want {
				rows := c.Tasks(t, id)[name]
				if len(rows) != 2 || rows[0].Host != victim.Addr || rows[1].Host == victim.Addr {
					t.Fatalf("%s: want a lost attempt on %s, then one elsewhere: %+v", name, victim.Addr, rows)
				}
			}
			if !strings.Contains(standby.Log(), "a worker holding tasks is gone") {
				t.Logf("the worker left after the watch started:\n%s", standby.LogTail(20))
			}
			c.AssertNoStuckRows(t)
		})
	}
}
