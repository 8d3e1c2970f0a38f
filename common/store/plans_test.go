package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/store"
)

// planWorld is a finished run of demo/diamond (its tasks succeeded) and a
// finished run of crm/report, whose dependent task waits on today's
// diamond runs.
func planWorld(t *testing.T, s *store.Store) (diamond, report int64) {
	t.Helper()
	ctx := context.Background()
	d := newInstance(t, s, model.WorkflowSucceeded)
	for _, n := range []string{"a", "b", "c", "d"} {
		addTask(t, s, d.ID, n, model.TaskSucceeded, "")
	}
	if _, err := s.ProjectCreate(ctx, "crm", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.WorkflowPut(ctx, "crm", mustSpec(t, `name: report
tasks:
  - {name: wait, type: dependent, wait_for: [{project: demo, workflow: diamond, date: today}]}
  - {name: send, command: "true", depends_on: [wait]}
`)); err != nil {
		t.Fatal(err)
	}
	r, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "crm", Workflow: "report"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InstanceFinish(ctx, r.ID, model.WorkflowSucceeded, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	return d.ID, r.ID
}

func makePlan(t *testing.T, s *store.Store, root int64, down plan.Downstream) store.Plan {
	t.Helper()
	ctx := context.Background()
	snap, err := s.PlanSnapshot(ctx, root, down)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Make(plan.Request{Action: model.ActionRerun, Instance: root, Downstream: down}, snap)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := s.InstanceGet(ctx, root)
	stored, err := s.PlanCreate(ctx, in.ProjectID, root, p, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

func TestPlanApply(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		d, r := planWorld(t, s)
		if p := makePlan(t, s, d, plan.None); len(p.Plan.Instances) != 1 {
			t.Fatalf("downstream none planned %+v", p.Plan.Instances)
		}
		p := makePlan(t, s, d, plan.All)
		if got := p.Plan.Instances; len(got) != 2 || got[0].ID != d || got[1].ID != r || got[1].Project != "crm" || got[1].Level != 1 ||
			len(got[0].Tasks) != 4 || len(got[1].Tasks) != 2 {
			t.Fatalf("plan %+v", got)
		}
		if !strings.Contains(p.Plan.Instances[1].Tasks[0].Waits[0], "demo/diamond") {
			t.Fatalf("report's wait %+v", p.Plan.Instances[1].Tasks[0])
		}
		pins, err := s.PlanPinned([]int64{d, r, d + r + 100}, time.Now())
		if err != nil || !pins[d] || !pins[r] || len(pins) != 2 {
			t.Fatalf("pins %v %v", pins, err)
		}
		if pins, _ := s.PlanPinned([]int64{d}, time.Now().Add(2*store.PlanTTL)); len(pins) != 0 {
			t.Fatalf("an expired plan pins %v", pins)
		}
		got, err := s.PlanApply(ctx, p.ID, "alice", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Commands) != 2 || got.AppliedBy != "alice" {
			t.Fatalf("applied %+v", got)
		}
		acts := drainActions(t, s)
		if len(acts) != 2 || acts[0].InstanceID != d || acts[1].InstanceID != r || acts[0].Action != model.ActionRerun || acts[1].Action != model.ActionRerun {
			t.Fatalf("commands %+v", acts)
		}
		if _, err := s.PlanApply(ctx, p.ID, "alice", time.Now()); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "was applied") {
			t.Fatalf("second apply: %v", err)
		}

		// The world changes: a task attempt of the root, then a paused
		// schedule of the dependent workflow. Each refuses, naming it, and
		// writes nothing.
		addTask(t, s, d, "a", model.TaskFailed, "")
		stale := makePlan(t, s, d, plan.All)
		addTask(t, s, d, "b", model.TaskSucceeded, "")
		_, err = s.PlanApply(ctx, stale.ID, "alice", time.Now())
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "task attempts") || !strings.Contains(err.Error(), "instance ") {
			t.Fatalf("apply after a task changed: %v", err)
		}
		stale = makePlan(t, s, d, plan.All)
		if _, _, err := s.SchedulePut(ctx, model.Schedule{Project: "crm", Workflow: "report", Cron: "0 2 * * *", Enabled: false}, nil); err != nil {
			t.Fatal(err)
		}
		_, err = s.PlanApply(ctx, stale.ID, "alice", time.Now())
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "schedule of crm/report: was none, now paused") {
			t.Fatalf("apply after a schedule paused: %v", err)
		}
		if _, err := s.PlanApply(ctx, stale.ID, "alice", time.Now().Add(2*store.PlanTTL)); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("apply after expiry: %v", err)
		}
		if acts := drainActions(t, s); len(acts) != 0 {
			t.Fatalf("refused applies wrote %+v", acts)
		}
		// A running root is a blocking conflict: planned, never applied.
		run := newInstance(t, s, model.WorkflowRunning)
		blocked := makePlan(t, s, run.ID, plan.None)
		if !blocked.Plan.Blocked() {
			t.Fatalf("running root: %+v", blocked.Plan.Conflicts)
		}
		if _, err := s.PlanApply(ctx, blocked.ID, "alice", time.Now()); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "is running") {
			t.Fatalf("apply of a blocked plan: %v", err)
		}
		if _, err := s.PlanGet(ctx, 999999); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing plan: %v", err)
		}
	})
}

// TestPlanPinsRetention: retention keeps the runs of a plan not applied nor
// expired, and lets them go as before once nothing pins them.
func TestPlanPinsRetention(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		old := newInstance(t, s, model.WorkflowSucceeded)
		newInstance(t, s, model.WorkflowSucceeded)
		allEvents(t, s, s)
		if err := store.ExecRaw(s, `UPDATE alert_cursor SET seq = ? WHERE id = 1`, int64(1)<<60); err != nil {
			t.Fatal(err)
		}
		if err := store.ExecRaw(s, `DELETE FROM command`); err != nil {
			t.Fatal(err)
		}
		pol := model.RetentionPolicy{KeepRuns: 1}
		rp, err := s.RetentionPlan(ctx, "demo", pol, time.Now())
		if err != nil || len(rp.Roots) != 1 || rp.Roots[0] != old.ID {
			t.Fatalf("retention without a plan: %+v %v", rp, err)
		}
		makePlan(t, s, old.ID, plan.None)
		rp, err = s.RetentionPlan(ctx, "demo", pol, time.Now())
		if err != nil || len(rp.Roots) != 0 || rp.Kept[store.KeptByPin] != 1 {
			t.Fatalf("retention with a pinned plan: %+v %v", rp, err)
		}
		if got, err := s.RetentionPurge(ctx, "demo", pol, time.Now(), store.PurgeOptions{}); err != nil || len(got.Roots) != 0 {
			t.Fatalf("purge with a pinned plan: %+v %v", got, err)
		}
		if _, err := s.InstanceGet(ctx, old.ID); err != nil {
			t.Fatalf("the pinned run went: %v", err)
		}
	})
}
