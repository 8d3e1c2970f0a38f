package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// The ledger over REST: listed and filtered by a viewer, missed fires
// previewed and compensated once by an operator; outsiders, users without
// a grant and viewers are refused.
func TestScheduleFiresAPI(t *testing.T) {
	b := setup(t, options{})
	ctx := context.Background()
	b.mustWorkflow("p")
	var sc Schedule
	b.send("PUT", schedPath, `{"cron":"0 * * * *"}`).want(t, http.StatusCreated).json(t, &sc)
	cur, err := b.store.ScheduleGet(ctx, "p", "nightly_etl")
	if err != nil {
		t.Fatal(err)
	}
	// A master fired 12:00 after missing 10:00 and 11:00.
	m1, m2, t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	next := t0.Add(time.Hour)
	if err := b.store.TermBegin(ctx, 1, "m1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Term(1).ScheduleFireOne(ctx, cur, store.Firing{Times: []time.Time{t0}, Next: &next, Missed: []time.Time{m1, m2}}); err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/projects/p/schedules/" + itoa(cur.ID) + "/fires"

	var page FireList
	b.get(base+"?limit=2").want(t, http.StatusOK).json(t, &page)
	if len(page.Items) != 2 || page.NextCursor == "" || page.Items[0].Outcome != "missed" || !page.Items[0].DueTime.Equal(m1) {
		t.Fatalf("page 1: %+v", page)
	}
	cursor := page.NextCursor
	page = FireList{}
	b.get(base+"?limit=2&cursor="+cursor).want(t, http.StatusOK).json(t, &page)
	if len(page.Items) != 1 || page.NextCursor != "" || page.Items[0].Outcome != "fired" || page.Items[0].InstanceID == nil {
		t.Fatalf("page 2: %+v", page)
	}
	b.get(base+"?outcome=missed&from=2026-12-01T10:30:00Z").want(t, http.StatusOK).json(t, &page)
	if len(page.Items) != 1 || !page.Items[0].DueTime.Equal(m2) {
		t.Fatalf("missed from 10:30: %+v", page)
	}
	page = FireList{}
	b.get(base+"?order=desc&limit=1").want(t, http.StatusOK).json(t, &page)
	if len(page.Items) != 1 || !page.Items[0].DueTime.Equal(t0) || page.NextCursor == "" {
		t.Fatalf("newest first: %+v", page)
	}
	for _, q := range []string{"?order=up", "?outcome=lost", "?from=yesterday", "?limit=0", "?cursor=%21"} {
		if e := b.get(base+q).wantError(t, http.StatusBadRequest, CodeBadRequest); e.Message == "" {
			t.Fatalf("%s: %+v", q, e)
		}
	}
	b.get("/api/v1/projects/p/schedules/999/fires").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/projects/p/schedules/x/fires").wantError(t, http.StatusBadRequest, CodeBadRequest)

	// Who may: a viewer reads, an operator compensates.
	op, viewer, none := b.tokenOf("op", model.RoleUser), b.tokenOf("vi", model.RoleUser), b.tokenOf("no", model.RoleUser)
	b.send("PUT", "/api/v1/projects/p/grants/op", `{"level":"operate"}`).want(t, http.StatusOK)
	b.send("PUT", "/api/v1/projects/p/grants/vi", `{"level":"view"}`).want(t, http.StatusOK)
	b.as("", "GET", base, "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	b.as(none, "GET", base, "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(none, "POST", base+"/compensate", `{"all_missed":true}`).wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(viewer, "GET", base, "").want(t, http.StatusOK)
	b.as(viewer, "POST", base+"/compensate", `{"all_missed":true}`).wantError(t, http.StatusForbidden, CodeForbidden)

	// Bad bodies change nothing.
	for _, body := range []string{`{}`, `{"all_missed":true,"fires":["2026-12-01T10:00:00Z"]}`, `{"fires":["noon"]}`,
		`{"fires":["2026-12-01T12:00:00Z"]}`, `{"all_missed":true,"extra":1}`} {
		b.as(op, "POST", base+"/compensate", body).wantError(t, http.StatusBadRequest, CodeBadRequest)
	}
	var res CompensateResult
	b.as(op, "POST", base+"/compensate", `{"all_missed":true,"dry_run":true}`).want(t, http.StatusOK).json(t, &res)
	if !res.DryRun || len(res.Runs) != 2 || res.Runs[1].InstanceID != 0 || !res.Runs[1].DueTime.Equal(m2) {
		t.Fatalf("preview: %+v", res)
	}
	b.as(op, "POST", base+"/compensate", `{"fires":["2026-12-01T10:00:00Z"]}`).want(t, http.StatusOK).json(t, &res)
	if res.DryRun || len(res.Runs) != 1 || res.Runs[0].InstanceID == 0 {
		t.Fatalf("compensate 10:00: %+v", res)
	}
	var inst InstanceDetail
	b.get("/api/v1/instances/"+itoa(res.Runs[0].InstanceID)).want(t, http.StatusOK).json(t, &inst)
	if inst.ScheduleTime == nil || !inst.ScheduleTime.Equal(m1) {
		t.Fatalf("compensated run: %+v", inst.Instance)
	}
	if e := b.as(op, "POST", base+"/compensate", `{"fires":["2026-12-01T10:00:00Z"]}`).wantError(t, http.StatusBadRequest, CodeBadRequest); !strings.Contains(e.Message, "no missed fire") {
		t.Fatalf("twice: %+v", e)
	}
	b.as(op, "POST", base+"/compensate", `{"all_missed":true}`).want(t, http.StatusOK).json(t, &res)
	if len(res.Runs) != 1 || !res.Runs[0].DueTime.Equal(m2) {
		t.Fatalf("all missed: %+v", res)
	}
	b.get(base+"?outcome=compensated").want(t, http.StatusOK).json(t, &page)
	if len(page.Items) != 2 || page.Items[0].InstanceID == nil {
		t.Fatalf("compensated rows: %+v", page)
	}
}
