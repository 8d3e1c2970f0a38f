package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestGitBindingAndSync runs the Git binding and sync methods on every
// dialect: a binding is written, kept password and all, read back and
// deleted; a sync applies every workflow of a commit or, when the store
// refuses one, none, and each outcome lands in the state and as an event.
func TestGitBindingAndSync(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.ProjectCreate(ctx, "p", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GitBindingGet(ctx, "p"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unbound project: %v, want ErrNotFound", err)
		}
		if _, _, err := s.GitBindingPut(ctx, model.GitBinding{Project: "nope", URL: "https://x/y.git"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a missing project: %v, want ErrNotFound", err)
		}
		b, created, err := s.GitBindingPut(ctx, model.GitBinding{Project: "p", URL: "https://git.example.com/a.git", Branch: "main",
			Dir: "etl", User: "bot", PasswordSealed: "beluga:sealed:v1:x", BoundBy: "ann"})
		if err != nil || !created || b.URL != "https://git.example.com/a.git" || b.PasswordSealed != "beluga:sealed:v1:x" {
			t.Fatalf("bind: %+v %v %v", b, created, err)
		}
		b, created, err = s.GitBindingPut(ctx, model.GitBinding{Project: "p", URL: "https://git.example.com/b.git",
			PasswordSealed: store.KeepGitPassword, BoundBy: "bo"})
		if err != nil || created {
			t.Fatalf("rebind: %v %v", created, err)
		}
		got, err := s.GitBindingGet(ctx, "p")
		if err != nil || got.URL != "https://git.example.com/b.git" || got.Branch != "" || got.PasswordSealed != "beluga:sealed:v1:x" ||
			got.BoundBy != "bo" || got.LastCommit != "" || got.LastSyncedAt != nil {
			t.Fatalf("read back: %+v %v", got, err)
		}

		good := func(name string) *spec.Workflow {
			return mustSpec(t, "name: "+name+"\ntasks:\n  - {name: a, command: \"true\"}\n")
		}
		applied, err := s.GitSyncApply(ctx, "p", "ann", "c1", []string{"workflows/a.yaml", "workflows/b.yaml"}, []*spec.Workflow{good("a"), good("b")})
		if err != nil || len(applied) != 2 || !applied[0].Created || applied[1].Definition.Name != "b" || applied[1].Definition.Version != 1 {
			t.Fatalf("apply: %+v %v", applied, err)
		}
		// c2 changes a, and its b names a datasource that does not exist:
		// a's change is rolled back with it.
		changed := mustSpec(t, "name: a\ndescription: changed\ntasks:\n  - {name: a, command: \"true\"}\n")
		bad := mustSpec(t, "name: b\ntasks:\n  - {name: q, type: sql, datasource: nowhere, sql: select 1}\n")
		_, err = s.GitSyncApply(ctx, "p", "ann", "c2", []string{"workflows/a.yaml", "workflows/b.yaml"}, []*spec.Workflow{changed, bad})
		var fe *store.GitFileError
		if !errors.As(err, &fe) || fe.File != "workflows/b.yaml" || !errors.Is(err, store.ErrUnknownDatasource) {
			t.Fatalf("a commit with an unknown datasource: %v", err)
		}
		if def, err := s.WorkflowGet(ctx, "p", "a", 0); err != nil || def.Version != 1 {
			t.Fatalf("a after the refused commit: version %d, %v", def.Version, err)
		}
		if err := s.GitSyncRefused(ctx, "p", "c2", fe.File, "datasource nowhere does not exist"); err != nil {
			t.Fatal(err)
		}
		got, err = s.GitBindingGet(ctx, "p")
		if err != nil || got.LastCommit != "c1" || got.LastAttemptCommit != "c2" || got.LastErrorFile != "workflows/b.yaml" ||
			got.LastError == "" || got.LastSyncedAt == nil {
			t.Fatalf("state after the refusal: %+v %v", got, err)
		}
		// The outbox's rows as the master publishes them (numbered).
		if err := s.TermBegin(ctx, 1, "m1"); err != nil {
			t.Fatal(err)
		}
		var cur store.EventCursor
		published, err := s.Term(1).EventPublishFrom(ctx, &cur, 100)
		if err != nil {
			t.Fatal(err)
		}
		var evs []model.Event
		for _, e := range published {
			if e.Kind == model.EventGitSync {
				evs = append(evs, e)
			}
		}
		if listed, err := s.EventList(ctx, 0, model.EventFilter{Kinds: []string{model.EventGitSync}}, 10); err != nil || len(listed) != len(evs) {
			t.Fatalf("listed %+v (%v), published %+v", listed, err, evs)
		}
		if len(evs) != 2 || evs[0].State != "synced" || evs[1].State != "refused" || evs[1].Project != "p" {
			t.Fatalf("events: %+v %v", evs, err)
		}
		var detail map[string]any
		if err := json.Unmarshal(evs[1].Detail, &detail); err != nil || detail["file"] != "workflows/b.yaml" || detail["commit"] != "c2" {
			t.Fatalf("refusal detail %s %v", evs[1].Detail, err)
		}
		if _, err := s.GitSyncApply(ctx, "p", "ann", "c3", []string{"a"}, nil); err == nil {
			t.Fatal("files and workflows of different lengths were accepted")
		}

		if err := s.GitBindingDelete(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		if err := s.GitBindingDelete(ctx, "p"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a second delete: %v, want ErrNotFound", err)
		}
		if err := s.GitSyncRefused(ctx, "p", "c4", "", "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refusal without a binding: %v, want ErrNotFound", err)
		}
		if _, err := s.WorkflowGet(ctx, "p", "a", 0); err != nil {
			t.Fatalf("unbinding removed the workflows: %v", err)
		}
	})
}

