package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// A batch marks each submitted row once: a repeat in the batch and a row no
// longer submitted are refused (the path of batches from prepareFrom rows:
// a read, then updates by worker).
func TestMarkDispatchedBatchRefusesRepeatsAndTaken(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		inst := newInstance(t, s, model.WorkflowRunning)
		a := addTask(t, s, inst.ID, "a", model.TaskSubmitted, "")
		b := addTask(t, s, inst.ID, "b", model.TaskSubmitted, "")
		c := addTask(t, s, inst.ID, "c", model.TaskSubmitted, "")
		taken := addTask(t, s, inst.ID, "taken", model.TaskRunning, "")
		now := time.Now()
		ok, err := s.TaskMarkDispatched(ctx, []model.Dispatch{
			{ID: a.ID, Host: "w1", Time: now}, {ID: b.ID, Host: "w2", Time: now}, {ID: a.ID, Host: "w2", Time: now},
			{ID: taken.ID, Host: "w1", Time: now}, {ID: c.ID, Host: "w1", Time: now},
		})
		if err != nil || fmt.Sprint(ok) != "[true true false false true]" {
			t.Fatalf("dispatch batch: %v %v, want [true true false false true]", ok, err)
		}
		for id, host := range map[int64]string{a.ID: "w1", b.ID: "w2", c.ID: "w1"} {
			if got, _ := s.TaskGet(ctx, id); got.State != model.TaskDispatched || got.Host != host {
				t.Errorf("task %d: %s on %q, want dispatched on %s", id, got.State, got.Host, host)
			}
		}
		if got, _ := s.TaskGet(ctx, taken.ID); got.State != model.TaskRunning || got.Host != "" {
			t.Errorf("taken task changed: %+v", got)
		}
	})
}
