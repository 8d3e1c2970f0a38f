package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// A 100,000-task instance writes more rows at once than one statement may
// name (SQLite 32,766 variables, MySQL 65,535 placeholders): the roots of
// a fan-out in one TaskInsertAttempts, and a rerun superseding all of them
// (before, the events' and the supersede's "IN ?" failed: too many SQL
// variables).
func TestInsertAttemptsPastVariableLimit(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		inst := newInstance(t, s, model.WorkflowRunning)
		const n = 70000
		first := make([]*model.TaskInstance, n)
		for i := range first {
			first[i] = &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: fmt.Sprintf("t%d", i), Type: "shell",
				State: model.TaskSucceeded, Attempt: 1}
		}
		first[0].State = model.TaskRunning
		if err := s.TaskInsertAttempts(ctx, nil, first); err != nil {
			t.Fatal(err)
		}
		u, err := s.InstanceUnsettled(ctx, inst.ID)
		if err != nil || u.Succeeded != n-1 || len(u.Tasks) != 1 || u.Tasks[0].Name != "t0" {
			t.Fatalf("unsettled: %d rows, %d succeeded, %v; want t0 and %d", len(u.Tasks), u.Succeeded, err, n-1)
		}
		prev := make([]int64, n)
		for i, tk := range first {
			prev[i] = tk.ID
		}
		again := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "t1", Type: "shell", State: model.TaskSubmitted, Attempt: 2}}
		if err := s.TaskInsertAttempts(ctx, prev, again); err != nil {
			t.Fatal(err)
		}
		// Superseded rows no longer count as succeeded.
		if u, err = s.InstanceUnsettled(ctx, inst.ID); err != nil || u.Succeeded != 0 || len(u.Tasks) != 2 {
			t.Fatalf("after the rerun: %d rows, %d succeeded, %v; want 2 and 0", len(u.Tasks), u.Succeeded, err)
		}
	})
}
