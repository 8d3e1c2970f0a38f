package client

import (
	"github.com/beluga-scheduler/beluga/testkit/authtest"

	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

type logData []byte

func (l logData) ReadLog(_ context.Context, _ model.TaskInstance, offset, limit int64) ([]byte, error) {
	if offset >= int64(len(l)) {
		return nil, nil
	}
	return l[offset:min(offset+limit, int64(len(l)))], nil
}

// withWorkflow creates project p holding the etl workflow of specYAML.
func withWorkflow(t *testing.T, c *Client) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateProject(ctx, "p", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ApplyWorkflow(ctx, "p", []byte(specYAML)); err != nil {
		t.Fatal(err)
	}
}

func setup(t *testing.T, logs api.LogReader) (*Client, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "beluga.db"), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewHandler(api.Deps{Store: st, Logs: logs,
		Cluster: func(context.Context) (any, error) { return map[string]string{"leader": "m1"}, nil }}))
	t.Cleanup(srv.Close)
	return NewClient(srv.URL+"/", srv.Client()).WithToken(authtest.Admin(t, st)), st
}

const specYAML = `name: etl
tasks:
  - name: a
    command: echo a
  - name: b
    command: echo b
    depends_on: [a]
`

func TestClientRoundTrip(t *testing.T) {
	t.Parallel()
	// 2.5 pages of log, so TaskLog has to page.
	log := bytes.Repeat([]byte("0123456789abcdef"), (logPage*5/2)/16)
	c, st := setup(t, logData(log))
	ctx := context.Background()

	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProject(ctx, "p", "desc")
	if err != nil || p.Name != "p" || p.Description != "desc" {
		t.Fatalf("create project %+v %v", p, err)
	}
	if ps, err := c.ListProjects(ctx); err != nil || len(ps) != 1 {
		t.Fatalf("list projects %+v %v", ps, err)
	}
	if p, err := c.GetProject(ctx, "p"); err != nil || p.Name != "p" {
		t.Fatalf("get project %+v %v", p, err)
	}

	res, err := c.ApplyWorkflow(ctx, "p", []byte(specYAML))
	if err != nil || !res.Created || res.Version != 1 || res.Name != "etl" {
		t.Fatalf("apply %+v %v", res, err)
	}
	res, err = c.ApplyWorkflow(ctx, "p", []byte(specYAML))
	if err != nil || res.Created || res.Version != 1 {
		t.Fatalf("re-apply %+v %v", res, err)
	}
	res, err = c.ApplyWorkflow(ctx, "p", []byte(`{"name":"etl","tasks":[{"name":"a","command":"echo A"}]}`))
	if err != nil || !res.Created || res.Version != 2 {
		t.Fatalf("apply JSON %+v %v", res, err)
	}
	if w, err := c.GetWorkflow(ctx, "p", "etl", 0); err != nil || w.Version != 2 || !strings.Contains(string(w.Spec), "echo A") {
		t.Fatalf("get latest %+v %v", w, err)
	}
	if w, err := c.GetWorkflow(ctx, "p", "etl", 1); err != nil || w.Version != 1 {
		t.Fatalf("get v1 %+v %v", w, err)
	}
	if ws, err := c.ListWorkflows(ctx, "p"); err != nil || len(ws) != 1 || ws[0].Version != 2 {
		t.Fatalf("list %+v %v", ws, err)
	}
	if vs, err := c.Versions(ctx, "p", "etl"); err != nil || len(vs) != 2 || vs[0].Version != 2 {
		t.Fatalf("versions %+v %v", vs, err)
	}

	inst, err := c.Run(ctx, "p", "etl", RunOptions{Params: map[string]string{"k": "v"}, Version: 1, Priority: "low"})
	if err != nil || inst.State != "submitted" || inst.Version != 1 || inst.Priority != "low" || inst.Params["k"] != "v" {
		t.Fatalf("run %+v %v", inst, err)
	}
	tasks := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskRunning, Attempt: 1, Host: "w1:1"}}
	if err := st.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	d, err := c.GetInstance(ctx, inst.ID)
	if err != nil || d.ID != inst.ID || len(d.Tasks) != 1 || d.Tasks[0].Name != "a" {
		t.Fatalf("get instance %+v %v", d, err)
	}
	l, err := c.ListInstances(ctx, InstanceFilter{Project: "p", Workflow: "etl", State: "submitted", Limit: 10})
	if err != nil || l.Total != 1 || l.Limit != 10 || l.Items[0].ID != inst.ID {
		t.Fatalf("list instances %+v %v", l, err)
	}
	if ti, err := c.GetTaskInstance(ctx, tasks[0].ID); err != nil || ti.Host != "w1:1" {
		t.Fatalf("task instance %+v %v", ti, err)
	}
	var buf bytes.Buffer
	next, err := c.TaskLog(ctx, tasks[0].ID, 0, &buf)
	if err != nil || !bytes.Equal(buf.Bytes(), log) || next != int64(len(log)) {
		t.Fatalf("task log: %d bytes of %d, next %d, %v", buf.Len(), len(log), next, err)
	}
	page, next, err := c.TaskLogPage(ctx, tasks[0].ID, 16, 4)
	if err != nil || string(page) != "0123" || next != 20 {
		t.Fatalf("log page %q %d %v", page, next, err)
	}
	if raw, err := c.Cluster(ctx); err != nil || !strings.Contains(string(raw), `"leader":"m1"`) {
		t.Fatalf("cluster %s %v", raw, err)
	}

	var ae *APIError
	if err := c.DeleteWorkflow(ctx, "p", "etl"); !errors.As(err, &ae) || ae.Status != 409 || ae.Code != api.CodeConflict {
		t.Fatalf("delete with a live instance: %v", err)
	}
	if err := st.InstanceFinish(ctx, inst.ID, model.WorkflowStopped, inst.CreatedAt.Time, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteWorkflow(ctx, "p", "etl"); err != nil {
		t.Fatal(err)
	}
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, nil)
	ctx := context.Background()

	var ae *APIError
	_, err := c.GetProject(ctx, "nope")
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != api.CodeNotFound || !strings.Contains(ae.Message, "nope") || ae.RequestID == "" {
		t.Fatalf("404: %#v", err)
	}
	if _, err := c.CreateProject(ctx, "p", ""); err != nil {
		t.Fatal(err)
	}
	_, err = c.ApplyWorkflow(ctx, "p", []byte("name: w\ntasks:\n  - {name: a, command: x, depends_on: [a]}\n"))
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, "depends on itself") {
		t.Fatalf("bad spec: %v", err)
	}
	if _, err := c.ApplyWorkflow(ctx, "p", []byte("tasks: []\n")); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("nameless spec: %v", err)
	}
	if _, err := c.ApplyWorkflow(ctx, "p", []byte("name: [\n")); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "line") {
		t.Fatalf("unreadable spec: %v", err)
	}
	if _, err := c.ApplyWorkflowAs(ctx, "p", "named", []byte("tasks:\n  - {name: a, command: x}\n")); err != nil {
		t.Fatalf("apply as: %v", err)
	}
	_, _, err = c.TaskLogPage(ctx, 1, 0, 0)
	if !errors.As(err, &ae) || ae.Status != 503 {
		t.Fatalf("log without reader: %v", err)
	}

	// A non-API error body still becomes an APIError.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway from proxy", http.StatusBadGateway)
	}))
	defer plain.Close()
	err = NewClient(plain.URL, nil).Health(ctx)
	if !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "http_502" || ae.Message != "bad gateway from proxy" {
		t.Fatalf("plain error: %#v", err)
	}

	// A closed port is ErrUnreachable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := NewClient("http://"+addr, nil).Health(ctx); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("closed port: %v", err)
	}
}

