package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

func TestTaskGroups(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()

	r := b.send("POST", "/api/v1/task-groups", `{"name":"warehouse","capacity":2,"description":"the DWH"}`).want(t, http.StatusCreated)
	var g TaskGroup
	r.json(t, &g)
	if g.ID == 0 || g.Name != "warehouse" || g.Capacity != 2 || g.InUse != 0 || g.Description != "the DWH" ||
		r.header.Get("Location") != "/api/v1/task-groups/warehouse" {
		t.Fatalf("created %+v, location %q", g, r.header.Get("Location"))
	}
	var raw map[string]any
	r.json(t, &raw)
	if s, _ := raw["created_at"].(string); !timeRE.MatchString(s) {
		t.Fatalf("created_at %v", raw["created_at"])
	}
	e := b.send("POST", "/api/v1/task-groups", `{"name":"warehouse","capacity":3}`).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, `"warehouse" exists`) {
		t.Fatalf("message %q", e.Message)
	}

	for _, tc := range []struct{ name, body, want string }{
		{"bad name", `{"name":"a b","capacity":1}`, "not valid"},
		{"no name", `{"capacity":1}`, "not valid"},
		{"no capacity", `{"name":"x"}`, "capacity must be an integer from 1"},
		{"zero capacity", `{"name":"x","capacity":0}`, "got 0"},
		{"negative capacity", `{"name":"x","capacity":-2}`, "got -2"},
		{"huge capacity", `{"name":"x","capacity":9999999999}`, "capacity"},
		{"fractional capacity", `{"name":"x","capacity":1.5}`, `field "capacity"`},
		{"unknown field", `{"name":"x","capacity":1,"size":2}`, `unknown field "size"`},
		{"long description", `{"name":"x","capacity":1,"description":"` + strings.Repeat("d", 1025) + `"}`, "description"},
		{"empty body", ``, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.do("POST", "/api/v1/task-groups", "application/json", strings.NewReader(tc.body)).wantError(t, http.StatusBadRequest, CodeBadRequest)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}
	b.send("POST", "/api/v1/task-groups", `{"name":"api_calls","capacity":10}`).want(t, http.StatusCreated)

	// Tasks of a group that are dispatched or running are its use.
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	tasks := []*model.TaskInstance{
		{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning, Attempt: 1, TaskGroup: "warehouse"},
		{WorkflowInstanceID: inst.ID, Name: "load", Type: "shell", State: model.TaskSubmitted, Attempt: 1, TaskGroup: "warehouse"},
	}
	if err := b.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	var list List[TaskGroup]
	b.get("/api/v1/task-groups").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 2 || list.Items[0].Name != "api_calls" || list.Items[1].Name != "warehouse" || list.Items[1].InUse != 1 {
		t.Fatalf("list %+v", list.Items)
	}
	var ti TaskInstance
	b.get("/api/v1/task-instances/"+itoa(tasks[0].ID)).want(t, http.StatusOK).json(t, &ti)
	if ti.TaskGroup != "warehouse" {
		t.Fatalf("task instance %+v", ti)
	}

	b.get("/api/v1/task-groups/warehouse").want(t, http.StatusOK).json(t, &g)
	if g.Name != "warehouse" || g.InUse != 1 {
		t.Fatalf("get %+v", g)
	}
	b.get("/api/v1/task-groups/nope").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/task-groups/a%20b").wantError(t, http.StatusBadRequest, CodeBadRequest)

	b.send("PATCH", "/api/v1/task-groups/warehouse", `{"capacity":5}`).want(t, http.StatusOK).json(t, &g)
	if g.Capacity != 5 || g.InUse != 1 || g.Description != "the DWH" {
		t.Fatalf("resized %+v", g)
	}
	for _, tc := range []struct {
		name, path, body string
		status           int
		code, want       string
	}{
		{"no capacity", "warehouse", `{}`, 400, CodeBadRequest, "capacity is required"},
		{"zero capacity", "warehouse", `{"capacity":0}`, 400, CodeBadRequest, "got 0"},
		{"other field", "warehouse", `{"capacity":3,"name":"x"}`, 400, CodeBadRequest, `unknown field "name"`},
		{"empty body", "warehouse", ``, 400, CodeBadRequest, "empty"},
		{"bad name", "a%20b", `{"capacity":3}`, 400, CodeBadRequest, "name"},
		{"missing group", "nope", `{"capacity":3}`, 404, CodeNotFound, `task group "nope"`},
	} {
		t.Run("patch "+tc.name, func(t *testing.T) {
			e := b.do("PATCH", "/api/v1/task-groups/"+tc.path, "application/json", strings.NewReader(tc.body)).wantError(t, tc.status, tc.code)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}
	if b.get("/api/v1/task-groups/warehouse").json(t, &g); g.Capacity != 5 {
		t.Fatalf("a refused patch changed the capacity: %+v", g)
	}

	e = b.do("DELETE", "/api/v1/task-groups/warehouse", "", nil).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "1 task(s) dispatched or running") {
		t.Fatalf("message %q", e.Message)
	}
	if ok, err := b.store.TaskSetStates(ctx, []int64{tasks[0].ID}, []model.TaskState{model.TaskRunning}, model.TaskSucceeded); err != nil || len(ok) != 1 {
		t.Fatalf("finish task: %v %v", ok, err)
	}
	r = b.do("DELETE", "/api/v1/task-groups/warehouse", "", nil).want(t, http.StatusNoContent)
	if len(r.body) != 0 {
		t.Fatalf("204 with body %q", r.body)
	}
	b.do("DELETE", "/api/v1/task-groups/warehouse", "", nil).wantError(t, http.StatusNotFound, CodeNotFound)
	b.do("DELETE", "/api/v1/task-groups/a%20b", "", nil).wantError(t, http.StatusBadRequest, CodeBadRequest)

	r = b.do("PUT", "/api/v1/task-groups/api_calls", "", nil)
	r.wantError(t, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if r.header.Get("Allow") != "DELETE, GET, HEAD, PATCH" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
}

// A spec may name a task group that does not exist yet; the name itself
// must be valid.
func TestSpecTaskGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")
	b.putSpec("p", "w", "application/yaml", "tasks:\n  - {name: a, command: x, task_group: later}\n").want(t, http.StatusCreated)
	var wf Workflow
	b.get("/api/v1/projects/p/workflows/w").want(t, http.StatusOK).json(t, &wf)
	if !strings.Contains(string(wf.Spec), `"task_group":"later"`) {
		t.Fatalf("spec %s", wf.Spec)
	}
	e := b.putSpec("p", "w", "application/yaml", "tasks:\n  - {name: a, command: x, task_group: \"a b\"}\n  - {name: b, command: x, task_group: \"..\"}\n").
		wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, `task "a": task_group "a b" is not valid`) || !strings.Contains(e.Message, `task "b": task_group ".."`) {
		t.Fatalf("message %q", e.Message)
	}
}
