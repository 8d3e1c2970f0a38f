package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// A fire written ahead of its second (ScheduleFire.NotBefore) is not
// claimed before it, is claimed after it, and a pause, an edit, a delete
// of its schedule or of its workflow before it takes the run back in the
// same transaction: no run is left, and the fire time is free to fire
// again (the last fire time goes back).
func TestFireAheadClaimAndCancel(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		if err := s.TermBegin(ctx, 2, "m1"); err != nil {
			t.Fatal(err)
		}
		// The due time is real time ahead: the cancel and the claim
		// compare with the clock.
		due := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
		next := due.Add(24 * time.Hour)
		earlier := due.Add(-24 * time.Hour)
		names := []string{"paused", "edited", "deleted", "wfdeleted", "kept", "due"}
		fires := map[string]store.ScheduleFire{}
		var earlierRun int64
		for _, name := range names {
			if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, "name: "+name+"\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
				t.Fatal(err)
			}
			at := due
			if name == "due" { // written ahead of a second already past
				at = time.Now().UTC().Add(-time.Second).Truncate(time.Second)
			}
			sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: name, Cron: "0 0 * * *", Enabled: true, NextFireTime: &at}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if name == "kept" { // it fired before: its last fire time comes back
				res, err := s.Term(2).ScheduleFireBatch(ctx, []store.ScheduleFire{{Schedule: sc, Firing: store.Firing{Times: []time.Time{earlier}, Next: &at}}})
				if err != nil || res[0].Err != nil || len(res[0].Runs) != 1 {
					t.Fatalf("earlier fire: %v %+v", err, res)
				}
				earlierRun = res[0].Runs[0].ID
				if sc, err = s.ScheduleGet(ctx, "demo", name); err != nil {
					t.Fatal(err)
				}
			}
			fires[name] = store.ScheduleFire{Schedule: sc, Firing: store.Firing{Times: []time.Time{at}, Next: &next}, NotBefore: at}
		}
		var batch []store.ScheduleFire
		for _, name := range names {
			batch = append(batch, fires[name])
		}
		res, err := s.Term(2).ScheduleFireBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		runOf := map[string]int64{}
		for i, r := range res {
			if r.Err != nil || len(r.Runs) != 1 {
				t.Fatalf("%s: %+v", names[i], r)
			}
			runOf[names[i]] = r.Runs[0].ID
		}
		// Only the one whose second has passed is claimable; the claim of a
		// burst's runs and the one of a person's runs alike.
		if got, err := s.Term(2).InstanceClaimManualCommands(ctx, "m1", 2, 100); err != nil || len(got) != 0 {
			t.Fatalf("manual claim took %d runs fired by a schedule (%v)", len(got), err)
		}
		got, err := s.Term(2).InstanceClaimCommands(ctx, "m1", 2, 100)
		if err != nil || len(got) != 2 || got[0].ID != earlierRun || got[1].ID != runOf["due"] {
			t.Fatalf("claim before the second: %+v %v, want only runs %d and %d", got, err, earlierRun, runOf["due"])
		}

		// Pause one, edit one's params, delete one schedule and one workflow.
		sc, _ := s.ScheduleGet(ctx, "demo", "paused")
		sc.Enabled = false
		if _, _, err := s.SchedulePut(ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
		sc, _ = s.ScheduleGet(ctx, "demo", "edited")
		sc.Params = map[string]string{"x": "1"}
		sc.NextFireTime = &due // the same second, as edited
		if _, _, err := s.SchedulePut(ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.ScheduleDelete(ctx, "demo", "deleted"); err != nil {
			t.Fatal(err)
		}
		if err := s.WorkflowDelete(ctx, "demo", "wfdeleted"); err != nil {
			t.Fatalf("delete a workflow whose only run was fired ahead: %v", err)
		}
		sc, _ = s.ScheduleGet(ctx, "demo", "kept")
		sc.Enabled = false
		if _, _, err := s.SchedulePut(ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"paused", "edited", "deleted", "wfdeleted", "kept"} {
			if _, err := s.InstanceGet(ctx, runOf[name]); err == nil {
				t.Errorf("%s: run %d fired ahead is still there after the change", name, runOf[name])
			}
			list, _, err := s.InstanceList(ctx, store.InstanceFilter{Project: "demo", Workflow: name})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range list {
				if r.ScheduleTime != nil && r.ScheduleTime.Equal(due) {
					t.Errorf("%s: a run at %v is left", name, due)
				}
			}
		}
		// Watchers saw each of them submitted; each ends for them stopped.
		evs := allEvents(t, s, s.Term(2))
		last := map[int64]string{}
		for _, e := range evs {
			if e.Kind == model.EventInstance {
				last[e.InstanceID] = e.State
			}
		}
		for _, name := range []string{"paused", "edited", "deleted", "wfdeleted", "kept"} {
			if got := last[runOf[name]]; got != string(model.WorkflowStopped) {
				t.Errorf("%s: the last event of run %d taken back says %q, want stopped", name, runOf[name], got)
			}
		}
		for name, want := range map[string]*time.Time{"paused": nil, "edited": nil, "kept": &earlier} {
			sc, err := s.ScheduleGet(ctx, "demo", name)
			if err != nil {
				t.Fatal(err)
			}
			if (want == nil) != (sc.LastFireTime == nil) || (want != nil && !want.Equal(*sc.LastFireTime)) {
				t.Errorf("%s: last fire time %v, want %v", name, sc.LastFireTime, want)
			}
		}
		// The edited schedule fires its second again, as edited; the claim
		// still takes nothing before it.
		sc, _ = s.ScheduleGet(ctx, "demo", "edited")
		res, err = s.Term(2).ScheduleFireBatch(ctx, []store.ScheduleFire{{Schedule: sc, Firing: store.Firing{Times: []time.Time{due}, Next: &next}, NotBefore: due}})
		if err != nil || res[0].Err != nil || len(res[0].Runs) != 1 {
			t.Fatalf("fire the edited schedule again: %v %+v", err, res)
		}
		if got, err := s.Term(2).InstanceClaimCommands(ctx, "m1", 2, 100); err != nil || len(got) != 0 {
			t.Fatalf("claim before the second: %d runs (%v)", len(got), err)
		}
		if _, err := s.InstanceGet(ctx, earlierRun); err != nil {
			t.Fatalf("the run of an earlier second went with the cancel: %v", err)
		}
		// A policy that decides at the second cannot be written ahead.
		if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, "name: skip\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
			t.Fatal(err)
		}
		sk, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "skip", Cron: "0 0 * * *", Enabled: true, NextFireTime: &due, Overlap: model.OverlapSkip}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Term(2).ScheduleFireBatch(ctx, []store.ScheduleFire{{Schedule: sk, Firing: store.Firing{Times: []time.Time{due}, Next: &next}, NotBefore: due}}); err == nil {
			t.Fatal("overlap skip fired ahead of its second")
		}
		if list, _, _ := s.InstanceList(ctx, store.InstanceFilter{Project: "demo", Workflow: "skip"}); len(list) != 0 {
			t.Fatalf("refused fire wrote %d runs", len(list))
		}
	})
}

// allEvents publishes every outbox row with term (as the leader's
// publisher would) and returns the public event list.
func allEvents(t *testing.T, s *store.Store, term interface {
	EventPublishFrom(context.Context, *store.EventCursor, int) ([]model.Event, error)
}) []model.Event {
	t.Helper()
	ctx := context.Background()
	var cur store.EventCursor
	for {
		evs, err := term.EventPublishFrom(ctx, &cur, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
	}
	evs, err := s.EventList(ctx, 0, model.EventFilter{}, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
