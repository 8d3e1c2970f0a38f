package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

func TestRetentionCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	first := e.etlRun() // project p, workflow nightly_etl
	ids := []int64{first.ID}
	for range 2 {
		inst, err := e.store.InstanceCreateRun(ctx, store.RunRequest{Project: "p", Workflow: "nightly_etl"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inst.ID)
	}
	// The master's part: claim the runs, end them, and the alert planner
	// passes their events.
	if _, err := e.store.InstanceClaimCommands(ctx, "m1:5678", 1, 10); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := e.store.InstanceFinish(ctx, id, model.WorkflowSucceeded, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
	}
	last, err := e.store.EventLastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.AlertAdd(ctx, nil, last); err != nil {
		t.Fatal(err)
	}

	e.want(0, []string{"retention", "show"}, "global default: keep_days none, keep_runs none; audit_days none")
	e.want(0, []string{"retention", "set", "--keep-days", "30", "--audit-days", "90"}, "keep_days 30, keep_runs none; audit_days 90")
	e.want(0, []string{"retention", "show", "-p", "p"}, "project p: keep_days default, keep_runs default; in force: keep_days 30, keep_runs none")
	e.want(0, []string{"retention", "set", "-p", "p", "--keep-runs", "1"}, "keep_days default, keep_runs 1; in force: keep_days 30, keep_runs 1")

	// Bad input: exit 2 naming the problem, nothing changed.
	e.want(2, []string{"retention", "set", "-p", "p", "--keep-runs", "-3"}, "keep_runs must be from 0")
	e.want(2, []string{"retention", "set", "--keep-days", "soon"}, `--keep-days must be a whole number, got "soon"`)
	e.want(2, []string{"retention", "set", "-p", "p", "--audit-days", "3"}, "--audit-days is global")
	e.want(2, []string{"retention", "set"}, "give --keep-days, --keep-runs or --audit-days")
	e.want(2, []string{"retention", "plan", "--projects", "nope"}, `projects: project "nope" does not exist`)
	e.want(1, []string{"retention", "plan", "-p", "nope"}, `project "nope": not found`)
	e.want(0, []string{"retention", "show", "-p", "p"}, "keep_runs 1; in force: keep_days 30, keep_runs 1")

	// keep_runs 1 and keep_days 30: a run goes only past both, so none
	// yet; with keep_days 0 the project keeps just the newest.
	e.want(0, []string{"retention", "plan", "-p", "p"}, "ended within keep_days")
	e.want(0, []string{"retention", "set", "-p", "p", "--keep-days", "0"}, "keep_days none, keep_runs 1; in force: keep_days none")
	out := e.want(0, []string{"-o", "json", "retention", "plan", "-p", "p"})
	var plan api.RetentionPlan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.Roots, ids[:2]) {
		t.Fatalf("plan roots %v, want %v", plan.Roots, ids[:2])
	}
	e.want(0, []string{"retention", "plan"}, "p runs: 1 2", "would free about", "audit rows (audit_days 90): 0")
	out = e.want(0, []string{"-o", "json", "retention", "purge", "-p", "p"})
	var done api.RetentionPlan
	if err := json.Unmarshal([]byte(out), &done); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(done.Instances, plan.Instances) || done.EventRows != plan.EventRows {
		t.Fatalf("purged %+v, planned %+v", done, plan)
	}
	e.want(1, []string{"instance", "show", "1"}, "not found")
	e.want(0, []string{"retention", "purge"}, "freed about")
	e.want(0, []string{"retention", "set", "-p", "p", "--keep-runs", "default", "--keep-days", "default"}, "keep_days default, keep_runs default")
	e.want(2, []string{"retention", "frob"}, `unknown command "frob"`)
}
