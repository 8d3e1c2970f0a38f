package store_test

import (
	"context"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// A version records who applied it (the same spec by another user is a new
// version); AuthorLevel and the grant checks read that user's rights now.
func TestAuthorsAndResourceGrants(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, p := range []string{"a", "b"} {
			if _, err := s.ProjectCreate(ctx, p, ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.UserCreate(ctx, "bob", model.RoleUser, "x"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UserCreate(ctx, "ann", model.RoleAdmin, "x"); err != nil {
			t.Fatal(err)
		}
		if err := s.GrantPut(ctx, "b", "bob", model.GrantView, "ann"); err != nil {
			t.Fatal(err)
		}
		w, err := spec.Parse([]byte("name: w\ntasks:\n  - {name: t, command: \"true\"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		d1, created, err := s.WorkflowPutAs(ctx, "a", "bob", w)
		if err != nil || !created {
			t.Fatalf("bob's apply: %v %v", created, err)
		}
		if _, created, _ := s.WorkflowPutAs(ctx, "a", "bob", w); created {
			t.Fatal("the same spec by the same user made a version")
		}
		d2, created, err := s.WorkflowPutAs(ctx, "a", "ann", w)
		if err != nil || !created || d2.Version != d1.Version+1 {
			t.Fatalf("ann's apply of bob's spec: %+v %v %v", d2, created, err)
		}
		a1, err := s.WorkflowVersionAuthor(ctx, d1.ID)
		if err != nil || a1.Name != "bob" || a1.Server {
			t.Fatalf("author of v1: %+v %v", a1, err)
		}
		for _, c := range []struct {
			a       model.Author
			project string
			want    string
		}{
			{a1, "b", model.GrantView},
			{a1, "a", ""},
			{a1, "nope", ""},
			{model.Author{Name: "ann"}, "b", model.GrantOwner},
			{model.Author{Server: true}, "b", model.GrantOwner},
			{model.Author{Name: model.AuthorUnknown}, "b", ""},
			{model.Author{Name: "BOB"}, "b", ""},
		} {
			if got, err := s.GrantAuthorLevel(ctx, c.a, c.project); err != nil || got != c.want {
				t.Errorf("%+v on %s: %q %v, want %q", c.a, c.project, got, err, c.want)
			}
		}

		if _, _, err := s.DatasourcePut(ctx, model.Datasource{Name: "wh", Type: "sqlite", Database: "/tmp/wh.db"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TaskGroupCreate(ctx, "g", 1, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.DatasourceSetProjects(ctx, "wh", []string{"b", "ghost"}, "ann"); !store.IsNotFound(err) {
			t.Fatalf("grant to a missing project: %v", err)
		}
		if err := s.DatasourceSetProjects(ctx, "wh", []string{"b", "b"}, "ann"); err != nil {
			t.Fatal(err)
		}
		if err := s.TaskGroupSetProjects(ctx, "g", []string{"a"}, "ann"); err != nil {
			t.Fatal(err)
		}
		usable := func(what, name, project string, a model.Author) bool {
			t.Helper()
			f := s.DatasourceUsable
			if what == "g" {
				f = s.TaskGroupUsable
			}
			ok, err := f(ctx, a, name, project)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		for _, c := range []struct {
			what, name, project string
			a                   model.Author
			want                bool
		}{
			{"ds", "wh", "b", a1, true},
			{"ds", "wh", "a", a1, false},
			{"ds", "ghost", "b", a1, false},
			{"ds", "wh", "a", model.Author{Name: "ann"}, true},
			{"ds", "wh", "b", model.Author{Name: model.AuthorUnknown}, true}, // granted to b: any version there
			{"ds", "wh", "a", model.Author{Name: model.AuthorUnknown}, false},
			{"g", "g", "a", a1, true},
			{"g", "g", "b", a1, false},
		} {
			if got := usable(c.what, c.name, c.project, c.a); got != c.want {
				t.Errorf("%s %s in %s by %+v: %v", c.what, c.name, c.project, c.a, got)
			}
		}
		disabled := true
		if _, _, err := s.UserUpdate(ctx, "ann", model.UserChange{Disabled: &disabled}); err != nil {
			t.Fatal(err)
		}
		if usable("ds", "wh", "a", model.Author{Name: "ann"}) {
			t.Fatal("a disabled admin's version still uses a datasource not granted to its project")
		}
		ps, err := s.DatasourceProjects(ctx)
		if err != nil || len(ps) != 1 {
			t.Fatalf("datasource projects: %v %v", ps, err)
		}
		if err := s.DatasourceDelete(ctx, "wh"); err != nil {
			t.Fatal(err)
		}
		if ps, _ := s.DatasourceProjects(ctx); len(ps) != 0 {
			t.Fatalf("grants outlived their datasource: %v", ps)
		}
	})
}
