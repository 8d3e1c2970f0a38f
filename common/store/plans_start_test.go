package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/store"
)

// makeStartPlan plans and keeps new runs of demo/diamond: a backfill of
// times, or (no times) a rerun from b and what follows it.
func makeStartPlan(t *testing.T, s *store.Store, times []time.Time, down plan.Downstream) store.Plan {
	t.Helper()
	ctx := context.Background()
	snap, def, version, err := s.PlanSnapshotStart(ctx, store.PlanTarget{Project: "demo", Workflow: "diamond", Times: times}, down)
	if err != nil {
		t.Fatal(err)
	}
	req := plan.StartRequest{Action: plan.ActionBackfill, WF: plan.WF{Project: "demo", Workflow: "diamond"}, Def: def, Parallelism: 1, Downstream: down}
	st := &plan.Start{Project: "demo", Workflow: "diamond", Version: version, Latest: true}
	if len(times) == 0 {
		req.Action, req.StartNodes, req.Scope = plan.ActionRerunFrom, []string{"b"}, "downstream"
		req.Runs = []plan.NewRun{{Base: time.Now().UTC(), Loc: time.UTC}}
		st.StartNodes, st.Scope = req.StartNodes, req.Scope
	} else {
		for _, at := range times {
			req.Runs = append(req.Runs, plan.NewRun{Base: at, Loc: time.UTC})
		}
		st.Cron, st.Begin, st.End, st.Times, st.Parallelism = "0 0 * * *", times[0], times[len(times)-1], times, 1
	}
	p, err := plan.MakeStart(req, snap)
	if err != nil {
		t.Fatal(err)
	}
	p.Start = st
	pr, err := s.ProjectGet(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.PlanCreate(ctx, pr.ID, 0, p, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// TestPlanStartApply: a backfill plan of demo/diamond over three days
// reaches crm/report's run of today; applying it writes the backfill of
// exactly those times and the rerun of report, nothing else. A plan made
// before a run appeared in the range, or before a new version, is refused
// naming it. A rerun from b writes the run of b, d at the planned version.
func TestPlanStartApply(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		_, report := planWorld(t, s)
		today := time.Now().UTC().Truncate(24 * time.Hour)
		times := []time.Time{today.AddDate(0, 0, -2), today.AddDate(0, 0, -1), today}
		p := makeStartPlan(t, s, times, plan.Direct)
		got := p.Plan.Instances
		if len(got) != 4 || !got[0].New || got[0].ID != -1 || got[3].ID != report || got[3].Level != 1 || got[3].After[0] != -3 ||
			len(got[0].Tasks) != 4 || got[2].ScheduleTime == nil || !got[2].ScheduleTime.Equal(today) {
			t.Fatalf("plan %+v", got)
		}
		stale := makeStartPlan(t, s, times, plan.Direct)
		drainActions(t, s)
		applied, err := s.PlanApply(ctx, p.ID, "alice", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if applied.Backfill == 0 || len(applied.Commands) != 1 {
			t.Fatalf("applied %+v", applied)
		}
		b, err := s.BackfillGet(ctx, applied.Backfill)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(b.Times, times, time.Time.Equal) || b.Project != "demo" || b.Workflow != "diamond" || b.RequestedBy != "alice" {
			t.Fatalf("backfill %+v", b)
		}
		if acts := drainActions(t, s); len(acts) != 1 || acts[0].InstanceID != report || acts[0].Action != model.ActionRerun {
			t.Fatalf("commands %+v", acts)
		}

		// The backfill just written covers the range: the stale plan is
		// refused, naming the running backfill; so is a new plan's apply
		// once a run appears in the range.
		_, err = s.PlanApply(ctx, stale.ID, "alice", time.Now())
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), fmt.Sprintf("running backfills of demo/diamond over the range: was none, now %d", b.ID)) {
			t.Fatalf("apply after a backfill: %v", err)
		}
		if _, err := s.BackfillStop(ctx, b.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		fresh := makeStartPlan(t, s, times, plan.None)
		at := times[1]
		run, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond", ScheduleTime: &at, CommandType: model.CommandBackfill})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.PlanApply(ctx, fresh.ID, "alice", time.Now())
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "runs of demo/diamond scheduled from") || !strings.Contains(err.Error(), fmt.Sprintf("now %d", run.ID)) {
			t.Fatalf("apply after a run in the range: %v", err)
		}
		// Planned again: that time has an unfinished run, a blocking conflict.
		if again := makeStartPlan(t, s, times, plan.None); !again.Plan.Blocked() || !slices.ContainsFunc(again.Plan.Conflicts, func(c plan.Conflict) bool {
			return c.Blocking && strings.Contains(c.What, fmt.Sprintf("has run %d, submitted", run.ID))
		}) {
			t.Fatalf("conflicts %+v", again.Plan.Conflicts)
		}

		// Rerun from b: b and d, at version 1; a new version refuses it.
		rf := makeStartPlan(t, s, nil, plan.None)
		if ts := rf.Plan.Instances[0].Tasks; len(ts) != 2 || ts[0].Name != "b" || ts[1].Name != "d" {
			t.Fatalf("rerun from b plans %+v", ts)
		}
		rfStale := makeStartPlan(t, s, nil, plan.None)
		applied, err = s.PlanApply(ctx, rf.ID, "alice", time.Now())
		if err != nil || len(applied.Started) != 1 {
			t.Fatalf("apply rerun from: %+v %v", applied, err)
		}
		inst, err := s.InstanceGet(ctx, applied.Started[0])
		if err != nil || inst.Version != 1 || !slices.Equal(inst.StartNodes, []string{"b"}) || inst.Scope != "downstream" {
			t.Fatalf("the run %+v %v", inst, err)
		}
		if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamondV2)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PlanApply(ctx, rfStale.ID, "alice", time.Now()); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "latest version of demo/diamond: was 1, now 2") {
			t.Fatalf("apply after a new version: %v", err)
		}
	})
}
