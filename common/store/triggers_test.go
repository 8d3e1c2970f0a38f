package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestTriggers runs the trigger methods on every dialect: create (one name
// per workflow), read, update, rotate, deliver with and without a key,
// refuse, list the ledger, and delete with the workflow.
func TestTriggers(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		projectWithWorkflow(t, s, "wf")
		in := model.Trigger{Project: "p", Workflow: "wf", Name: "gh", TokenHash: "h1", Params: map[string]string{"ref": "ref"}, Enabled: true, CreatedBy: "ann"}
		if _, err := s.TriggerCreate(ctx, model.Trigger{Project: "p", Workflow: "nope", Name: "x", TokenHash: "h"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a trigger of a missing workflow: %v", err)
		}
		tr, err := s.TriggerCreate(ctx, in)
		if err != nil || tr.ID == 0 || tr.Params["ref"] != "ref" || !tr.Enabled || tr.CreatedBy != "ann" {
			t.Fatalf("create: %+v %v", tr, err)
		}
		if _, err := s.TriggerCreate(ctx, in); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a second trigger gh: %v, want ErrConflict", err)
		}
		if got, err := s.TriggerByID(ctx, tr.ID); err != nil || got.Project != "p" || got.Workflow != "wf" || got.TokenHash != "h1" {
			t.Fatalf("by id: %+v %v", got, err)
		}
		if got, err := s.TriggerGet(ctx, "p", "wf", "gh"); err != nil || got.ID != tr.ID || got.TokenHash != "h1" {
			t.Fatalf("by name: %+v %v", got, err)
		}
		if _, err := s.TriggerGet(ctx, "p", "wf", "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown trigger by name: %v, want ErrNotFound", err)
		}
		off := false
		if got, err := s.TriggerUpdate(ctx, "p", "wf", "gh", store.TriggerChange{Enabled: &off, TokenHash: "h2"}); err != nil ||
			got.Enabled || got.TokenHash != "h2" || got.RotatedAt == nil || got.Params["ref"] != "ref" {
			t.Fatalf("disable and rotate: %+v %v", got, err)
		}
		at := time.Now()
		if _, err := s.TriggerDeliver(ctx, store.TriggerDelivery{TriggerID: tr.ID, Key: "k1", ReceivedAt: at}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a delivery to a disabled trigger: %v, want ErrConflict", err)
		}
		on := true
		if _, err := s.TriggerUpdate(ctx, "p", "wf", "gh", store.TriggerChange{Enabled: &on}); err != nil {
			t.Fatal(err)
		}
		// A refused delivery keeps its key free: its corrected retry runs.
		if d, err := s.TriggerRefuse(ctx, store.TriggerRefusal{TriggerID: tr.ID, Key: "k1", Reason: "bad JSON", At: at}); err != nil || d.Outcome != model.DeliveryRefused {
			t.Fatalf("refuse: %+v %v", d, err)
		}
		d1, err := s.TriggerDeliver(ctx, store.TriggerDelivery{TriggerID: tr.ID, Key: "k1", Params: map[string]string{"ref": "main"}, ReceivedAt: at})
		if err != nil || d1.Outcome != model.DeliveryAccepted || d1.RunID == 0 {
			t.Fatalf("deliver: %+v %v", d1, err)
		}
		inst, err := s.InstanceGet(ctx, d1.RunID)
		if err != nil || inst.CommandType != model.CommandTriggered || inst.Params["ref"] != "main" || inst.Workflow != "wf" {
			t.Fatalf("the run: %+v %v", inst, err)
		}
		d2, err := s.TriggerDeliver(ctx, store.TriggerDelivery{TriggerID: tr.ID, Key: "k1", Params: map[string]string{"ref": "other"}, ReceivedAt: at})
		if err != nil || d2.Outcome != model.DeliveryDuplicate || d2.RunID != d1.RunID {
			t.Fatalf("a second delivery with k1: %+v %v, want a duplicate naming run %d", d2, err, d1.RunID)
		}
		// Without a key every delivery runs.
		for range 2 {
			if d, err := s.TriggerDeliver(ctx, store.TriggerDelivery{TriggerID: tr.ID, ReceivedAt: at}); err != nil || d.Outcome != model.DeliveryAccepted {
				t.Fatalf("keyless: %+v %v", d, err)
			}
		}
		ds, err := s.TriggerDeliveries(ctx, tr.ID, 0, 10)
		if err != nil || len(ds) != 5 || ds[0].IdempotencyKey != "" || ds[2].Outcome != model.DeliveryDuplicate || ds[4].Outcome != model.DeliveryRefused {
			t.Fatalf("ledger: %+v %v", ds, err)
		}
		if page, err := s.TriggerDeliveries(ctx, tr.ID, ds[1].ID, 2); err != nil || len(page) != 2 || page[0].ID != ds[2].ID {
			t.Fatalf("page before %d: %+v %v", ds[1].ID, page, err)
		}
		if ts, err := s.TriggerList(ctx, "p", "wf"); err != nil || len(ts) != 1 || ts[0].Name != "gh" {
			t.Fatalf("list: %+v %v", ts, err)
		}
		if err := s.TriggerDelete(ctx, "p", "wf", "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete a missing trigger: %v", err)
		}
		// Refusals beyond Keep go, oldest first; the rest of the ledger stays.
		for i := range 3 {
			if _, err := s.TriggerRefuse(ctx, store.TriggerRefusal{TriggerID: tr.ID, Reason: fmt.Sprint("probe ", i), At: at, Keep: 2}); err != nil {
				t.Fatal(err)
			}
		}
		ds, err = s.TriggerDeliveries(ctx, tr.ID, 0, 10)
		if err != nil || len(ds) != 6 || ds[0].Reason != "probe 2" || ds[1].Reason != "probe 1" || ds[2].Outcome != model.DeliveryAccepted ||
			ds[5].Outcome != model.DeliveryAccepted {
			t.Fatalf("ledger after 3 refusals kept to 2: %+v %v", ds, err)
		}
		if err := s.TriggerDelete(ctx, "p", "wf", "gh"); err != nil {
			t.Fatal(err)
		}
		if ds, err := s.TriggerDeliveries(ctx, tr.ID, 0, 10); err != nil || len(ds) != 0 {
			t.Fatalf("deliveries of a deleted trigger: %+v %v", ds, err)
		}
		// A workflow's deletion takes its triggers.
		putWorkflow(t, s, "wf2")
		t2, err := s.TriggerCreate(ctx, model.Trigger{Project: "p", Workflow: "wf2", Name: "gh", TokenHash: "h3", Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WorkflowDelete(ctx, "p", "wf2"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TriggerByID(ctx, t2.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the trigger after its workflow's deletion: %v", err)
		}
	})
}

