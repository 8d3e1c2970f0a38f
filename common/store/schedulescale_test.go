package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// seedSchedules applies n workflows w000.. to project p, each on a daily
// schedule whose next fire time is due (past) for the first due of them
// and an hour apart in the future for the rest.
func seedSchedules(t *testing.T, s *store.Store, p string, n, due int, now time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.ProjectCreate(ctx, p, ""); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("w%03d", i)
		if _, _, err := s.WorkflowPut(ctx, p, mustSpec(t, "name: "+name+"\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
			t.Fatal(err)
		}
		next := now.Add(time.Duration(i-due+1) * time.Hour)
		if _, _, err := s.SchedulePut(ctx, model.Schedule{Project: p, Workflow: name, Cron: "@daily", Enabled: true, NextFireTime: &next}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDueSchedulesReadOnlyWhatIsDue: the scheduler's reads (what is due,
// the next fire time) return the due rows and one, whatever the number of
// schedules; a read of due schedules goes on from its key without a
// repeat or a gap.
func TestDueSchedulesReadOnlyWhatIsDue(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		seedSchedules(t, s, "p", 120, 3, now)
		ctx, reads := store.CountReads(context.Background())
		due, err := s.ScheduleDue(ctx, now, store.ScheduleKey{}, 1000)
		if err != nil || len(due) != 3 || reads.Rows.Load() != 3 {
			t.Fatalf("due: %d schedules, %d rows read, %v; want 3 and 3", len(due), reads.Rows.Load(), err)
		}
		first, err := s.ScheduleDue(ctx, now, store.ScheduleKey{}, 2)
		if err != nil || len(first) != 2 {
			t.Fatalf("first page of due: %v %v", first, err)
		}
		rest, err := s.ScheduleDue(ctx, now, store.ScheduleKey{At: *first[1].NextFireTime, ID: first[1].ID}, 2)
		if err != nil || len(rest) != 1 || rest[0].ID != due[2].ID {
			t.Fatalf("second page of due: %v %v; want %d", rest, err, due[2].ID)
		}
		ctx, reads = store.CountReads(context.Background())
		at, ok, err := s.ScheduleNextFire(ctx, now)
		if err != nil || !ok || !at.Equal(now.Add(time.Hour)) || reads.Rows.Load() != 1 {
			t.Fatalf("next fire: %v %v %v, %d rows read; want %v from 1", at, ok, err, reads.Rows.Load(), now.Add(time.Hour))
		}
		// Paused, it is not armed.
		sc := due[0]
		sc.Enabled, sc.NextFireTime = false, nil
		if _, _, err := s.SchedulePut(ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
		if due, err = s.ScheduleDue(ctx, now, store.ScheduleKey{}, 1000); err != nil || len(due) != 2 {
			t.Fatalf("after a pause: %d due, %v; want 2", len(due), err)
		}
		if _, ok, err := s.ScheduleNextFire(ctx, now.Add(200*time.Hour)); err != nil || ok {
			t.Fatalf("next fire after the last: %v %v; want none", ok, err)
		}
	})
}

// TestListPagesByKeyset: the workflow and schedule lists page by name from
// a key (every item once, in order, each page reading at most a page and
// one), and keep the names with a prefix.
func TestListPagesByKeyset(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		seedSchedules(t, s, "p", 120, 0, now)
		seedSchedules(t, s, "q", 5, 0, now)
		// A second version of one workflow: the list shows the latest once.
		if _, _, err := s.WorkflowPut(context.Background(), "p", mustSpec(t, "name: w007\ntasks:\n  - {name: b, command: \"true\"}\n")); err != nil {
			t.Fatal(err)
		}
		var names []string
		pg := store.NamePage{Limit: 25}
		for {
			ctx, reads := store.CountReads(context.Background())
			defs, more, err := s.WorkflowPage(ctx, "p", pg)
			if err != nil {
				t.Fatal(err)
			}
			// project, the page's keys (a page and one), the page's rows
			// (and w007's first version, read with its second)
			if r := reads.Rows.Load(); r > 1+26+25+1 {
				t.Fatalf("a page of 25 workflows read %d rows", r)
			}
			for _, d := range defs {
				names = append(names, d.Name)
				if d.Name == "w007" && d.Version != 2 {
					t.Fatalf("w007 listed at version %d, want the latest, 2", d.Version)
				}
			}
			if !more {
				break
			}
			pg.After = defs[len(defs)-1].Name
		}
		if len(names) != 120 || !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) || names[0] != "w000" {
			t.Fatalf("workflow pages: %d names %v", len(names), names)
		}
		defs, more, err := s.WorkflowPage(context.Background(), "p", store.NamePage{Prefix: "w01", Limit: 50})
		if err != nil || more || len(defs) != 10 || defs[0].Name != "w010" || defs[9].Name != "w019" {
			t.Fatalf("prefix w01: %d, more %v, %v", len(defs), more, err)
		}

		var keys []store.ScheduleName
		after := store.ScheduleName{}
		for {
			ctx, reads := store.CountReads(context.Background())
			scs, more, err := s.SchedulePage(ctx, "", after, "", 40)
			if err != nil {
				t.Fatal(err)
			}
			if r := reads.Rows.Load(); r > 41 {
				t.Fatalf("a page of 40 schedules read %d rows", r)
			}
			for _, sc := range scs {
				keys = append(keys, store.ScheduleName{Project: sc.Project, Workflow: sc.Workflow})
			}
			if !more {
				break
			}
			after = keys[len(keys)-1]
		}
		if len(keys) != 125 || keys[0] != (store.ScheduleName{Project: "p", Workflow: "w000"}) || keys[124] != (store.ScheduleName{Project: "q", Workflow: "w004"}) {
			t.Fatalf("schedule pages: %d, %v .. %v", len(keys), keys[0], keys[len(keys)-1])
		}
		for i := 1; i < len(keys); i++ {
			if a, b := keys[i-1], keys[i]; a.Project > b.Project || a.Project == b.Project && a.Workflow >= b.Workflow {
				t.Fatalf("schedule pages out of order at %d: %v then %v", i, a, b)
			}
		}
		scs, more, err := s.SchedulePage(context.Background(), "q", store.ScheduleName{Workflow: "w001"}, "w00", 2)
		if err != nil || !more || len(scs) != 2 || scs[0].Workflow != "w002" || scs[1].Workflow != "w003" {
			t.Fatalf("schedules of q after w001 with prefix w00: %v, more %v, %v", scs, more, err)
		}
	})
}

