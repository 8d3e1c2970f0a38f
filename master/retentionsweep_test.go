package master_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestRetentionSweepByTheLeader: with a policy in force, the leader's
// periodic sweep purges the runs it lets go, without being asked, once
// its period has passed since the last sweep (recorded in the settings).
func TestRetentionSweepByTheLeader(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{RetentionCheck: 20 * time.Millisecond})
	c.addWorker(2)
	c.apply("name: one\ntasks:\n  - {name: a, command: \"true\"}\n")
	older := c.finished(c.run("one", model.PriorityMedium).ID)
	newer := c.finished(c.run("one", model.PriorityMedium).ID)
	if older.State != model.WorkflowSucceeded || newer.State != model.WorkflowSucceeded {
		t.Fatalf("runs: %s %s", older.State, newer.State)
	}
	if _, err := c.st.SettingPut(c.ctx, model.SettingRetentionKeepRuns, "1"); err != nil {
		t.Fatal(err)
	}
	// Purgeable once its events reached the alert planner.
	wait.UntilErr(t, 30*time.Second, "the older run to be purgeable", func() error {
		plan, err := c.st.RetentionPlan(c.ctx, "p", model.RetentionPolicy{KeepRuns: 1}, time.Now())
		if err != nil || len(plan.Roots) != 1 || plan.Roots[0] != older.ID {
			return fmt.Errorf("plan %+v (%v)", plan, err)
		}
		return nil
	})
	if _, err := c.st.SettingPut(c.ctx, model.SettingRetentionLastPurge, "0"); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 30*time.Second, "the sweep to purge the older run", func() bool {
		_, err := c.st.InstanceGet(c.ctx, older.ID)
		return err != nil
	})
	if _, err := c.st.InstanceGet(c.ctx, newer.ID); err != nil {
		t.Fatalf("the newest run went too: %v", err)
	}
	last, err := c.st.SettingInt(c.ctx, model.SettingRetentionLastPurge, 0)
	if err != nil || time.Since(time.Unix(last, 0)) > time.Minute {
		t.Fatalf("last sweep recorded as %d (%v)", last, err)
	}
}
