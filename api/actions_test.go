package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// action posts an action body to path as user (an admin made on first
// use; "": the bundle's admin). A user that is no valid name is sent as
// X-Beluga-User instead, which the API still checks.
func (b *bundle) action(path, body, user string) resp {
	b.t.Helper()
	req, err := http.NewRequest("POST", b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.token)
	switch {
	case user == "":
	case validName(user) && len(user) <= 64:
		req.Header.Set("Authorization", "Bearer "+b.tokenOf(user, model.RoleAdmin))
	default:
		req.Header.Set(UserHeader, user)
	}
	res, err := b.srv.Client().Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: data}
}

func (b *bundle) detail(id int64) InstanceDetail {
	b.t.Helper()
	var d InstanceDetail
	b.get("/api/v1/instances/"+itoa(id)).want(b.t, http.StatusOK).json(b.t, &d)
	return d
}

func TestInstanceActions(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	path := "/api/v1/instances/" + itoa(inst.ID) + "/actions"
	notified := b.notified.Load()

	// A new instance has an empty history, as a list.
	r := b.get("/api/v1/instances/"+itoa(inst.ID)).want(t, http.StatusOK)
	if !strings.Contains(string(r.body), `"history":[]`) {
		t.Fatalf("no empty history in %s", r.body)
	}

	r = b.action(path, `{"action":"stop"}`, "alice").want(t, http.StatusAccepted)
	var acc ActionAccepted
	r.json(t, &acc)
	if acc.CommandID == 0 || acc.InstanceID != inst.ID || acc.Action != "stop" || acc.State != "ready_stop" || acc.TaskInstanceID != nil {
		t.Fatalf("accepted %+v", acc)
	}
	if r.header.Get("Location") != "/api/v1/instances/"+itoa(inst.ID) || strings.Contains(string(r.body), "task_instance_id") {
		t.Fatalf("location %q body %s", r.header.Get("Location"), r.body)
	}
	if b.notified.Load() != notified+1 {
		t.Fatal("the master was not notified")
	}
	d := b.detail(inst.ID)
	if d.State != "ready_stop" || len(d.History) != 1 {
		t.Fatalf("after stop: %+v", d)
	}
	if h := d.History[0]; h.Action != "stop" || h.By != "alice" || h.TaskInstanceID != nil || !strings.Contains(h.Detail, "submitted") ||
		time.Since(h.At.Time) > time.Minute {
		t.Fatalf("history %+v", h)
	}
	var raw struct {
		History []map[string]any `json:"history"`
	}
	b.get("/api/v1/instances/"+itoa(inst.ID)).json(t, &raw)
	if at, _ := raw.History[0]["at"].(string); !timeRE.MatchString(at) || raw.History[0]["task_instance_id"] != nil {
		t.Fatalf("history JSON %v", raw.History[0])
	}

	// A second action sees ready_stop and changes nothing.
	e := b.action(path, `{"action":"pause"}`, "").wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "ready_stop") {
		t.Fatalf("message %q does not name the state", e.Message)
	}

	// A finished instance: resume needs paused or stopped, rerun is queued
	// once; the history names the authenticated user, whatever "by" says.
	if err := b.store.InstanceFinish(ctx, inst.ID, model.WorkflowFailed, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	e = b.action(path, `{"action":"resume"}`, "").wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "failed") || !strings.Contains(e.Message, "paused or stopped") {
		t.Fatalf("message %q", e.Message)
	}
	b.action(path, `{"action":"rerun","by":"bob"}`, "alice").want(t, http.StatusAccepted).json(t, &acc)
	if acc.State != "failed" || acc.Action != "rerun" {
		t.Fatalf("rerun %+v", acc)
	}
	e = b.action(path, `{"action":"recover_failed"}`, "").wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "waiting") {
		t.Fatalf("message %q", e.Message)
	}
	if got, err := b.store.ActionClaim(ctx, 10); err != nil || len(got) != 2 {
		t.Fatalf("claimed %+v %v", got, err)
	}
	b.action(path, `{"action":"recover_failed"}`, "").want(t, http.StatusAccepted)
	d = b.detail(inst.ID)
	if len(d.History) != 3 || d.History[1].By != "alice" || d.History[2].By != "admin" || d.History[2].Action != "recover_failed" {
		t.Fatalf("history %+v", d.History)
	}
	notified = b.notified.Load()

	long := strings.Repeat("x", model.MaxActionBy+1)
	for _, tc := range []struct {
		name, path, body, user string
		status                 int
		code, want             string
	}{
		{"empty body", path, ``, "", 400, CodeBadRequest, "empty"},
		{"no action", path, `{}`, "", 400, CodeBadRequest, "stop, pause, resume, rerun, recover_failed"},
		{"unknown action", path, `{"action":"explode"}`, "", 400, CodeBadRequest, `"explode" is not valid; the actions on an instance are stop, pause, resume, rerun, recover_failed`},
		{"task action", path, `{"action":"kill"}`, "", 400, CodeBadRequest, "POST /api/v1/task-instances/{id}/actions"},
		{"unknown field", path, `{"action":"stop","force":true}`, "", 400, CodeBadRequest, `unknown field "force"`},
		{"action not a string", path, `{"action":1}`, "", 400, CodeBadRequest, `field "action"`},
		{"by too long", path, `{"action":"stop","by":"` + long + `"}`, "", 400, CodeBadRequest, `"by" must be`},
		{"by blank", path, `{"action":"stop","by":"  "}`, "", 400, CodeBadRequest, `"by" must be`},
		{"by with a newline", path, `{"action":"stop","by":"a\nb"}`, "", 400, CodeBadRequest, `"by" must be`},
		{"header too long", path, `{"action":"stop"}`, long, 400, CodeBadRequest, "header X-Beluga-User"},
		{"bad id", "/api/v1/instances/abc/actions", `{"action":"stop"}`, "", 400, CodeBadRequest, "id"},
		{"zero id", "/api/v1/instances/0/actions", `{"action":"stop"}`, "", 400, CodeBadRequest, "id"},
		{"missing instance", "/api/v1/instances/999/actions", `{"action":"stop"}`, "", 404, CodeNotFound, "workflow instance 999"},
		{"wrong state", path, `{"action":"stop"}`, "", 409, CodeConflict, "it is failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.action(tc.path, tc.body, tc.user).wantError(t, tc.status, tc.code)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
			if strings.HasSuffix(e.Message, ": conflict") {
				t.Fatalf("message %q keeps the sentinel", e.Message)
			}
		})
	}
	if d := b.detail(inst.ID); len(d.History) != 3 || d.State != "failed" || b.notified.Load() != notified {
		t.Fatalf("refused actions changed something: %d history rows, state %s, notified %d", len(d.History), d.State, b.notified.Load()-notified)
	}
	b.do("GET", path, "", nil).wantError(t, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
}

