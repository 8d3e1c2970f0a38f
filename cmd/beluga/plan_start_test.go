package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestStartPlanCommands: --plan on `workflow run --start-node` and
// `backfill start` prints the new runs and keeps the plan; `plan apply`
// starts exactly that run or backfill.
func TestStartPlanCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.etlRun()
	e.want(2, []string{"workflow", "run", "-p", "p", "nightly_etl", "--plan"}, "give --start-node")
	e.want(2, []string{"workflow", "run", "-p", "p", "nightly_etl", "--start-node", "load", "--downstream", "all"}, "--downstream needs --plan")
	e.want(2, []string{"workflow", "run", "-p", "p", "nightly_etl", "--start-node", "load", "--plan", "--wait"}, "drop --wait")
	e.want(2, []string{"workflow", "run", "-p", "p", "nightly_etl", "--start-node", "load", "--plan", "--downstream", "most"}, "none, direct or all")
	e.want(0, []string{"workflow", "run", "-p", "p", "nightly_etl", "--start-node", "load", "--scope", "downstream", "--plan"},
		"rerun_from of p/nightly_etl version 1 from load", "-1 ", "apply: beluga plan apply ")
	var rf api.Plan
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "workflow", "run", "-p", "p", "nightly_etl", "--start-node", "load", "--plan"})), &rf); err != nil ||
		rf.Action != "rerun_from" || len(rf.Instances) != 1 || len(rf.Instances[0].Tasks) != 1 || rf.Instances[0].Tasks[0].Name != "load" {
		t.Fatalf("json plan %+v %v", rf, err)
	}
	e.want(0, []string{"plan", "apply", itoa(rf.ID)}, "plan "+itoa(rf.ID)+" applied", "submitted")

	e.want(2, []string{"backfill", "start", "-p", "p", "nightly_etl", "--from", "2026-11-01", "--to", "2026-11-03", "--cron", "@daily", "--downstream", "all"}, "--downstream needs --plan")
	var bf api.Plan
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "backfill", "start", "-p", "p", "nightly_etl", "--from", "2026-11-01", "--to", "2026-11-03",
		"--cron", "@daily", "--parallelism", "2", "--plan"})), &bf); err != nil || bf.Action != "backfill" || len(bf.Instances) != 3 || bf.Instances[2].ScheduleTime == nil {
		t.Fatalf("backfill plan %+v %v", bf, err)
	}
	e.want(0, []string{"plan", "show", itoa(bf.ID)}, "backfill of p/nightly_etl version 1, 3 time(s) 2026-11-01T00:00:00Z to 2026-11-03T00:00:00Z, 2 at a time",
		"2026-11-02T00:00:00Z", "waits:", "instance -3: run -1 of this plan (2 at a time)")
	e.want(0, []string{"plan", "apply", itoa(bf.ID)}, "backfill ")
	bs, err := e.store.BackfillList(context.Background(), store.BackfillFilter{})
	if err != nil || len(bs) != 1 || bs[0].Total != 3 || bs[0].Parallelism != 2 {
		t.Fatalf("backfills %+v %v", bs, err)
	}
	e.want(1, []string{"plan", "apply", itoa(bf.ID)}, "was applied")

	// The README's commands, as written there.
	e.want(0, []string{"project", "create", "demo"})
	e.want(0, []string{"workflow", "apply", "-p", "demo", "-f", e.file("daily.yaml", "name: daily\ntasks:\n  - {name: a, command: \"true\"}\n  - {name: b, command: \"true\", depends_on: [a]}\n")})
	e.want(0, strings.Fields("workflow run -p demo daily --start-node b --scope downstream --plan --downstream all"), "rerun_from of demo/daily version 1 from b")
	e.want(0, strings.Fields("backfill start -p demo daily --from 2026-11-01 --to 2026-11-05 --cron @daily --plan --downstream direct"),
		"backfill of demo/daily version 1, 5 time(s) 2026-11-01T00:00:00Z to 2026-11-05T00:00:00Z, 1 at a time")
}
