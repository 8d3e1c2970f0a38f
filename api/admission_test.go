package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestAdmissionSaysSaturated: while the leader's recorded admission state
// holds new runs, /healthz says saturated with the reason (still 200) and
// a run asked for is stored and answered 201 with the reason, not refused;
// once the leader admits again both say so. An earlier term's state is not
// shown.
func TestAdmissionSaysSaturated(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	health := func() Health {
		var h Health
		b.get("/healthz").want(t, http.StatusOK).json(t, &h)
		return h
	}
	if h := health(); h.Admission == nil || h.Admission.Saturated {
		t.Fatalf("fresh: %+v", h.Admission)
	}
	ctx := context.Background()
	if err := b.store.TermBegin(ctx, 1, "m1:1"); err != nil {
		t.Fatal(err)
	}
	const why = "waiting: master at 20 running instances (admission.max_running_instances)"
	if err := b.store.Term(1).AdmissionPut(ctx, why); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 10*time.Second, "healthz says saturated", func() bool {
		a := health().Admission
		return a.Saturated && a.Reason == why && a.Since != nil
	})
	if inst := b.mustRun("p", ""); inst.State != "submitted" || inst.Reason != why {
		t.Fatalf("run asked for while saturated: %+v", inst)
	}
	if err := b.store.TermBegin(ctx, 2, "m2:1"); err != nil { // a new leader, which has said nothing yet
		t.Fatal(err)
	}
	wait.Until(t, 10*time.Second, "healthz says admitting", func() bool { return !health().Admission.Saturated })
	if inst := b.mustRun("p", ""); inst.Reason != "" {
		t.Fatalf("run asked for while admitting: %+v", inst)
	}
}
