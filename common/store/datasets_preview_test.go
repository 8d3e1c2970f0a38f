package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestDatasetEmitPreview: a preview answers what the evaluator then
// decides for the same event, says why a consumer gets nothing, and
// writes nothing.
func TestDatasetEmitPreview(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		must(t, func() error { _, err := s.ProjectCreate(ctx, "p", ""); return err }())
		for _, y := range []string{
			"name: c\non_datasets: [orders@daily]\ntasks:\n  - {name: a, command: \"true\"}\n",
			"name: d\non_datasets: [orders@daily, refs@daily]\ntasks:\n  - {name: a, command: \"true\"}\n",
		} {
			if _, _, err := s.WorkflowPut(ctx, "p", mustSpec(t, y)); err != nil {
				t.Fatal(err)
			}
		}
		rows := func() int64 {
			return count(t, s, `SELECT COUNT(*) FROM dataset_event`) + count(t, s, `SELECT COUNT(*) FROM dataset_fire`) +
				count(t, s, `SELECT COUNT(*) FROM workflow_instance`) + count(t, s, `SELECT COUNT(*) FROM command`)
		}
		before := rows()
		emit := store.DatasetEmit{Project: "p", Dataset: "orders", Partition: "2026-11-01", Key: "k1", By: "admin"}
		pre, err := s.DatasetEmitPreview(ctx, emit)
		must(t, err)
		if len(pre) != 2 || pre[0].Workflow != "c" || pre[0].Outcome != model.DatasetFired || pre[0].Rerun ||
			pre[0].Partition != "2026-11-01" || pre[1].Workflow != "d" || pre[1].Outcome != "" ||
			!strings.Contains(pre[1].Reason, "inputs not all ready") {
			t.Fatalf("preview: %+v", pre)
		}
		if after := rows(); after != before {
			t.Fatalf("a preview wrote %d rows", after-before)
		}
		_, _, err = s.DatasetEmit(ctx, emit)
		must(t, err)
		fires := evaluateAll(t, s)
		if len(fires) != 1 || fires[0].Workflow != pre[0].Workflow || fires[0].Partition != pre[0].Partition ||
			fires[0].Outcome != pre[0].Outcome || fires[0].RunID == 0 {
			t.Fatalf("the evaluator decided %+v; the preview said %+v", fires, pre)
		}
		// Produced again: c ignores it (late_data ignore); d still waits.
		pre, err = s.DatasetEmitPreview(ctx, store.DatasetEmit{Project: "p", Dataset: "orders", Partition: "20261101", Key: "k2"})
		must(t, err)
		if len(pre) != 2 || pre[0].Outcome != model.DatasetIgnored || pre[1].Outcome != "" {
			t.Fatalf("preview of a re-produce: %+v", pre)
		}
		for _, bad := range []store.DatasetEmit{
			{Project: "p", Dataset: "9bad", Partition: "2026-11-01"},
			{Project: "p", Dataset: "orders", Partition: "yesterday"},
		} {
			if _, err := s.DatasetEmitPreview(ctx, bad); !errors.Is(err, store.ErrBadDataset) {
				t.Errorf("preview of %+v: %v, want ErrBadDataset", bad, err)
			}
		}
		if _, err := s.DatasetEmitPreview(ctx, store.DatasetEmit{Project: "nope", Dataset: "orders", Partition: "2026-11-01"}); err == nil {
			t.Error("preview in a missing project: no error")
		}
	})
}

