package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestSettingCommands: list shows the admission limits and whether the
// leader admits; set changes one; bad input is exit 2 naming the problem
// and changes nothing; a leader holding runs shows as saturated.
func TestSettingCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"setting", "list"}, "admission.max_running_instances  20000")
	e.want(0, []string{"setting", "list"}, "admission: admitting new runs")
	e.want(0, []string{"setting", "set", "admission.max_running_instances", "50"}, "admission.max_running_instances = 50")
	e.want(2, []string{"setting", "set", "admission.claim_batch", "lots"}, `VALUE must be a whole number, got "lots"`)
	e.want(2, []string{"setting", "set", "admission.claim_batch", "0"}, "admission.claim_batch must be an integer from 1 to 10000")
	e.want(1, []string{"setting", "set", "admission.nope", "3"}, `setting "admission.nope": no such setting`)
	e.want(0, []string{"setting", "list"}, "admission.claim_batch            64")
	e.want(0, []string{"setting", "list"}, "admission.max_running_instances  50")

	ctx := context.Background()
	if err := e.store.TermBegin(ctx, 1, "m1:5678"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Term(1).AdmissionPut(ctx, "waiting: master at 50 running instances (admission.max_running_instances)"); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 10*time.Second, "list says saturated", func() bool { // the API reads the state at most a second apart
		code, out, _ := e.cli("setting", "list")
		return code == 0 && strings.Contains(out, "admission: saturated since ") && strings.Contains(out, "(admission.max_running_instances)")
	})
}