// TestTriggerDeliveryRace: two deliveries of each key at once, as two API
// servers would get a retried webhook, start one run per key; the other is
// recorded a duplicate naming that run.
func TestTriggerDeliveryRace(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		projectWithWorkflow(t, s, "wf")
		tr, err := s.TriggerCreate(ctx, model.Trigger{Project: "p", Workflow: "wf", Name: "t", TokenHash: "h", Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		const keys = 10
		for k := range keys {
			key := fmt.Sprintf("key-%d", k)
			var wg sync.WaitGroup
			start := make(chan struct{})
			got := make([]model.TriggerDelivery, 2)
			errs := make([]error, 2)
			for i := range 2 {
				wg.Go(func() {
					<-start
					got[i], errs[i] = s.TriggerDeliver(ctx, store.TriggerDelivery{TriggerID: tr.ID, Key: key, ReceivedAt: time.Now()})
				})
			}
			close(start)
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("%s: %v, %v", key, errs[0], errs[1])
			}
			if got[0].RunID == 0 || got[0].RunID != got[1].RunID {
				t.Fatalf("%s: runs %d and %d, want one", key, got[0].RunID, got[1].RunID)
			}
			if outcomes := got[0].Outcome + "," + got[1].Outcome; outcomes != "accepted,duplicate" && outcomes != "duplicate,accepted" {
				t.Fatalf("%s: outcomes %s", key, outcomes)
			}
		}
		_, total, err := s.InstanceList(ctx, store.InstanceFilter{Project: "p"})
		if err != nil || total != keys {
			t.Fatalf("%d runs, want %d: %v", total, keys, err)
		}
	})
}

// projectWithWorkflow makes project p with a one-task workflow wf.
func projectWithWorkflow(t *testing.T, s *store.Store, wf string) {
	t.Helper()
	if _, err := s.ProjectCreate(context.Background(), "p", ""); err != nil {
		t.Fatal(err)
	}
	putWorkflow(t, s, wf)
}

// putWorkflow applies a one-task workflow wf in project p.
func putWorkflow(t *testing.T, s *store.Store, wf string) {
	t.Helper()
	if _, _, err := s.WorkflowPut(context.Background(), "p", mustSpec(t, "name: "+wf+"\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
		t.Fatal(err)
	}
}
