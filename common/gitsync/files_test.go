package gitsync

import (
	"context"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

// TestFetchLayout reads each kind's directory under the binding's:
// workflows, schedules, datasources and task groups, by file name.
func TestFetchLayout(t *testing.T) {
	t.Parallel()
	repo := gittest.New(t)
	c := repo.Commit("main", "all", map[string]string{"p/workflows/etl.yaml": "w", "p/schedules/etl.yaml": "s",
		"p/datasources/wh.yml": "d", "p/task-groups/gpu.json": "g", "p/schedules/README.md": "r", "schedules/x.yaml": "x"})
	snap, err := Fetch(context.Background(), Source{URL: repo.Bare, Branch: "main", Dir: "p"})
	if err != nil || snap.Commit != c {
		t.Fatal(snap, err)
	}
	for _, k := range []struct {
		files      []File
		path, name string
	}{{snap.Files, "p/workflows/etl.yaml", "etl"}, {snap.Schedules, "p/schedules/etl.yaml", "etl"},
		{snap.Datasources, "p/datasources/wh.yml", "wh"}, {snap.TaskGroups, "p/task-groups/gpu.json", "gpu"}} {
		if len(k.files) != 1 || k.files[0].Path != k.path || k.files[0].Workflow != k.name {
			t.Errorf("want %s (%s): %+v", k.path, k.name, k.files)
		}
	}
}

func TestParseDatasource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file string
		want string // "" ok, else a part of the error
	}{
		{"type: postgres\nhost: db\nport: 5432\ndatabase: wh\nuser: etl\n", ""},
		{"", ""},
		{"type: mysql\nparams: {charset: utf8mb4}\n", ""},
		{"type: postgres\npassword: hunter2\n", `field "password"`},
		{"type: postgres\npassword_sealed: x\n", `field "password_sealed"`},
		{"type: postgres\nparams: {api_token: x}\n", `params "api_token"`},
		{"type: postgres\nhots: db\n", "hots"},
		{"port: 70000\n", "port 70000"},
		{"- a\n", "mapping"},
		{"a: 1\n---\nb: 2\n", "more than one"},
		{"type: [\n", "not valid YAML"},
	} {
		_, err := ParseDatasource([]byte(c.file))
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseDatasource(%q) = %v, want %q", c.file, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error quotes the password: %v", err)
		}
	}
	if _, err := ParseTaskGroup([]byte("capacity: -1\n")); err == nil {
		t.Error("a negative capacity was taken")
	}
	if g, err := ParseTaskGroup([]byte("capacity: 4\ndescription: gpus\n")); err != nil || g.Capacity != 4 {
		t.Errorf("a task group file: %+v %v", g, err)
	}
	if _, err := ParseTaskGroup([]byte("size: 4\n")); err == nil || !strings.Contains(err.Error(), "size") {
		t.Errorf("an unknown field: %v", err)
	}
}
