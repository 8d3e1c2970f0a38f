package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/model"
)

func TestPlanCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	inst := e.etlRun()
	id := itoa(inst.ID)
	if _, err := e.store.InstanceClaimCommands(ctx, "m1:1", 1, 10); err != nil {
		t.Fatal(err)
	}
	// Running: a blocking conflict, shown, never applied.
	e.want(0, []string{"instance", "rerun", id, "--plan"}, "INSTANCE", "nightly_etl", "[BLOCKING] instance "+id+" (p/nightly_etl) is running",
		"blocked: a blocking conflict")
	if err := e.store.InstanceFinish(ctx, inst.ID, model.WorkflowFailed, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	e.want(2, []string{"instance", "rerun", id, "--downstream", "all"}, "--downstream needs --plan")
	e.want(2, []string{"instance", "rerun", id, "--plan", "--latest"}, "--plan runs the instance's own version: drop --latest")
	e.want(2, []string{"instance", "rerun", id, "--plan", "--downstream", "most"}, "none, direct or all")
	var p api.Plan
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "instance", "recover-failed", id, "--plan", "--downstream", "direct"})), &p); err != nil ||
		p.Action != "recover_failed" || p.Downstream != "direct" || len(p.Instances) != 1 || p.Blocked {
		t.Fatalf("json plan %+v %v", p, err)
	}
	e.want(0, []string{"instance", "rerun", id, "--plan"}, "rerun of instance "+id, "estimate: ", "apply: beluga plan apply ")
	var rerun api.Plan
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "plan", "show", itoa(p.ID + 1)})), &rerun); err != nil || rerun.Action != "rerun" || len(rerun.Instances[0].Tasks) != 2 {
		t.Fatalf("plan show %+v %v", rerun, err)
	}
	e.want(0, []string{"plan", "apply", itoa(rerun.ID)}, "plan "+itoa(rerun.ID)+" applied: 1 instance(s) requested (commands ")
	e.want(1, []string{"plan", "apply", itoa(rerun.ID)}, "was applied")
	// The recover_failed plan saw the world before the rerun was asked.
	e.want(1, []string{"plan", "apply", itoa(p.ID)}, "the world changed since plan", "waiting commands")
	e.want(1, []string{"plan", "show", "999"}, "plan 999: not found")
	e.want(2, []string{"plan", "apply", "x"}, "positive number")
}
