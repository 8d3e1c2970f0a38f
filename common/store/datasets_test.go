package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

const hourlyProducer = `name: prod
tasks:
  - name: load
    command: "true"
    produces: ["events@${partition}"]
`

const dailyConsumer = `name: daily
on_datasets: [events@hourly, orders@daily]
late_data: %s
tasks:
  - {name: a, command: "true"}
`

// evaluateAll evaluates every pending event as the leader would and
// returns the fires.
func evaluateAll(t *testing.T, s *store.Store) []model.DatasetFire {
	t.Helper()
	ctx := context.Background()
	ids, err := s.DatasetPending(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []model.DatasetFire
	for _, id := range ids {
		fs, err := s.DatasetEvaluate(ctx, id)
		if err != nil {
			t.Fatalf("evaluate event %d: %v", id, err)
		}
		out = append(out, fs...)
	}
	return out
}

// produceByTask runs one attempt of prod's task whose params declare part
// and applies its success (twice: a re-sent result), as a worker would.
func produceByTask(t *testing.T, s *store.Store, part string) (run int64) {
	t.Helper()
	ctx := context.Background()
	inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "p", Workflow: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	tk := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "load", Type: "shell", State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now,
		Params: map[string]string{store.ProducesParam: "events@" + part}}
	if err := s.TaskInsert(ctx, []*model.TaskInstance{tk}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TaskMarkDispatched(ctx, []model.Dispatch{{ID: tk.ID, Host: "w1", Time: now}}); err != nil {
		t.Fatal(err)
	}
	res := model.Report{ID: tk.ID, Kind: model.ReportResult, Host: "w1", State: model.TaskSucceeded, StartTime: now, EndTime: now,
		Outputs: map[string]string{store.ProducesOutput: "audit@" + part[:10]}}
	for range 2 {
		if _, err := s.TaskApplyReports(ctx, []model.Report{res}); err != nil {
			t.Fatal(err)
		}
	}
	return inst.ID
}

// TestDatasetDailyOfHourly is the case on every dialect: a daily
// consumer of an hourly dataset (produced by a task's success) and a daily
// one (emitted from outside) runs once, after the one late hour; a
// re-produce reruns it under rerun and is only recorded under ignore;
// evaluating again or re-applying a success changes nothing.
func TestDatasetDailyOfHourly(t *testing.T) {
	for _, late := range []string{"rerun", "ignore"} {
		t.Run(late, func(t *testing.T) {
			each(t, func(t *testing.T, s *store.Store) {
				ctx := context.Background()
				if _, err := s.ProjectCreate(ctx, "p", ""); err != nil {
					t.Fatal(err)
				}
				for _, y := range []string{hourlyProducer, fmt.Sprintf(dailyConsumer, late)} {
					if _, _, err := s.WorkflowPut(ctx, "p", mustSpec(t, y)); err != nil {
						t.Fatal(err)
					}
				}
				day := "2026-12-07"
				if _, _, err := s.DatasetEmit(ctx, store.DatasetEmit{Project: "p", Dataset: "orders", Partition: "20261207", Key: "o1", By: "ann"}); err != nil {
					t.Fatal(err)
				}
				for h := range 24 {
					if h == 13 {
						continue // late
					}
					produceByTask(t, s, fmt.Sprintf("%sT%02d", day, h))
				}
				if fs := evaluateAll(t, s); len(fs) != 0 {
					t.Fatalf("23 of 24 hours produced: fires %+v, want none", fs)
				}
				// Another day's hour counts towards that day only.
				produceByTask(t, s, "2026-12-08T00")
				run13 := produceByTask(t, s, day+"T13")
				fs := evaluateAll(t, s)
				if len(fs) != 1 || fs[0].Workflow != "daily" || fs[0].Partition != day || fs[0].Outcome != model.DatasetFired || fs[0].RunID == 0 || fs[0].Rerun {
					t.Fatalf("the late hour: fires %+v, want one run of daily for %s", fs, day)
				}
				inst, err := s.InstanceGet(ctx, fs[0].RunID)
				if err != nil || inst.CommandType != model.CommandDataset || inst.Params["bizdate"] != "20261207" || inst.Params["partition"] != day {
					t.Fatalf("the run: %+v %v", inst, err)
				}
				if fs := evaluateAll(t, s); len(fs) != 0 {
					t.Fatalf("evaluated again: %+v", fs)
				}
				// The lineage of the fired run and of a producing run.
				rd, err := s.RunDatasets(ctx, inst.ID)
				if err != nil || rd.Fire == nil || len(rd.WaitedFor) != 25 {
					t.Fatalf("run datasets: %+v %v", rd, err)
				}
				for _, in := range rd.WaitedFor {
					if !in.Produced || in.ReadyAt == nil || in.ReadyAt.After(rd.Fire.FiredAt) {
						t.Fatalf("waited for %+v, not produced before the fire at %v", in, rd.Fire.FiredAt)
					}
				}
				pd, err := s.RunDatasets(ctx, run13)
				if err != nil || pd.Fire != nil || len(pd.Produced) != 2 || pd.Produced[0].Partition != day+"T13" || pd.Produced[1].Dataset != "audit" {
					t.Fatalf("the producing run's datasets: %+v %v", pd, err)
				}
				// Emitting with the same key again records nothing.
				if ev, dup, err := s.DatasetEmit(ctx, store.DatasetEmit{Project: "p", Dataset: "orders", Partition: day, Key: "o1"}); err != nil || !dup || ev.ProducedBy != "ann" {
					t.Fatalf("the same key again: %+v %v %v", ev, dup, err)
				}
				if fs := evaluateAll(t, s); len(fs) != 0 {
					t.Fatalf("after a duplicate emit: %+v", fs)
				}
				// Two hours produced again, by new tasks, before the leader
				// looks: one decision covers both.
				produceByTask(t, s, day+"T05")
				produceByTask(t, s, day+"T06")
				fs = evaluateAll(t, s)
				if len(fs) != 1 {
					t.Fatalf("two re-produces seen together: fires %+v, want one", fs)
				}
				switch late {
				case "rerun":
					if fs[0].Outcome != model.DatasetFired || !fs[0].Rerun || fs[0].RunID == 0 || fs[0].RunID == inst.ID {
						t.Fatalf("rerun: %+v", fs[0])
					}
				case "ignore":
					if fs[0].Outcome != model.DatasetIgnored || fs[0].RunID != 0 {
						t.Fatalf("ignore: %+v", fs[0])
					}
				}
				ledger, err := s.DatasetFires(ctx, "p", "daily", 10)
				if err != nil || len(ledger) != 2 || ledger[1].RunID != inst.ID {
					t.Fatalf("ledger: %+v %v", ledger, err)
				}
				ds, err := s.DatasetList(ctx, "p")
				if err != nil || len(ds) != 3 || ds[1].Name != "events" || ds[1].Partitions != 25 || ds[1].Consumers[0].RunGrain != "daily" || len(ds[1].Producers) != 1 ||
					ds[1].Producers[0].Task != "load" || len(ds[1].Consumers) != 1 || ds[1].Consumers[0].LateData != late {
					t.Fatalf("list: %+v %v", ds, err)
				}
				d, err := s.DatasetGet(ctx, "p", "events", 3)
				if err != nil || d.Partitions != 25 || len(d.PartitionList) != 3 || d.PartitionList[0].Key != "2026-12-08T00" {
					t.Fatalf("get: %+v %v", d, err)
				}
				if _, err := s.DatasetGet(ctx, "p", "nope", 3); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("an unknown dataset: %v", err)
				}
				if _, _, err := s.DatasetEmit(ctx, store.DatasetEmit{Project: "p", Dataset: "orders", Partition: "2026-13-01"}); !errors.Is(err, store.ErrBadDataset) {
					t.Fatalf("a bad partition: %v", err)
				}
			})
		})
	}
}