// TestDatasetEmitPlanApply: a dataset event's plan names the consumer it
// would run and why the other gets nothing; its apply posts exactly that
// event, which the evaluator then decides as planned; a plan whose
// decision changed (the partition ran meanwhile) or whose key was posted
// meanwhile is refused naming it, and posts nothing.
func TestDatasetEmitPlanApply(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pr, err := s.ProjectCreate(ctx, "p", "")
		must(t, err)
		for _, y := range []string{
			"name: c\non_datasets: [orders@daily]\ntasks:\n  - {name: a, command: \"true\"}\n  - {name: b, command: \"true\", depends_on: [a]}\n",
			"name: d\non_datasets: [orders@daily, refs@daily]\ntasks:\n  - {name: a, command: \"true\"}\n",
		} {
			if _, _, err := s.WorkflowPut(ctx, "p", mustSpec(t, y)); err != nil {
				t.Fatal(err)
			}
		}
		mk := func(partition, key string) store.Plan {
			t.Helper()
			em, tasks, err := s.DatasetEmitPlan(ctx, store.DatasetEmit{Project: "p", Dataset: "orders", Partition: partition, Key: key, By: "admin"})
			must(t, err)
			p, err := s.PlanCreate(ctx, pr.ID, 0, plan.MakeEmit(em, tasks), "admin")
			must(t, err)
			return p
		}
		events := func() int64 { return count(t, s, `SELECT COUNT(*) FROM dataset_event`) }

		p := mk("2026-11-01", "k1")
		if len(p.Plan.Instances) != 1 || p.Plan.Instances[0].Workflow != "c" || !p.Plan.Instances[0].New ||
			len(p.Plan.Instances[0].Tasks) != 2 || len(p.Plan.Conflicts) != 1 || !strings.Contains(p.Plan.Conflicts[0].What, "p/d: no run: inputs not all ready") ||
			p.Plan.Blocked() || !slices.Equal(p.Plan.Projects(), []string{"p"}) {
			t.Fatalf("plan %+v", p.Plan)
		}
		if n := events(); n != 0 {
			t.Fatalf("planning posted %d events", n)
		}
		applied, err := s.PlanApply(ctx, p.ID, "admin", time.Now().UTC())
		must(t, err)
		if applied.Event == 0 || events() != 1 {
			t.Fatalf("applied %+v, %d events", applied, events())
		}
		fires := evaluateAll(t, s)
		if len(fires) != 1 || fires[0].Workflow != "c" || fires[0].Partition != "2026-11-01" || fires[0].Outcome != model.DatasetFired || fires[0].RunID == 0 {
			t.Fatalf("the plan said c runs 2026-11-01; the evaluator decided %+v", fires)
		}

		// Planned as a re-produce c ignores; then the key is posted by hand:
		// refused, naming the key, nothing posted.
		p = mk("2026-11-01", "k2")
		if len(p.Plan.Instances) != 0 || len(p.Plan.Conflicts) != 2 || !strings.Contains(p.Plan.Conflicts[0].What, "ignored") {
			t.Fatalf("re-produce plan %+v", p.Plan)
		}
		_, _, err = s.DatasetEmit(ctx, store.DatasetEmit{Project: "p", Dataset: "orders", Partition: "2026-11-01", Key: "k2"})
		must(t, err)
		before := events()
		if _, err := s.PlanApply(ctx, p.ID, "admin", time.Now().UTC()); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), `key "k2": was not posted, now posted`) {
			t.Fatalf("apply after the key was posted: %v", err)
		}
		if events() != before {
			t.Fatal("a refused apply posted an event")
		}

		// Planned as a first run of 11-02; the partition runs meanwhile (an
		// event evaluated): refused, naming c's decision.
		p = mk("2026-11-02", "")
		_, _, err = s.DatasetEmit(ctx, store.DatasetEmit{Project: "p", Dataset: "orders", Partition: "2026-11-02", Key: "other"})
		must(t, err)
		evaluateAll(t, s)
		before = events()
		if _, err := s.PlanApply(ctx, p.ID, "admin", time.Now().UTC()); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "p/c on orders@2026-11-02: was runs 2026-11-02, now ignored") {
			t.Fatalf("apply after the partition ran: %v", err)
		}
		if events() != before {
			t.Fatal("a refused apply posted an event")
		}
	})
}