func TestClientActionsAndTaskGroups(t *testing.T) {
	t.Parallel()
	c, st := setup(t, nil)
	ctx := context.Background()
	withWorkflow(t, c)
	inst, err := c.Run(ctx, "p", "etl", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := c.InstanceAction(ctx, inst.ID, "pause", "dana")
	if err != nil || acc.State != "ready_pause" || acc.CommandID == 0 || acc.InstanceID != inst.ID {
		t.Fatalf("pause %+v %v", acc, err)
	}
	var ae *APIError
	if _, err := c.InstanceAction(ctx, inst.ID, "stop", ""); !errors.As(err, &ae) || ae.Status != http.StatusConflict ||
		!strings.Contains(ae.Message, "ready_pause") {
		t.Fatalf("stop while pausing: %v", err)
	}
	d, err := c.GetInstance(ctx, inst.ID)
	if err != nil || len(d.History) != 1 || d.History[0].By != "admin" || d.History[0].Action != "pause" {
		t.Fatalf("history %+v %v", d.History, err)
	}

	tasks := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskRunning, Attempt: 1, TaskGroup: "g"}}
	if err := st.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	acc, err = c.TaskAction(ctx, tasks[0].ID, "kill", "")
	if err != nil || acc.TaskInstanceID == nil || *acc.TaskInstanceID != tasks[0].ID || acc.Action != "kill" {
		t.Fatalf("kill %+v %v", acc, err)
	}
	if _, err := c.TaskAction(ctx, tasks[0].ID, "force_success", ""); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("force a running task: %v", err)
	}

	g, err := c.CreateTaskGroup(ctx, "g", 3, "desc")
	if err != nil || g.Capacity != 3 || g.InUse != 1 || g.Description != "desc" {
		t.Fatalf("create group %+v %v", g, err)
	}
	if _, err := c.CreateTaskGroup(ctx, "g", 3, ""); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("duplicate group: %v", err)
	}
	if g, err = c.ResizeTaskGroup(ctx, "g", 1); err != nil || g.Capacity != 1 {
		t.Fatalf("resize %+v %v", g, err)
	}
	if g, err = c.GetTaskGroup(ctx, "g"); err != nil || g.Capacity != 1 || g.InUse != 1 {
		t.Fatalf("get %+v %v", g, err)
	}
	if gs, err := c.ListTaskGroups(ctx); err != nil || len(gs) != 1 {
		t.Fatalf("list %+v %v", gs, err)
	}
	if err := c.DeleteTaskGroup(ctx, "g"); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("delete in use: %v", err)
	}
	if err := c.DeleteTaskGroup(ctx, "nope"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("delete missing: %v", err)
	}
}

