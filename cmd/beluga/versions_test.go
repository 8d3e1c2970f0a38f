package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestVersionCommands: workflow diff and instance diff print the
// structured diff and the text; show names the version and the latest;
// rerun and recover-failed take --latest or --version; a schedule pins a
// version and shows it.
func TestVersionCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	inst := e.etlRun()
	id := itoa(inst.ID)
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl2.yaml", strings.Replace(etl, "echo extract", "echo extract all", 1)+
		"  - {name: report, command: echo report, depends_on: [extract]}\n")})

	e.want(0, []string{"workflow", "diff", "-p", "p", "nightly_etl", "1"}, "p/nightly_etl: v1 -> v2", "+ task report",
		`~ task extract command: "echo extract ${bizdate}" -> "echo extract all ${bizdate}"`, "+ edge extract -> report",
		"--- nightly_etl v1\n+++ nightly_etl v2\n", "+  - name: report")
	e.want(0, []string{"workflow", "diff", "-p", "p", "nightly_etl", "2", "latest"}, "no differences")
	e.want(2, []string{"workflow", "diff", "-p", "p", "nightly_etl", "v1"}, "use a version number or latest")
	e.want(1, []string{"workflow", "diff", "-p", "p", "nightly_etl", "7"}, "not found")
	e.want(0, []string{"instance", "diff", id}, "v1 -> v2", "+ task report")
	e.want(0, []string{"instance", "show", id}, "p/nightly_etl version 1; latest is 2 (beluga instance diff "+id+")")

	if err := e.store.InstanceFinish(ctx, inst.ID, model.WorkflowFailed, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	e.want(2, []string{"instance", "rerun", id, "--latest", "--version", "1"}, "not both")
	e.want(2, []string{"instance", "rerun", id, "--version", "0"}, "version number from 1")
	e.want(2, []string{"instance", "rerun", id, "--version", "5"}, "has no version 5")
	e.want(0, []string{"instance", "rerun", id, "--latest"}, "rerun requested")
	got, err := e.store.ActionClaim(ctx, 10)
	if err != nil || len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("rerun --latest queued %+v %v", got, err)
	}
	e.want(0, []string{"instance", "recover-failed", id, "--version", "2"}, "recover_failed requested")
	if got, _ := e.store.ActionClaim(ctx, 10); len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("recover-failed --version 2 queued %+v", got)
	}

	e.want(2, []string{"schedule", "set", "-p", "p", "nightly_etl", "--cron", "@daily", "--pin-version", "4"}, "has no version 4")
	e.want(0, []string{"schedule", "set", "-p", "p", "nightly_etl", "--cron", "@daily", "--pin-version", "1"})
	e.want(0, []string{"schedule", "show", "-p", "p", "nightly_etl"}, "pinned version", "1")
}
