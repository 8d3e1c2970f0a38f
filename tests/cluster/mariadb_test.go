package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestMariaDBRestart kills the cluster's MariaDB server mid-run and keeps
// it down until the leader has failed to persist a worker report (the
// result of the running task), then starts it again on the same data.
// Masters retry their writes, the worker re-sends the report until it is
// persisted; every process survives and the instance succeeds with every
// task executed once.
func TestMariaDBRestart(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout, PrivateDB: true})
	marks := t.TempDir()
	c.Apply(t, chain(marks, "long", 6, 300*time.Millisecond))
	id := c.Run(t, "long")
	clustertest.WaitExecution(t, marks, id, "t1", finishWithin)
	lead := c.Masters[0]
	mark := lead.LogMark()
	c.MariaDB.Stop()
	c.Eventually(t, failoverWithin, "the leader to fail to persist a report", func() bool {
		return strings.Contains(lead.LogSince(mark), "persist worker reports")
	})
	if err := c.MariaDB.Restart(); err != nil {
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
