package cluster

import (
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestHealthyCluster runs a diamond on a cluster where nothing fails: the
// baseline the scenarios depart from.
func TestHealthyCluster(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, diamond(marks, "diamond", 100*time.Millisecond))
	id := c.Run(t, "diamond")
	c.WaitFinished(t, id, finishWithin)
	c.AssertRanOnce(t, id, marks)
	c.AssertNoStuckRows(t)
}