func TestClientSchedules(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, nil)
	ctx := context.Background()
	withWorkflow(t, c)
	req := ScheduleRequest{Cron: "0 2 * * *", Timezone: "Asia/Shanghai", StartTime: "2026-01-01T00:00:00Z",
		Catchup: "all", Priority: "high", WorkerGroup: "gpu", Params: map[string]string{"k": "v"}, By: "ann", Overlap: "wait"}
	s, created, err := c.PutSchedule(ctx, "p", "etl", req)
	if err != nil || !created || s.Cron != req.Cron || s.Overlap != "wait" || s.Priority != "high" || s.UpdatedBy != "admin" || !s.Enabled ||
		s.NextFireTime == nil || s.NextFireTime.Hour() != 18 || len(s.Upcoming) != 5 {
		t.Fatalf("create %+v %v %v", s, created, err)
	}

	// Read, change one field, put back: everything else stays.
	back := s.Request()
	disabled := false
	back.Enabled = &disabled
	got, created, err := c.PutSchedule(ctx, "p", "etl", back)
	if err != nil || created || got.Enabled || got.NextFireTime != nil || got.Revision != 1 || got.Timezone != s.Timezone ||
		got.Catchup != "all" || got.Overlap != "wait" || got.Priority != "high" || got.WorkerGroup != "gpu" || got.Params["k"] != "v" ||
		got.StartTime == nil || !got.StartTime.Equal(s.StartTime.Time) {
		t.Fatalf("disable %+v %v %v", got, created, err)
	}
	if got, err = c.GetSchedule(ctx, "p", "etl"); err != nil || got.Enabled || got.ID != s.ID {
		t.Fatalf("get %+v %v", got, err)
	}
	if l, err := c.ListSchedules(ctx, "p"); err != nil || len(l) != 1 || l[0].ID != s.ID {
		t.Fatalf("list p %+v %v", l, err)
	}
	if l, err := c.ListSchedules(ctx, ""); err != nil || len(l) != 1 {
		t.Fatalf("list all %+v %v", l, err)
	}
	if l, err := c.ListSchedules(ctx, "other"); err != nil || len(l) != 0 {
		t.Fatalf("list other %+v %v", l, err)
	}

	var ae *APIError
	if _, _, err := c.PutSchedule(ctx, "p", "etl", ScheduleRequest{Cron: "0 0 2 * * * *"}); !errors.As(err, &ae) ||
		ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "found 7") {
		t.Fatalf("bad cron: %v", err)
	}
	if _, _, err := c.PutSchedule(ctx, "p", "nope", ScheduleRequest{Cron: "@daily"}); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("missing workflow: %v", err)
	}
	if err := c.DeleteSchedule(ctx, "p", "etl"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSchedule(ctx, "p", "etl"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("get deleted: %v", err)
	}
	if err := c.DeleteSchedule(ctx, "p", "etl"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("delete deleted: %v", err)
	}
}

