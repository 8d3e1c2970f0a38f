package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
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
