package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

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