// TestClaimIsFairToManualRuns: an operator's run asked for after a burst
// of scheduled runs is claimed in the first claim, not after the burst.
func TestClaimIsFairToManualRuns(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		for range 100 {
			if _, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond", CommandType: model.CommandScheduled}); err != nil {
				t.Fatal(err)
			}
		}
		op, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.InstanceClaimCommands(ctx, "m", 1, 10)
		if err != nil || len(got) != 10 {
			t.Fatalf("claim: %d, %v", len(got), err)
		}
		if !slices.ContainsFunc(got, func(in model.WorkflowInstance) bool { return in.ID == op.ID }) {
			t.Fatalf("the operator's run %d is not in the first claim of 10 behind 100 scheduled", op.ID)
		}
	})
}

// TestClaimManualCommandsOnly: while a burst is written the leader claims
// only the runs a person asked for; the burst's own wait their turn,
// still submitted with their commands.
func TestClaimManualCommandsOnly(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		for range 5 {
			if _, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond", CommandType: model.CommandScheduled}); err != nil {
				t.Fatal(err)
			}
		}
		op, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.InstanceClaimManualCommands(ctx, "m", 1, 10)
		if err != nil || len(got) != 1 || got[0].ID != op.ID || got[0].State != model.WorkflowRunning {
			t.Fatalf("manual claim: %+v, %v; want only run %d, running", got, err, op.ID)
		}
		if again, err := s.InstanceClaimManualCommands(ctx, "m", 1, 10); err != nil || len(again) != 0 {
			t.Fatalf("second manual claim: %+v, %v; want none", again, err)
		}
		rest, err := s.InstanceClaimCommands(ctx, "m", 1, 10)
		if err != nil || len(rest) != 5 {
			t.Fatalf("the scheduled runs after the burst: %d, %v; want 5", len(rest), err)
		}
	})
}
