package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestDatasetCrashPoints kills the leading master -9 at the data-aware
// trigger's crash points while it evaluates posted partitions: before
// anything is written (the standby evaluates the partition itself), and
// after the runs, their ledger rows and the evaluation are committed but
// before the command consumer is woken (the standby starts the run and
// never fires the partition again). Either way each partition has exactly
// one run, executed once (the task's marks, outside the DB), and one
// ledger row naming it; the partitions posted while no master led run too.
func TestDatasetCrashPoints(t *testing.T) {
	for _, point := range []string{failpoint.BeforeDatasetFire, failpoint.AfterDatasetFire} {
		t.Run(point, func(t *testing.T) {
			c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout,
				Env: map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + point}}})
			marks := t.TempDir()
			c.Apply(t, spec.Workflow{Name: "daily", OnDatasets: []string{"orders@daily"},
				Tasks: []spec.Task{task(marks, "a", "echo day=$bizdate")}})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			emit := func(day int) {
				t.Helper()
				p := fmt.Sprintf("2026-12-%02d", day)
				// Retried with its key until answered: the api may be
				// reached while no master leads; the key keeps it one event.
				for {
					_, err := c.Client.EmitDataset(ctx, c.Project, "orders", p, "k-"+p)
					if err == nil {
						return
					}
					select {
					case <-ctx.Done():
						t.Fatalf("emit %s: %v", p, err)
					case <-time.After(200 * time.Millisecond): // the api restarting: try again
					}
				}
			}
			for d := 1; d <= 3; d++ {
				emit(d)
			}
			crashed := c.Masters[0]
			if err := crashed.Wait(failoverWithin); err == nil || !strings.Contains(crashed.Log(), "failpoint "+point+": killing") {
				t.Fatalf("%s did not die at %s (%v):\n%s", crashed.Name, point, err, crashed.LogTail(30))
			}
			for d := 4; d <= 5; d++ {
				emit(d)
			}
			c.WaitLeader(t, failoverWithin, crashed)
			runs := func() []model.WorkflowInstance {
				insts, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Workflow: "daily", Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				return insts
			}
			c.Eventually(t, finishWithin, "a run per partition", func() bool { return len(runs()) >= 5 })
			all := runs()
			if len(all) != 5 {
				t.Fatalf("%d runs for 5 partitions", len(all))
			}
			days := map[string]int64{}
			for _, in := range all {
				if in = c.WaitFinished(t, in.ID, finishWithin); in.State != model.WorkflowSucceeded {
					t.Fatalf("run %d ended %s", in.ID, in.State)
				}
				c.AssertRanOnce(t, in.ID, marks)
				if in.CommandType != model.CommandDataset {
					t.Fatalf("run %d: command %s", in.ID, in.CommandType)
				}
				if prev, dup := days[in.Params["partition"]]; dup {
					t.Fatalf("partition %s ran twice: runs %d and %d", in.Params["partition"], prev, in.ID)
				}
				days[in.Params["partition"]] = in.ID
			}
			fires, err := c.Store.DatasetFires(ctx, c.Project, "daily", 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(fires) != 5 {
				t.Fatalf("ledger %+v, want a row per partition", fires)
			}
			for _, f := range fires {
				if f.Outcome != model.DatasetFired || f.RunID == 0 || days[f.Partition] != f.RunID {
					t.Fatalf("ledger row %+v does not name the partition's one run (%v)", f, days)
				}
			}
			if ids, err := c.Store.DatasetPending(ctx, 10); err != nil || len(ids) != 0 {
				t.Fatalf("events left unevaluated: %v %v", ids, err)
			}
			c.AssertNoStuckRows(t)
		})
	}
}
