package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestZooKeeperRestart restarts the ZooKeeper server mid-run (kill and
// start on the same port and data: sessions survive if clients come back
// in time). The leader stops scheduling while it cannot prove its
// leadership, a master leads again once ZooKeeper is back, every process
// survives, and the instance succeeds with every task executed once: t1
// (0.3 s) ends before the workers' sessions (2 s) run out, so its report
// waits for the new leader.
func TestZooKeeperRestart(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, chain(marks, "long", 6, 300*time.Millisecond))
	id := c.Run(t, "long")
	clustertest.WaitExecution(t, marks, id, "t1", finishWithin)
	if err := c.ZK.Servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	c.WaitFinished(t, id, finishWithin)
	c.AssertRanOnce(t, id, marks)
	assertAllRunning(t, c)
	if err := c.WaitReady(failoverWithin); err != nil {
		t.Fatal(err)
	}
	c.AssertNoStuckRows(t)
}

// TestZooKeeperDownPastSessionTimeout keeps ZooKeeper down until every
// process has given its session up, while t1 (3 s) runs. The leader stops
// at once; the workers refuse dispatches and soon kill their tasks (cut
// off from ZooKeeper, a worker cannot know whether its tasks were failed
// over). When ZooKeeper is back every process registers again in a new
// session, replacing the registration its old session left, and a master
// leads. t1's attempt, killed and never reported, becomes
// need_fault_tolerance and runs again: t1 executes twice, once per attempt,
// every other task once. The cluster view lists every process again.
func TestZooKeeperDownPastSessionTimeout(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, spec.Workflow{Name: "outage", Tasks: []spec.Task{
		task(marks, "t0", sleep(200*time.Millisecond)),
		task(marks, "t1", sleep(3*time.Second), "t0"),
		task(marks, "t2", sleep(200*time.Millisecond), "t1"),
	}})
	id := c.Run(t, "outage")
	clustertest.WaitExecution(t, marks, id, "t1", finishWithin)
	marks0 := map[*clustertest.Process]int64{}
	for _, p := range c.Processes() {
		marks0[p] = p.LogMark()
	}
	c.ZK.Servers[0].Stop()
	c.Eventually(t, failoverWithin, "every process to give its session up", func() bool {
		for p, m := range marks0 {
			if !strings.Contains(p.LogSince(m), "taking the session as expired") {
				return false
			}
		}
		return true
	})
	if err := c.ZK.Servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	c.WaitFinished(t, id, finishWithin)
	c.AssertRuns(t, id, marks, map[string]int{"t1": 2})
	assertAllRunning(t, c)
	if err := c.WaitReady(failoverWithin); err != nil {
		t.Fatal(err)
	}
	c.AssertNoStuckRows(t)
}

// TestZooKeeperEnsembleLosesOne stops the leader of a 3-server ensemble
// while t1 (3 s) runs. The two others elect a new ZooKeeper leader and keep
// quorum; every client is cut off during the election and reconnects
// within its session. Every process survives and the instance succeeds.
// t0 and t2 execute exactly once. t1 executes once per attempt: once if
// its worker was back in touch with ZooKeeper within its session (2 s
// from the last byte it read), twice if the worker dropped it first, in
// which case attempt 1 is need_fault_tolerance.
func TestZooKeeperEnsembleLosesOne(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, ZKNodes: 3, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, spec.Workflow{Name: "quorum", Tasks: []spec.Task{
		task(marks, "t0", sleep(200*time.Millisecond)),
		task(marks, "t1", sleep(3*time.Second), "t0"),
		task(marks, "t2", sleep(200*time.Millisecond), "t1"),
	}})
	id := c.Run(t, "quorum")
	clustertest.WaitExecution(t, marks, id, "t1", finishWithin)
	zkLeader := c.ZK.Leader()
	if zkLeader == nil {
		t.Fatal("the ensemble has no leader")
	}
	zkLeader.Stop()
	c.WaitFinished(t, id, finishWithin)
	runs := c.AssertRunsPerAttempt(t, id, marks)
	if runs["t0"] != 1 || runs["t2"] != 1 || runs["t1"] < 1 || runs["t1"] > 2 {
		t.Fatalf("executions per task %v: want t0 and t2 once, t1 once or twice", runs)
	}
	t.Logf("t1 executed %d time(s) across the ZooKeeper election", runs["t1"])
	assertAllRunning(t, c)
	if err := c.WaitReady(failoverWithin); err != nil {
		t.Fatal(err)
	}
	c.AssertNoStuckRows(t)
}

// assertAllRunning fails the test when a beluga process has exited.
func assertAllRunning(t *testing.T, c *clustertest.Cluster) {
	t.Helper()
	for _, p := range c.Processes() {
		if !p.Running() {
			t.Fatalf("%s exited: %v", p.Name, p.Wait(0))
		}
	}
}
