package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestAdmissionState: the leader's admission row is its term's (a new
// term's readers see "admitting" until it says otherwise), and a stale
// term cannot write it.
func TestAdmissionState(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if a, err := s.AdmissionCurrent(ctx); err != nil || a.Reason != "" {
			t.Fatalf("fresh: %+v %v", a, err)
		}
		if err := s.TermBegin(ctx, 1, "m1"); err != nil {
			t.Fatal(err)
		}
		old := s.Term(1)
		if err := old.AdmissionPut(ctx, "waiting: master at 2 running instances (admission.max_running_instances)"); err != nil {
			t.Fatal(err)
		}
		if a, err := s.AdmissionCurrent(ctx); err != nil || a.Reason == "" || a.Since == nil {
			t.Fatalf("held: %+v %v", a, err)
		}
		if err := s.TermBegin(ctx, 2, "m2"); err != nil {
			t.Fatal(err)
		}
		if a, err := s.AdmissionCurrent(ctx); err != nil || a.Reason != "" {
			t.Fatalf("an earlier term's state shown: %+v %v", a, err)
		}
		if err := old.AdmissionPut(ctx, "waiting: stale"); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("a stale term wrote its admission: %v", err)
		}
	})
}

// TestEventBacklog counts the unpublished outbox rows, up to the bound.
func TestEventBacklog(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		newInstance(t, s, model.WorkflowSubmitted)
		if err := s.TermBegin(ctx, 1, "m1"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(1)
		cur, err := term.EventCursorNew(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := term.EventPublishFrom(ctx, &cur, 1000); err != nil {
			t.Fatal(err)
		}
		if n, err := term.EventBacklog(ctx, cur.ID, 100); err != nil || n != 0 {
			t.Fatalf("after publishing: %d %v", n, err)
		}
		for range 3 {
			newInstance(t, s, model.WorkflowSubmitted) // an event each
		}
		if n, err := term.EventBacklog(ctx, cur.ID, 100); err != nil || n != 3 {
			t.Fatalf("three runs written: backlog %d %v", n, err)
		}
		if n, err := term.EventBacklog(ctx, cur.ID, 2); err != nil || n != 2 {
			t.Fatalf("counted up to 2: %d %v", n, err)
		}
		if _, err := term.EventPublishFrom(ctx, &cur, 1000); err != nil {
			t.Fatal(err)
		}
		if n, err := term.EventBacklog(ctx, cur.ID, 100); err != nil || n != 0 {
			t.Fatalf("published again: %d %v", n, err)
		}
	})
}

// TestWaitingRunsAndChildClaims: the runs asked for get the admission's
// reason once (a queued run keeps its own), a claim clears it, and the
// child claim takes sub_workflow runs only; a release takes at most its
// room.
func TestWaitingRunsAndChildClaims(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		parent := newInstance(t, s, model.WorkflowRunning)
		task := addTask(t, s, parent.ID, "child", model.TaskSubmitted, "")
		plain := newInstance(t, s, model.WorkflowSubmitted)
		cs, err := s.InstanceStartChild(ctx, store.ChildRequest{ParentInstanceID: parent.ID, ParentTaskID: task.ID,
			Project: "demo", Workflow: "diamond", AsOf: time.Now()})
		if err != nil || !cs.Created {
			t.Fatalf("child: %+v %v", cs, err)
		}
		if err := s.TermBegin(ctx, 1, "m1"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(1)
		const why = "waiting: master at 1 running instances (admission.max_running_instances)"
		if n, err := term.InstanceNoteWaiting(ctx, why); err != nil || n != 2 {
			t.Fatalf("noted %d runs (%v), want 2", n, err)
		}
		if n, err := term.InstanceNoteWaiting(ctx, why); err != nil || n != 0 {
			t.Fatalf("noted again: %d %v", n, err)
		}
		got, err := term.InstanceClaimChildCommands(ctx, "m1", 1, 10)
		if err != nil || len(got) != 1 || got[0].ID != cs.Child.ID || got[0].Reason != "" {
			t.Fatalf("child claim: %+v %v", got, err)
		}
		if in, _ := s.InstanceGet(ctx, plain.ID); in.State != model.WorkflowSubmitted || in.Reason != why {
			t.Fatalf("the other run: %+v", in)
		}
		got, err = term.InstanceClaimCommands(ctx, "m1", 1, 10)
		if err != nil || len(got) != 1 || got[0].ID != plain.ID || got[0].Reason != "" {
			t.Fatalf("claim: %+v %v", got, err)
		}
	})
}
