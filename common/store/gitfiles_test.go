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

// TestGitSyncSchedules runs a sync's schedules on every dialect: a commit
// puts its workflows and schedules in one transaction (a schedule the
// store refuses rolls back the commit's workflows too, naming its file);
// an unchanged schedule is not written again; a schedule whose file is
// gone is deleted, one made in Beluga is not. A binding's SSH key and
// known hosts are kept as given.
func TestGitSyncSchedules(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.ProjectCreate(ctx, "p", ""); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.GitBindingPut(ctx, model.GitBinding{Project: "p", URL: "/srv/a.git", BoundBy: "ann"}); err != nil {
			t.Fatal(err)
		}
		wf := func(name, desc string) *spec.Workflow {
			return mustSpec(t, "name: "+name+"\ndescription: "+desc+"\ntasks:\n  - {name: a, command: \"true\"}\n")
		}
		next := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		sched := func(workflow, cron string) model.Schedule {
			return model.Schedule{Workflow: workflow, Cron: cron, Timezone: "UTC", Catchup: "latest", Enabled: true,
				NextFireTime: &next, UpdatedBy: "ann", Params: map[string]string{"day": "1"}}
		}
		c1 := store.GitCommit{Commit: "c1", Files: []string{"workflows/a.yaml"}, Workflows: []*spec.Workflow{wf("a", "one")},
			Schedules: []store.GitSchedule{{File: "schedules/a.yaml", Schedule: sched("a", "0 2 * * *")}}}
		applied, err := s.GitSyncApplyCommit(ctx, "p", "ann", c1)
		if err != nil || len(applied) != 2 || applied[1].Kind != store.GitKindSchedule || !applied[1].Created || applied[1].Schedule.Cron != "0 2 * * *" {
			t.Fatalf("c1: %+v %v", applied, err)
		}
		first, err := s.ScheduleGet(ctx, "p", "a")
		if err != nil || first.UpdatedBy != "ann" {
			t.Fatalf("the schedule: %+v %v", first, err)
		}
		if path, err := s.GitFileOrigin(ctx, "p", store.GitKindSchedule, "a"); err != nil || path != "schedules/a.yaml" {
			t.Fatalf("origin: %q %v", path, err)
		}
		// The same commit again: nothing written.
		if applied, err = s.GitSyncApplyCommit(ctx, "p", "ann", c1); err != nil || applied[1].Created {
			t.Fatalf("c1 again: %+v %v", applied, err)
		}
		if again, _ := s.ScheduleGet(ctx, "p", "a"); again.Version != first.Version || again.Revision != first.Revision {
			t.Fatalf("an unchanged schedule was written: version %d -> %d", first.Version, again.Version)
		}
		// A schedule on a calendar that does not exist: the whole commit goes.
		bad := sched("a", "0 3 * * *")
		bad.Calendar = "nope"
		_, err = s.GitSyncApplyCommit(ctx, "p", "ann", store.GitCommit{Commit: "c2", Files: []string{"workflows/a.yaml"},
			Workflows: []*spec.Workflow{wf("a", "two")}, Schedules: []store.GitSchedule{{File: "schedules/a.yaml", Schedule: bad}}})
		var fe *store.GitFileError
		if !errors.As(err, &fe) || fe.File != "schedules/a.yaml" || !errors.Is(err, store.ErrUnknownCalendar) {
			t.Fatalf("c2: %v", err)
		}
		if def, _ := s.WorkflowGet(ctx, "p", "a", 0); def.Version != 1 {
			t.Fatalf("the refused commit's workflow was applied: version %d", def.Version)
		}
		// A schedule of a workflow neither stored nor in the commit.
		_, err = s.GitSyncApplyCommit(ctx, "p", "ann", store.GitCommit{Commit: "c3", Files: []string{"workflows/a.yaml"},
			Workflows: []*spec.Workflow{wf("a", "one")}, Schedules: []store.GitSchedule{{File: "schedules/ghost.yaml", Schedule: sched("ghost", "0 1 * * *")}}})
		if !errors.As(err, &fe) || fe.File != "schedules/ghost.yaml" || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("c3: %v", err)
		}
		// a's workflow file gone but its schedule's kept: refused, naming it.
		_, err = s.GitSyncApplyCommit(ctx, "p", "ann", store.GitCommit{Commit: "c3b",
			Schedules: []store.GitSchedule{{File: "schedules/a.yaml", Schedule: sched("a", "0 2 * * *")}}})
		if !errors.As(err, &fe) || fe.File != "schedules/a.yaml" || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("c3b: %v", err)
		}
		if _, err := s.WorkflowGet(ctx, "p", "a", 0); err != nil {
			t.Fatalf("a after the refused commit: %v", err)
		}
		// A schedule made in Beluga (b's), and a's file gone: a's goes, b's stays.
		if _, _, err := s.WorkflowPut(ctx, "p", wf("b", "local")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.SchedulePut(ctx, model.Schedule{Project: "p", Workflow: "b", Cron: "0 5 * * *", Timezone: "UTC", Enabled: true}, nil); err != nil {
			t.Fatal(err)
		}
		applied, err = s.GitSyncApplyCommit(ctx, "p", "ann", store.GitCommit{Commit: "c4", Files: []string{"workflows/a.yaml"}, Workflows: []*spec.Workflow{wf("a", "one")}})
		if err != nil || len(applied) != 2 || !applied[1].Deleted || applied[1].Kind != store.GitKindSchedule || applied[1].File != "schedules/a.yaml" {
			t.Fatalf("c4: %+v %v", applied, err)
		}
		if _, err := s.ScheduleGet(ctx, "p", "a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a's schedule after its file went: %v", err)
		}
		if _, err := s.ScheduleGet(ctx, "p", "b"); err != nil {
			t.Fatalf("b's schedule (never in Git): %v", err)
		}
		if path, err := s.GitFileOrigin(ctx, "p", store.GitKindSchedule, "a"); err != nil || path != "" {
			t.Fatalf("origin after the delete: %q %v", path, err)
		}
		// A write-back records the file of b's schedule; a workflow's origin
		// goes through the same call.
		if err := s.GitFileOriginSet(ctx, "p", store.GitKindSchedule, "b", "x/schedules/b.yaml"); err != nil {
			t.Fatal(err)
		}
		if err := s.GitFileOriginSet(ctx, "p", store.GitKindWorkflow, "b", "x/workflows/b.yaml"); err != nil {
			t.Fatal(err)
		}
		for kind, want := range map[string]string{store.GitKindSchedule: "x/schedules/b.yaml", store.GitKindWorkflow: "x/workflows/b.yaml"} {
			if path, err := s.GitFileOrigin(ctx, "p", kind, "b"); err != nil || path != want {
				t.Fatalf("origin of %s b: %q %v", kind, path, err)
			}
		}

		got, _, err := s.GitBindingPut(ctx, model.GitBinding{Project: "p", URL: "git@git.example.com:a.git", BoundBy: "ann",
			SSHKeySealed: "sealed-key", KnownHosts: "SHA256:abc"})
		if err != nil || got.SSHKeySealed != "sealed-key" || got.KnownHosts != "SHA256:abc" {
			t.Fatalf("an SSH binding: %+v %v", got, err)
		}
		got, _, err = s.GitBindingPut(ctx, model.GitBinding{Project: "p", URL: "git@git.example.com:a.git", BoundBy: "ann",
			SSHKeySealed: store.KeepGitPassword, KnownHosts: "SHA256:def"})
		if err != nil || got.SSHKeySealed != "sealed-key" || got.KnownHosts != "SHA256:def" {
			t.Fatalf("the key kept: %+v %v", got, err)
		}
		if got, err = s.GitBindingGet(ctx, "p"); err != nil || got.SSHKeySealed != "sealed-key" || got.KnownHosts != "SHA256:def" {
			t.Fatalf("read back: %+v %v", got, err)
		}
	})
}
