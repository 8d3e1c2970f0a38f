package master_test

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

func (c *cell) backfill(b model.Backfill) model.Backfill {
	c.t.Helper()
	b.Project = "p"
	out, err := c.st.BackfillCreate(c.ctx, b)
	if err != nil {
		c.t.Fatal(err)
	}
	c.m.Notify()
	return out
}

func (c *cell) backfillEnded(id int64) model.Backfill {
	c.t.Helper()
	var b model.Backfill
	wait.Until(c.t, 30*time.Second, "backfill ended", func() bool {
		var err error
		b, err = c.st.BackfillGet(c.ctx, id)
		return err == nil && b.State != model.BackfillRunning
	})
	return b
}

func days(n int) []time.Time {
	first := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = first.AddDate(0, 0, i)
	}
	return out
}

// TestBackfillKeepsItsParallelism: five days with parallelism 2 run in
// order, each once, never more than two at a time, and the backfill ends
// done; the runs see their day in the time params.
func TestBackfillKeepsItsParallelism(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorker(4)
	c.apply("name: day\nparams: {d: \"$[yyyyMMdd]\"}\ntasks:\n  - {name: t, command: \"sleep 0.3; echo day=$d\"}\n")
	times := days(5)
	b := c.backfill(model.Backfill{Workflow: "day", Cron: "0 2 * * *", Start: times[0], End: times[4], Times: times, Parallelism: 2})
	b = c.backfillEnded(b.ID)
	if b.State != model.BackfillDone || b.Submitted != 5 || b.Succeeded != 5 {
		t.Fatalf("backfill %+v", b)
	}
	insts, _, _ := c.st.InstanceList(c.ctx, store.InstanceFilter{Project: "p", Workflow: "day"})
	sort.Slice(insts, func(i, j int) bool { return insts[i].ID < insts[j].ID })
	if len(insts) != 5 {
		t.Fatalf("%d runs", len(insts))
	}
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for i, in := range insts {
		if !in.ScheduleTime.Equal(times[i]) || in.BackfillID != b.ID || in.CommandType != model.CommandBackfill {
			t.Fatalf("run %d: %+v, want time %v", i, in, times[i])
		}
		if log := c.taskLog(c.tasks(in.ID)[0]); log != "day="+times[i].Format("20060102")+"\n" {
			t.Fatalf("run for %v logged %q", times[i], log)
		}
		edges = append(edges, edge{*in.StartTime, 1}, edge{*in.EndTime, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta
		}
		return edges[i].at.Before(edges[j].at)
	})
	running, most := 0, 0
	for _, e := range edges {
		running += e.delta
		most = max(most, running)
	}
	if most != 2 {
		t.Fatalf("at most %d runs at a time, want exactly the parallelism 2", most)
	}
}

// TestBackfillStopsOnFailure: a serial backfill under on_failure stop ends
// failed at the first failed day and submits none after it.
func TestBackfillStopsOnFailure(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorker(2)
	c.apply("name: day\ntasks:\n  - {name: t, command: \"[ $BELUGA_CUR_DATE != 20261102 ]\"}\n")
	times := days(4)
	b := c.backfill(model.Backfill{Workflow: "day", Cron: "0 2 * * *", Start: times[0], End: times[3], Times: times,
		Parallelism: 1, OnFailure: model.BackfillStop})
	b = c.backfillEnded(b.ID)
	if b.State != model.BackfillFailed || b.Submitted != 2 || b.Succeeded != 1 || b.Failed != 1 {
		t.Fatalf("backfill %+v", b)
	}
	if _, n, _ := c.st.InstanceList(c.ctx, store.InstanceFilter{Project: "p", Workflow: "day"}); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
}

// taskLog reads a task's log where its worker (in this process) wrote it.
func (c *cell) taskLog(t model.TaskInstance) string {
	c.t.Helper()
	b, err := os.ReadFile(t.LogPath)
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}