// TestDatasetEvaluateFenced: an old term's evaluation writes nothing, and
// the event stays for the new leader, which fires it once.
func TestDatasetEvaluateFenced(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.ProjectCreate(ctx, "p", ""); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.WorkflowPut(ctx, "p", mustSpec(t, "name: c\non_datasets: [orders@daily]\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
			t.Fatal(err)
		}
		if err := s.TermBegin(ctx, 1, "m1"); err != nil {
			t.Fatal(err)
		}
		old := s.Term(1)
		if err := s.TermBegin(ctx, 2, "m2"); err != nil {
			t.Fatal(err)
		}
		ev, _, err := s.DatasetEmit(ctx, store.DatasetEmit{Project: "p", Dataset: "orders", Partition: "2026-12-07"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.DatasetEvaluate(ctx, ev.ID); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("the old term: %v, want ErrFenced", err)
		}
		cur := s.Term(2)
		fs, err := cur.DatasetEvaluate(ctx, ev.ID)
		if err != nil || len(fs) != 1 || fs[0].RunID == 0 {
			t.Fatalf("the new term: %+v %v", fs, err)
		}
		if fs, err := cur.DatasetEvaluate(ctx, ev.ID); err != nil || len(fs) != 0 {
			t.Fatalf("again: %+v %v", fs, err)
		}
		if ids, err := s.DatasetPending(ctx, 10); err != nil || len(ids) != 0 {
			t.Fatalf("pending: %v %v", ids, err)
		}
	})
}