func TestClientBackfills(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, nil)
	ctx := context.Background()
	withWorkflow(t, c)
	two := 2
	req := BackfillRequest{Start: "2026-11-01T00:00:00Z", End: "2026-11-03T00:00:00Z", Cron: "@daily", Parallelism: &two,
		Order: "desc", OnFailure: "stop", Priority: "low", Params: map[string]string{"k": "v"}, By: "ann"}
	b, err := c.StartBackfill(ctx, "p", "etl", req)
	if err != nil || b.ID == 0 || b.Total != 3 || b.Parallelism != 2 || b.OnFailure != "stop" || b.Priority != "low" ||
		b.RequestedBy != "admin" || b.State != "running" || !b.Times[0].After(b.Times[2].Time) {
		t.Fatalf("start %+v %v", b, err)
	}
	if got, err := c.GetBackfill(ctx, b.ID); err != nil || got.ID != b.ID || len(got.Times) != 3 || got.Params["k"] != "v" {
		t.Fatalf("get %+v %v", got, err)
	}
	if l, err := c.ListBackfills(ctx, BackfillFilter{Project: "p", Workflow: "etl", State: "running"}); err != nil || len(l) != 1 {
		t.Fatalf("list %+v %v", l, err)
	}
	if l, err := c.ListBackfills(ctx, BackfillFilter{State: "done"}); err != nil || len(l) != 0 {
		t.Fatalf("list done %+v %v", l, err)
	}
	got, err := c.StopBackfill(ctx, b.ID, "bo")
	if err != nil || got.State != "stopped" || !strings.Contains(got.Reason, "stopped by admin") {
		t.Fatalf("stop %+v %v", got, err)
	}

	var ae *APIError
	if _, err := c.StopBackfill(ctx, b.ID, ""); !errors.As(err, &ae) || ae.Status != http.StatusConflict || !strings.Contains(ae.Message, "stopped") {
		t.Fatalf("second stop: %v", err)
	}
	if _, err := c.StartBackfill(ctx, "p", "etl", BackfillRequest{Start: "2026-11-01T00:00:00Z", End: "2026-11-03T00:00:00Z"}); !errors.As(err, &ae) ||
		ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "give a cron or set a schedule") {
		t.Fatalf("no cron: %v", err)
	}
	if _, err := c.GetBackfill(ctx, 999); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("get missing: %v", err)
	}
	if _, err := c.ListBackfills(ctx, BackfillFilter{State: "paused"}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("bad state: %v", err)
	}
}
