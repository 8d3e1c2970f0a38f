package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// runDirsOf lists the runs among ids that have a log directory on worker w.
func runDirsOf(w *clustertest.Process, ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(w.Dir, "worker", "logs", strconv.FormatInt(id, 10))); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// TestPurgedLogsGoFromAWorkerDownDuringThePurge: runs spread over two
// workers; worker-2 is stopped, the project purged (keep_runs 1). Worker-1
// deletes the purged runs' log directories at its next sweep while
// worker-2's stay on its disk; once worker-2 is started again its sweep
// asks the masters and deletes them too. The kept run's logs stay on both.
func TestPurgedLogsGoFromAWorkerDownDuringThePurge(t *testing.T) {
	sweep := []string{"BELUGA_WORKER_LOG_SWEEP=300ms"}
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 2, SessionTimeout: sessionTimeout, WorkerSlots: 4,
		Env: map[string][]string{"worker-1": sweep, "worker-2": sweep}})
	wf := spec.Workflow{Name: "fan"}
	for i := range 4 {
		wf.Tasks = append(wf.Tasks, spec.Task{Name: fmt.Sprintf("t%d", i), Command: "seq 1 3000"})
	}
	c.Apply(t, wf)
	var runs []int64
	for range 3 {
		id := c.Run(t, "fan")
		if inst := c.WaitFinished(t, id, finishWithin); inst.State != "succeeded" {
			t.Fatalf("run %d: %s", id, inst.State)
		}
		runs = append(runs, id)
	}
	purged, kept := runs[:2], runs[2]
	w1, w2 := c.Workers[0], c.Workers[1]
	if len(runDirsOf(w2, purged)) == 0 || len(runDirsOf(w1, purged)) == 0 {
		t.Fatalf("the runs to purge have logs on worker-1 %v and worker-2 %v: want some on each", runDirsOf(w1, purged), runDirsOf(w2, purged))
	}
	if err := w2.Stop(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	one := 1
	if _, err := c.Client.SetProjectRetention(ctx, c.Project, api.ProjectRetentionRequest{KeepRuns: &one}); err != nil {
		t.Fatal(err)
	}
	// The runs' events reach the alert planner within its cursor interval;
	// until then the plan keeps them.
	var plan api.RetentionPlan
	c.Eventually(t, 90*time.Second, "a plan listing the two older runs", func() bool {
		var err error
		plan, err = c.Client.RetentionProject(ctx, c.Project, false)
		return err == nil && slices.Equal(plan.Roots, purged)
	})
	if plan.LogFiles != 8 || plan.LogBytes <= 0 {
		t.Fatalf("plan %+v: want 8 log files, and worker-1's bytes of them", plan)
	}
	done, err := c.Client.RetentionProject(ctx, c.Project, true)
	if err != nil || !slices.Equal(done.Instances, purged) {
		t.Fatalf("purge %+v, %v; want runs %v", done, err, purged)
	}
	c.Eventually(t, 60*time.Second, "worker-1 deletes the purged runs' logs", func() bool { return len(runDirsOf(w1, purged)) == 0 })
	if got := runDirsOf(w2, purged); len(got) == 0 {
		t.Fatal("worker-2's logs of the purged runs went while it was down")
	}

	if err := w2.Restart(); err != nil {
		t.Fatal(err)
	}
	c.Eventually(t, 60*time.Second, "worker-2, restarted, deletes the purged runs' logs", func() bool { return len(runDirsOf(w2, purged)) == 0 })
	if len(runDirsOf(w1, []int64{kept}))+len(runDirsOf(w2, []int64{kept})) == 0 {
		t.Fatalf("the kept run %d's logs went", kept)
	}
	if id := c.Run(t, "fan"); c.WaitFinished(t, id, finishWithin).State != "succeeded" {
		t.Fatalf("a run after the sweeps did not succeed")
	}
}
