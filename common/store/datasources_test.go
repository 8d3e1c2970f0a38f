package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

func TestDatasourcePutGetListDelete(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		d := model.Datasource{Name: "wh", Type: "mysql", Host: "db.internal", Port: 3306, Database: "sales",
			User: "etl", PasswordSealed: "beluga:sealed:v1:AAAA", Params: map[string]string{"tls": "true"}}
		got, created, err := s.DatasourcePut(ctx, d)
		if err != nil || !created || got.ID == 0 || got.PasswordSealed != "beluga:sealed:v1:AAAA" || got.Params["tls"] != "true" {
			t.Fatalf("create: %+v created=%v err=%v", got, created, err)
		}
		// Replacing keeps the password when asked to, and the creation time.
		d2 := d
		d2.Host, d2.Params, d2.PasswordSealed = "db2.internal", nil, store.KeepPassword
		got2, created, err := s.DatasourcePut(ctx, d2)
		if err != nil || created || got2.ID != got.ID || got2.Host != "db2.internal" || got2.PasswordSealed != "beluga:sealed:v1:AAAA" || got2.Params != nil {
			t.Fatalf("replace: %+v created=%v err=%v", got2, created, err)
		}
		read, err := s.DatasourceGet(ctx, "wh")
		if err != nil || read.Host != "db2.internal" || read.PasswordSealed != "beluga:sealed:v1:AAAA" || !read.CreatedAt.Equal(got.CreatedAt) {
			t.Fatalf("get: %+v %v (created %v)", read, err, got.CreatedAt)
		}
		// An empty sealed password clears it.
		d3 := d2
		d3.PasswordSealed = ""
		if got3, _, err := s.DatasourcePut(ctx, d3); err != nil || got3.PasswordSealed != "" {
			t.Fatalf("clear password: %+v %v", got3, err)
		}
		if read, _ := s.DatasourceGet(ctx, "wh"); read.PasswordSealed != "" {
			t.Fatalf("password not cleared: %+v", read)
		}
		if _, _, err := s.DatasourcePut(ctx, model.Datasource{Name: "a", Type: "sqlite", Database: "/tmp/x.db", PasswordSealed: store.KeepPassword}); err != nil {
			t.Fatal(err)
		}
		list, err := s.DatasourceList(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "wh" || list[0].PasswordSealed != "" {
			t.Fatalf("list: %+v %v", list, err)
		}
		if err := s.DatasourceDelete(ctx, "wh"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DatasourceGet(ctx, "wh"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get after delete: %v", err)
		}
		if err := s.DatasourceDelete(ctx, "wh"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
	})
}

func TestDatasourceInUse(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.ProjectCreate(ctx, "p", ""); err != nil {
			t.Fatal(err)
		}
		uses := mustSpec(t, "name: counts\ntasks:\n  - name: n\n    type: sql\n    datasource: wh\n    sql: select 1 as one\n")
		if _, _, err := s.WorkflowPut(ctx, "p", uses); !errors.Is(err, store.ErrUnknownDatasource) || !strings.Contains(err.Error(), `datasource "wh" does not exist`) {
			t.Fatalf("apply naming a missing datasource: %v", err)
		}
		if _, _, err := s.DatasourcePut(ctx, model.Datasource{Name: "wh", Type: "sqlite", Database: "/tmp/wh.db"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.WorkflowPut(ctx, "p", uses); err != nil {
			t.Fatal(err)
		}
		users, err := s.DatasourceUsers(ctx, "wh")
		if err != nil || len(users) != 1 || users[0] != "p/counts" {
			t.Fatalf("users %v %v", users, err)
		}
		if err := s.DatasourceDelete(ctx, "wh"); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "p/counts") {
			t.Fatalf("delete while used: %v", err)
		}
		// A newer version without it frees it; the old version still names it.
		if _, _, err := s.WorkflowPut(ctx, "p", mustSpec(t, "name: counts\ntasks:\n  - name: n\n    command: echo\n")); err != nil {
			t.Fatal(err)
		}
		if users, _ := s.DatasourceUsers(ctx, "wh"); len(users) != 0 {
			t.Fatalf("users after a new version: %v", users)
		}
		if err := s.DatasourceDelete(ctx, "wh"); err != nil {
			t.Fatal(err)
		}
	})
}