func TestTaskActions(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	if _, err := b.store.InstanceClaimCommands(ctx, "m1:1", 1, 10); err != nil {
		t.Fatal(err)
	}
	tasks := []*model.TaskInstance{
		{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning, Attempt: 1, Host: "w1:1"},
		{WorkflowInstanceID: inst.ID, Name: "load", Type: "shell", State: model.TaskFailed, Attempt: 1, Host: "w1:1"},
	}
	if err := b.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	run, failed := "/api/v1/task-instances/"+itoa(tasks[0].ID)+"/actions", "/api/v1/task-instances/"+itoa(tasks[1].ID)+"/actions"

	var acc ActionAccepted
	r := b.action(run, `{"action":"kill"}`, "carol").want(t, http.StatusAccepted)
	r.json(t, &acc)
	if acc.Action != "kill" || acc.InstanceID != inst.ID || acc.TaskInstanceID == nil || *acc.TaskInstanceID != tasks[0].ID ||
		acc.State != "running" || r.header.Get("Location") != "/api/v1/instances/"+itoa(inst.ID) {
		t.Fatalf("kill %+v", acc)
	}
	b.action(failed, `{"action":"force_success"}`, "").want(t, http.StatusAccepted).json(t, &acc)
	if acc.Action != "force_success" || *acc.TaskInstanceID != tasks[1].ID {
		t.Fatalf("force %+v", acc)
	}
	if b.notified.Load() != 3 { // the run and two actions
		t.Fatalf("notified %d times", b.notified.Load())
	}

	for _, tc := range []struct {
		name, path, body string
		status           int
		code, want       string
	}{
		{"kill a failed task", failed, `{"action":"kill"}`, 409, CodeConflict, "it is failed"},
		{"force a running task", run, `{"action":"force_success"}`, 409, CodeConflict, "it is running"},
		{"kill twice", run, `{"action":"kill"}`, 409, CodeConflict, "waiting"},
		{"instance action", run, `{"action":"stop"}`, 400, CodeBadRequest, "POST /api/v1/instances/{id}/actions"},
		{"unknown action", run, `{"action":"explode"}`, 400, CodeBadRequest, "kill, force_success"},
		{"no action", run, `{"by":"x"}`, 400, CodeBadRequest, "action is required"},
		{"bad id", "/api/v1/task-instances/x/actions", `{"action":"kill"}`, 400, CodeBadRequest, "id"},
		{"missing task", "/api/v1/task-instances/999/actions", `{"action":"kill"}`, 404, CodeNotFound, "task instance 999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.action(tc.path, tc.body, "").wantError(t, tc.status, tc.code)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}

	d := b.detail(inst.ID)
	if len(d.History) != 2 || d.History[0].Action != "kill" || d.History[0].By != "carol" || d.History[0].TaskInstanceID == nil ||
		*d.History[0].TaskInstanceID != tasks[0].ID || d.History[1].By != "admin" {
		t.Fatalf("history %+v", d.History)
	}
	got, err := b.store.ActionClaim(ctx, 10)
	if err != nil || len(got) != 2 || got[0].TaskInstanceID != tasks[0].ID || got[1].Action != model.ActionForceSuccess {
		t.Fatalf("claimed %+v %v", got, err)
	}
}