// TestGitBindingPeriodicAndOrigins runs the rest on every dialect: the
// interval, mode, alert channels and hook secret are kept (the secret as
// the password is: kept when left out, removed by ""); the periodic
// bindings are listed by project; a sync deletes the workflows that came
// from Git whose file is gone, in its transaction, and leaves the others;
// a workflow that cannot be deleted refuses the commit with its file.
func TestGitBindingPeriodicAndOrigins(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, p := range []string{"p", "q"} {
			if _, err := s.ProjectCreate(ctx, p, ""); err != nil {
				t.Fatal(err)
			}
		}
		b, _, err := s.GitBindingPut(ctx, model.GitBinding{Project: "p", URL: "/srv/a.git", BoundBy: "ann", SyncInterval: 5 * time.Minute,
			Mode: model.GitModeWriteBack, AlertChannels: []string{"ops", "mail"}, HookSecretSealed: "sealed-hook"})
		if err != nil || b.SyncInterval != 5*time.Minute || b.Mode != model.GitModeWriteBack || len(b.AlertChannels) != 2 || b.HookSecretSealed != "sealed-hook" {
			t.Fatalf("bind: %+v %v", b, err)
		}
		if _, _, err := s.GitBindingPut(ctx, model.GitBinding{Project: "q", URL: "/srv/b.git", BoundBy: "ann"}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GitBindingGet(ctx, "p")
		if err != nil || got.SyncInterval != 5*time.Minute || got.AlertChannels[1] != "mail" || got.HookSecretSealed != "sealed-hook" {
			t.Fatalf("read back: %+v %v", got, err)
		}
		periodic, err := s.GitBindingsPeriodic(ctx)
		if err != nil || len(periodic) != 1 || periodic[0].Project != "p" || periodic[0].URL != "/srv/a.git" || periodic[0].SyncInterval != 5*time.Minute {
			t.Fatalf("periodic: %+v %v", periodic, err)
		}
		got, _, err = s.GitBindingPut(ctx, model.GitBinding{Project: "p", URL: "/srv/a.git", BoundBy: "ann", HookSecretSealed: store.KeepGitPassword,
			PasswordSealed: store.KeepGitPassword})
		if err != nil || got.HookSecretSealed != "sealed-hook" || got.SyncInterval != 0 || got.AlertChannels != nil {
			t.Fatalf("kept: %+v %v", got, err)
		}
		if got, _, err = s.GitBindingPut(ctx, model.GitBinding{Project: "p", URL: "/srv/a.git", BoundBy: "ann"}); err != nil || got.HookSecretSealed != "" {
			t.Fatalf("removed: %+v %v", got, err)
		}

		wf := func(name string) *spec.Workflow {
			return mustSpec(t, "name: "+name+"\ntasks:\n  - {name: a, command: \"true\"}\n")
		}
		if _, _, err := s.WorkflowPut(ctx, "p", wf("local")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GitSyncApply(ctx, "p", "ann", "c1", []string{"w/a.yaml", "w/b.yml"}, []*spec.Workflow{wf("a"), wf("b")}); err != nil {
			t.Fatal(err)
		}
		if path, err := s.GitOrigin(ctx, "p", "b"); err != nil || path != "w/b.yml" {
			t.Fatalf("origin of b: %q %v", path, err)
		}
		applied, err := s.GitSyncApply(ctx, "p", "ann", "c2", []string{"w/a.yaml"}, []*spec.Workflow{wf("a")})
		if err != nil || len(applied) != 2 || !applied[1].Deleted || applied[1].Definition.Name != "b" || applied[1].File != "w/b.yml" {
			t.Fatalf("c2: %+v %v", applied, err)
		}
		if _, err := s.WorkflowGet(ctx, "p", "b", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("b after its file went: %v", err)
		}
		if _, err := s.WorkflowGet(ctx, "p", "local", 0); err != nil {
			t.Fatalf("local (never in Git) after the sync: %v", err)
		}
		// a runs (unfinished): c3 without a.yaml is refused, naming it,
		// and its new workflow c is rolled back.
		if _, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "p", Workflow: "a"}); err != nil {
			t.Fatal(err)
		}
		_, err = s.GitSyncApply(ctx, "p", "ann", "c3", []string{"w/c.yaml"}, []*spec.Workflow{wf("c")})
		var fe *store.GitFileError
		if !errors.As(err, &fe) || fe.File != "w/a.yaml" || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("c3: %v", err)
		}
		if _, err := s.WorkflowGet(ctx, "p", "c", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("c of the refused commit: %v", err)
		}
		// A workflow deleted in Beluga: its origin goes with it.
		if err := s.GitOriginSet(ctx, "p", "local", "w/local.yaml"); err != nil {
			t.Fatal(err)
		}
		if err := s.WorkflowDelete(ctx, "p", "local"); err != nil {
			t.Fatal(err)
		}
		if path, err := s.GitOrigin(ctx, "p", "local"); err != nil || path != "" {
			t.Fatalf("origin of a deleted workflow: %q %v", path, err)
		}
	})
}
