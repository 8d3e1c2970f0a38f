package cluster

import (
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/clustertest"
)

// TestZooKeeperRestart restarts the ZooKeeper server mid-run (kill and
// start on the same port and data: sessions survive if clients come back
// in time). The leader stops scheduling while it cannot prove its
// leadership, a master leads again once ZooKeeper is back, every process
// survives, and the instance succeeds with every task executed once.
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

// TestZooKeeperEnsembleLosesOne stops the leader of a 3-server ensemble
// mid-run. The two others elect a new ZooKeeper leader and keep quorum;
// clients move to them. Every process survives and the instance succeeds
// with every task executed once.
func TestZooKeeperEnsembleLosesOne(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, ZKNodes: 3, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, chain(marks, "long", 6, 300*time.Millisecond))
	id := c.Run(t, "long")
	clustertest.WaitExecution(t, marks, id, "t1", finishWithin)
	zkLeader := c.ZK.Leader()
	if zkLeader == nil {
		t.Fatal("the ensemble has no leader")
	}
	zkLeader.Stop()
	c.WaitFinished(t, id, finishWithin)
	c.AssertRanOnce(t, id, marks)
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
