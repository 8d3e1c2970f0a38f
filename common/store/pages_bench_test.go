package store_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
)

// BenchmarkWorkflowsPage is one page of 50 of the workflow list (and the
// schedule list) of a project of 100 or 100,000 definitions on SQLite,
// the rows copied by SQL from one applied workflow (as many as bench/scale
// applies, in seconds rather than minutes); prefix d0 matches them all,
// d1 none.
func BenchmarkWorkflowsPage(b *testing.B) {
	for _, n := range []int{100, 100000} {
		ctx := context.Background()
		s, err := store.Open(ctx, testDialectNamed(b, "sqlite").url(b), zap.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		s.ProjectCreate(ctx, "p", "")
		if _, _, err := s.WorkflowPut(ctx, "p", mustSpec(b, "name: seed\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
			b.Fatal(err)
		}
		cols := "project_id, version, spec_json, spec_hash, description, failure_strategy, priority, worker_group, timeout_ms, task_count, max_active_runs, applied_by, created_at"
		if err := store.ExecRaw(s, `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM c WHERE i < ?)
			INSERT INTO workflow_definition (name, `+cols+`) SELECT printf('d%06d', i), `+cols+` FROM c, workflow_definition WHERE name = 'seed'`, n-1); err != nil {
			b.Fatal(err)
		}
		for _, prefix := range []string{"d0", "d1", ""} {
			b.Run(fmt.Sprintf("defs=%d/prefix=%q", n, prefix), func(b *testing.B) {
				cpu0 := cpuTime()
				for range b.N {
					page, _, err := s.WorkflowPage(ctx, "p", store.NamePage{Prefix: prefix, Limit: 50})
					if err != nil || prefix == "d0" && len(page) != 50 {
						b.Fatalf("page: %d %v", len(page), err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
		s.Close()
	}
}
