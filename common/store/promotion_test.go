package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestPromotionReviewAndDrift: a request carries the source version's
// spec and the target's base; a rejection closes it; an approval applies
// it as a target version by the reviewer, pins the gated target's schedule
// to it and clears drift; a direct edit of a promoted gated workflow is
// drift, recorded (and its event appended) once; a target moved since the
// request refuses the approval.
func TestPromotionReviewAndDrift(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, p := range []string{"dev", "prod"} {
			if _, err := s.ProjectCreate(ctx, p, ""); err != nil {
				t.Fatal(err)
			}
		}
		if g, err := s.PromotionGateGet(ctx, "prod"); err != nil || g.RequireReview || g.SourceProject != "" {
			t.Fatalf("a project never set: %+v %v", g, err)
		}
		if _, err := s.PromotionGatePut(ctx, model.PromotionGate{Project: "prod", SourceProject: "prod"}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a project promoting into itself: %v", err)
		}
		if _, err := s.PromotionGatePut(ctx, model.PromotionGate{Project: "prod", SourceProject: "nope"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown source: %v", err)
		}
		// prod runs v1, applied directly, on a schedule.
		if _, _, err := s.WorkflowPutAs(ctx, "prod", "olga", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
		if _, _, err := s.SchedulePut(ctx, model.Schedule{Project: "prod", Workflow: "diamond", Cron: "@hourly", Enabled: true, NextFireTime: &t0}, nil); err != nil {
			t.Fatal(err)
		}
		g, err := s.PromotionGatePut(ctx, model.PromotionGate{Project: "prod", SourceProject: "dev", RequireReview: true,
			AlertChannels: []string{"ops"}, UpdatedBy: "olga"})
		if err != nil || !g.RequireReview || g.SourceProject != "dev" || len(g.AlertChannels) != 1 {
			t.Fatalf("gate: %+v %v", g, err)
		}
		if got, _ := s.PromotionGateGet(ctx, "prod"); !got.RequireReview || got.UpdatedBy != "olga" || got.AlertChannels[0] != "ops" {
			t.Fatalf("gate read back: %+v", got)
		}
		// A second put replaces the first.
		if _, err := s.PromotionGatePut(ctx, model.PromotionGate{Project: "prod", SourceProject: "dev", RequireReview: true,
			AlertChannels: []string{"ops", "mail"}, UpdatedBy: "ben"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.PromotionGateGet(ctx, "prod"); got.UpdatedBy != "ben" || len(got.AlertChannels) != 2 {
			t.Fatalf("gate replaced: %+v", got)
		}
		// Gating pins the schedule to the baseline: the latest version.
		if sc, _ := s.ScheduleGet(ctx, "prod", "diamond"); sc.PinVersion != 1 {
			t.Fatalf("gating pinned the schedule to %d, want 1", sc.PinVersion)
		}
		if pin, err := s.PromotionPin(ctx, "prod", "diamond"); err != nil || pin != 1 {
			t.Fatalf("pin before any promotion: %d %v", pin, err)
		}
		if pin, err := s.PromotionPin(ctx, "dev", "diamond"); err != nil || pin != 0 {
			t.Fatalf("an ungated project pins nothing: %d %v", pin, err)
		}
		// dev has v1 and v2 (with a secret param).
		if _, _, err := s.WorkflowPutAs(ctx, "dev", "ann", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
		dv2, _, err := s.WorkflowPutAs(ctx, "dev", "ann", mustSpec(t, diamondV2))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ChangeRequestCreate(ctx, "dev", "diamond", 7, "prod", "ann", ""); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a version the source lacks: %v", err)
		}
		if _, err := s.ChangeRequestCreate(ctx, "dev", "diamond", 0, "dev", "ann", ""); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("into its own project: %v", err)
		}
		r1, err := s.ChangeRequestCreate(ctx, "dev", "diamond", 0, "prod", "ann", "add e")
		if err != nil || r1.State != model.RequestOpen || r1.SourceVersion != 2 || r1.BaseVersion != 1 || r1.SourceHash != dv2.SpecHash ||
			r1.Message != "add e" || r1.Author != "ann" || len(r1.SpecJSON) == 0 {
			t.Fatalf("request: %+v %v", r1, err)
		}
		if _, err := s.ChangeRequestReject(ctx, "dev", r1.ID, "rob", ""); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a request read through another project: %v", err)
		}
		rej, err := s.ChangeRequestReject(ctx, "prod", r1.ID, "rob", "not yet")
		if err != nil || rej.State != model.RequestRejected || rej.Reviewer != "rob" || rej.ReviewComment != "not yet" || rej.ReviewedAt == nil {
			t.Fatalf("reject: %+v %v", rej, err)
		}
		if _, err := s.ChangeRequestApply(ctx, "prod", r1.ID, "rob", "", mustSpec(t, diamondV2)); !errors.Is(err, store.ErrRequestClosed) {
			t.Fatalf("approve a rejected request: %v", err)
		}
		r2, err := s.ChangeRequestCreate(ctx, "dev", "diamond", 2, "prod", "ann", "again")
		if err != nil {
			t.Fatal(err)
		}
		wf, err := spec.Parse(r2.SpecJSON)
		if err != nil {
			t.Fatal(err)
		}
		ap, err := s.ChangeRequestApply(ctx, "prod", r2.ID, "rob", "ok", wf)
		if err != nil || ap.State != model.RequestApplied || ap.AppliedVersion != 2 || ap.Reviewer != "rob" {
			t.Fatalf("approve: %+v %v", ap, err)
		}
		if got, err := s.ChangeRequestGet(ctx, "prod", r2.ID); err != nil || got.State != model.RequestApplied || got.AppliedVersion != 2 {
			t.Fatalf("read back: %+v %v", got, err)
		}
		v2, err := s.WorkflowGet(ctx, "prod", "diamond", 2)
		if err != nil || v2.SpecHash != dv2.SpecHash {
			t.Fatalf("the applied target version: %+v %v", v2, err)
		}
		if sc, _ := s.ScheduleGet(ctx, "prod", "diamond"); sc.PinVersion != 2 {
			t.Fatalf("approval pinned the schedule to %d, want 2", sc.PinVersion)
		}
		list, err := s.ChangeRequestList(ctx, "prod", "", 0)
		if err != nil || len(list) != 2 || list[0].ID != r2.ID || list[1].ID != r1.ID || len(list[0].SpecJSON) != 0 {
			t.Fatalf("list: %+v %v", list, err)
		}
		if open, err := s.ChangeRequestList(ctx, "prod", model.RequestOpen, 10); err != nil || len(open) != 0 {
			t.Fatalf("open: %+v %v", open, err)
		}
		// A direct edit is drift, once; the schedule keeps the promoted version.
		if d, err := s.DriftList(ctx, "prod", ""); err != nil || len(d) != 0 {
			t.Fatalf("drift before an edit: %+v %v", d, err)
		}
		if _, _, err := s.WorkflowPutAs(ctx, "prod", "olga", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.WorkflowPutAs(ctx, "prod", "olga", mustSpec(t, diamondV2)); err != nil {
			t.Fatal(err)
		}
		d, err := s.DriftList(ctx, "prod", "diamond")
		if err != nil || len(d) != 1 || d[0].SinceVersion != 3 || d[0].PromotedVersion != 2 || d[0].EditedBy != "olga" {
			t.Fatalf("drift: %+v %v", d, err)
		}
		if sc, _ := s.ScheduleGet(ctx, "prod", "diamond"); sc.PinVersion != 2 {
			t.Fatalf("a direct edit moved the pin to %d", sc.PinVersion)
		}
		if err := s.TermBegin(ctx, 1, "m1"); err != nil {
			t.Fatal(err)
		}
		var cur store.EventCursor
		published, err := s.Term(1).EventPublishFrom(ctx, &cur, 100)
		if err != nil {
			t.Fatal(err)
		}
		var drifts []model.Event
		for _, e := range published {
			if e.Kind == model.EventPromotion {
				drifts = append(drifts, e)
			}
		}
		if len(drifts) != 1 || drifts[0].State != "drift" || drifts[0].Project != "prod" || drifts[0].Workflow != "diamond" {
			t.Fatalf("drift events: %+v", drifts)
		}
		// A request made before the edits is stale.
		r3, err := s.ChangeRequestCreate(ctx, "dev", "diamond", 1, "prod", "ann", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.WorkflowPutAs(ctx, "prod", "olga", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ChangeRequestApply(ctx, "prod", r3.ID, "rob", "", mustSpec(t, diamond)); !errors.Is(err, store.ErrTargetMoved) {
			t.Fatalf("approve a stale request: %v", err)
		}
		if got, _ := s.ChangeRequestGet(ctx, "prod", r3.ID); got.State != model.RequestOpen {
			t.Fatalf("a refused approval changed the request: %+v", got)
		}
		// A fresh one applies and clears the drift.
		r4, err := s.ChangeRequestCreate(ctx, "dev", "diamond", 1, "prod", "ann", "")
		if err != nil {
			t.Fatal(err)
		}
		ap, err = s.ChangeRequestApply(ctx, "prod", r4.ID, "rob", "", mustSpec(t, diamond))
		if err != nil || ap.AppliedVersion != 6 {
			t.Fatalf("approve after drift: %+v %v", ap, err)
		}
		if d, _ := s.DriftList(ctx, "prod", ""); len(d) != 0 {
			t.Fatalf("drift after a promotion: %+v", d)
		}
		if pin, _ := s.PromotionPin(ctx, "prod", "diamond"); pin != 6 {
			t.Fatalf("pin after the promotion: %d", pin)
		}
		// Deleted and made again, the workflow is not pinned to a version
		// number of its past life: its baseline is its latest again.
		if _, _, err := s.WorkflowPutAs(ctx, "prod", "olga", mustSpec(t, diamondV2)); err != nil {
			t.Fatal(err)
		}
		if err := s.WorkflowDelete(ctx, "prod", "diamond"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.WorkflowPutAs(ctx, "prod", "olga", mustSpec(t, diamond)); err != nil {
			t.Fatal(err)
		}
		if pin, _ := s.PromotionPin(ctx, "prod", "diamond"); pin != 1 {
			t.Fatalf("pin after a delete and a new apply: %d, want 1", pin)
		}
		if d, _ := s.DriftList(ctx, "prod", ""); len(d) != 0 {
			t.Fatalf("drift of a deleted workflow: %+v", d)
		}
		if got, _ := s.ChangeRequestGet(ctx, "prod", r4.ID); got.State != model.RequestApplied || got.AppliedVersion != 0 {
			t.Fatalf("a request whose version was deleted: %+v", got)
		}
	})
}
