package api

import (
	"net/http"
	"slices"
	"testing"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
)

// GET /api/v1/task-types serves the registry: every registered type, in
// registration order, with its placement, summary and fields.
func TestTaskTypesServedFromRegistry(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	var got List[TaskType]
	b.get("/api/v1/task-types").want(t, http.StatusOK).json(t, &got)
	var names []string
	for _, ty := range got.Items {
		names = append(names, ty.Name)
	}
	var want []string
	for _, d := range builtin.Types() {
		want = append(want, d.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("types %v, want %v", names, want)
	}
	field := func(typ, name string) tasktype.Field {
		for _, ty := range got.Items {
			if ty.Name == typ {
				for _, f := range ty.Fields {
					if f.Name == name {
						return f
					}
				}
			}
		}
		t.Fatalf("%s has no field %s in %+v", typ, name, got.Items)
		return tasktype.Field{}
	}
	if f := field("http", "expect_status"); f.Type != "array" || f.Items != "integer" {
		t.Errorf("http.expect_status %+v", f)
	}
	if f := field("sql", "sql"); f.Type != "" { // a string or a list
		t.Errorf("sql.sql %+v", f)
	}
	if f := field("shell", "command"); f.Type != "string" {
		t.Errorf("shell.command %+v", f)
	}
	for _, ty := range got.Items {
		if ty.Summary == "" || (ty.Placement != tasktype.Worker && ty.Placement != tasktype.Master) {
			t.Errorf("type %+v: want a summary and a placement", ty)
		}
	}
}
