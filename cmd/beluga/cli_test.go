package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/authtest"
)

// env is an API server on a temp SQLite store. Before each poll of an
// instance it runs the next queued step, so a test plays the master one
// state change per poll and the CLI sees every change, without timing.
type env struct {
	t     *testing.T
	url   string
	store *store.Store
	dir   string

	mu    sync.Mutex
	steps []func()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "beluga.db"), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: st, dir: dir}
	box, err := secret.FromKey([]byte(strings.Repeat("k", 64)))
	if err != nil {
		t.Fatal(err)
	}
	// Every CLI call is the admin's unless it sends a token of its own.
	h := authtest.Wrap(api.NewHandler(api.Deps{Store: st, Logs: fixedLog("hello from the task\n"), Secrets: box}), authtest.Admin(t, st))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/api/v1/instances/") {
			e.mu.Lock()
			if len(e.steps) > 0 {
				e.steps[0]()
				e.steps = e.steps[1:]
			}
			e.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

type fixedLog string

func (l fixedLog) ReadLog(_ context.Context, _ model.TaskInstance, offset, limit int64) ([]byte, error) {
	if offset >= int64(len(l)) {
		return nil, nil
	}
	return []byte(l[offset:min(offset+limit, int64(len(l)))]), nil
}

// cli runs one command line against the env and returns its exit code and
// output.
func (e *env) cli(args ...string) (code int, stdout, stderr string) {
	return e.cliIn("", args...)
}

func (e *env) cliIn(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = execute(context.Background(), append([]string{"--server", e.url}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// want runs a command and checks its exit code and that stdout contains
// each of contains.
func (e *env) want(code int, args []string, contains ...string) string {
	e.t.Helper()
	got, out, errOut := e.cli(args...)
	if got != code {
		e.t.Fatalf("beluga %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errOut)
	}
	for _, c := range contains {
		if !strings.Contains(out+errOut, c) {
			e.t.Fatalf("beluga %s: output lacks %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), c, out, errOut)
		}
	}
	if code != 0 && (strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "beluga: ")) {
		e.t.Fatalf("beluga %s: stderr must be one line starting with 'beluga: ', got %q", strings.Join(args, " "), errOut)
	}
	return out
}

func (e *env) file(name, content string) string {
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// etlRun creates project p, applies etl to it and starts a run of it.
func (e *env) etlRun() model.WorkflowInstance {
	e.t.Helper()
	e.want(0, []string{"project", "create", "p"})
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl.yaml", etl)})
	inst, err := e.store.InstanceCreateRun(context.Background(), store.RunRequest{Project: "p", Workflow: "nightly_etl"})
	if err != nil {
		e.t.Fatal(err)
	}
	return inst
}

const etl = `name: nightly_etl
params: {bizdate: "20260101"}
tasks:
  - name: extract
    command: echo extract ${bizdate}
    retries: 1
    retry_interval: 30s
  - name: load
    command: echo load
    depends_on: [extract]
`

func TestProjectCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "demo", "--description", "the demo"}, "project demo created")
	e.want(1, []string{"project", "create", "demo"}, "exists")
	e.want(2, []string{"project", "create", "a/b"}, "not valid")
	out := e.want(0, []string{"project", "list"}, "NAME", "demo", "the demo")
	if strings.Count(out, "\n") != 2 {
		t.Fatalf("project list:\n%s", out)
	}
	var list api.List[api.Project]
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "project", "list"})), &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("json list %+v %v", list, err)
	}
	e.want(0, []string{"project", "get", "demo"}, "the demo")
	e.want(1, []string{"project", "get", "nope"}, `project "nope": not found`)
}

func TestWorkflowCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	spec := e.file("etl.yaml", etl)
	p := []string{"--project", "p"}
	w := func(args ...string) []string { return append(append([]string{"workflow"}, args...), p...) }

	e.want(0, w("apply", "-f", spec), "workflow p/nightly_etl: created version 1")
	e.want(0, w("apply", "-f", spec), "workflow p/nightly_etl: unchanged (version 1)")
	e.want(0, w("apply", "-f", e.file("etl2.yaml", strings.Replace(etl, "echo load", "echo load2", 1))), "created version 2")

	// Input errors exit 2 and print the server's message.
	bad := e.file("bad.yaml", "name: bad\ntasks:\n  - {name: a, command: x, depends_on: [zz]}\n")
	e.want(2, w("apply", "-f", bad), `depends_on names unknown task "zz"`)
	e.want(2, w("apply", "-f", e.file("noname.yaml", "tasks:\n  - {name: a, command: x}\n")), "no name")
	e.want(0, w("apply", "-f", filepath.Join(e.dir, "noname.yaml"), "--name", "adhoc"), "p/adhoc: created version 1")
	e.want(2, w("apply", "-f", filepath.Join(e.dir, "missing.yaml")), "no such file")
	e.want(2, w("apply"), "-f FILE is required")
	e.want(2, []string{"workflow", "apply", "-f", spec}, "--project is required")
	e.want(1, []string{"workflow", "apply", "-f", spec, "--project", "nope"}, `project "nope": not found`)
	if code, out, _ := e.cliIn(strings.Replace(etl, "nightly_etl", "from_stdin", 1), w("apply", "-f", "-")...); code != 0 ||
		!strings.Contains(out, "p/from_stdin: created version 1") {
		t.Fatalf("apply from stdin: %d %s", code, out)
	}
	if code, out, _ := e.cliIn(`{"name":"js","tasks":[{"name":"a","command":"x"}]}`, w("-o", "json", "apply", "-f", "-")...); code != 0 ||
		!strings.Contains(out, `"created": true`) {
		t.Fatalf("apply JSON: %d %s", code, out)
	}

	out := e.want(0, w("list"), "NAME", "nightly_etl", "adhoc", "from_stdin")
	if !regexp.MustCompile(`nightly_etl\s+2\s`).MatchString(out) {
		t.Fatalf("list:\n%s", out)
	}
	// One page at a time by name: adhoc, from_stdin | js, nightly_etl.
	out = e.want(0, w("list", "--limit", "2"), "adhoc", "from_stdin", "next page: --cursor ")
	cursor := strings.TrimSpace(out[strings.LastIndex(out, "--cursor ")+len("--cursor "):])
	out = e.want(0, w("list", "--limit", "2", "--cursor", cursor), "js", "nightly_etl")
	if strings.Contains(out, "adhoc") || strings.Contains(out, "next page") {
		t.Fatalf("second page:\n%s", out)
	}
	out = e.want(0, w("list", "--prefix", "from"), "from_stdin")
	if strings.Contains(out, "adhoc") {
		t.Fatalf("prefix from:\n%s", out)
	}
	e.want(2, w("list", "--cursor", "!!"), "cursor") // a 400 is a usage error
	out = e.want(0, w("versions", "nightly_etl"), "VERSION")
	if strings.Index(out, "\n2 ") > strings.Index(out, "\n1 ") {
		t.Fatalf("versions not newest first:\n%s", out)
	}
	e.want(1, w("versions", "nope"), "not found")

	// get prints YAML that applies back unchanged.
	e.want(0, w("get", "nightly_etl", "--version", "1"), "# workflow p/nightly_etl version 1", "retry_interval: 30s", "echo load\n")
	out = e.want(0, w("get", "nightly_etl"), "# workflow p/nightly_etl version 2", "echo load2")
	e.want(0, w("apply", "-f", e.file("back.yaml", out)), "unchanged (version 2)")
	e.want(1, w("get", "nightly_etl", "--version", "9"), "not found")
	var wf api.Workflow
	if err := json.Unmarshal([]byte(e.want(0, w("-o", "json", "get", "nightly_etl"))), &wf); err != nil || wf.Version != 2 || len(wf.Spec) == 0 {
		t.Fatalf("json get %+v %v", wf, err)
	}

	out = e.want(0, w("run", "nightly_etl", "--param", "bizdate=20260303", "--priority", "high"), "submitted (p/nightly_etl version 2)")
	id := regexp.MustCompile(`instance (\d+)`).FindStringSubmatch(out)[1]
	e.want(2, w("run", "nightly_etl", "--param", "novalue"), "use NAME=VALUE")
	e.want(2, w("run", "nightly_etl", "--param", "1x=a"), "environment variable")
	e.want(2, w("run", "nightly_etl", "--priority", "urgent"), "urgent")
	e.want(1, w("run", "nope"), "not found")

	e.want(1, w("delete", "nightly_etl"), "unfinished")
	e.want(0, w("delete", "adhoc"), "workflow p/adhoc deleted")
	e.want(1, w("delete", "adhoc"), "not found")

	e.want(0, []string{"instance", "list"}, "ID", "nightly_etl", "submitted")
	e.want(0, []string{"instance", "list", "--project", "p", "--state", "submitted", "--limit", "5"}, id)
	e.want(2, []string{"instance", "list", "--state", "bogus"}, "not a workflow state")
	e.want(2, []string{"instance", "list", "--limit", "5000"}, "limit")
	e.want(0, []string{"instance", "show", id}, "INSTANCE", "p/nightly_etl version 2", "bizdate=20260303", "TASK ID")
	var d api.InstanceDetail
	if err := json.Unmarshal([]byte(e.want(0, []string{"instance", "show", id, "-o", "json"})), &d); err != nil || d.Priority != "high" {
		t.Fatalf("json show %+v %v", d, err)
	}
	e.want(2, []string{"instance", "show", "abc"}, "positive number")
	e.want(1, []string{"instance", "show", "999"}, "not found")
}

func TestTaskLogCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	inst := e.etlRun()
	tasks := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning, Attempt: 1, Host: "w1:1"}}
	if err := e.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	id := itoa(tasks[0].ID)
	if out := e.want(0, []string{"task", "log", id}); out != "hello from the task\n" {
		t.Fatalf("log %q", out)
	}
	if out := e.want(0, []string{"task", "log", id, "--offset", "6"}); out != "from the task\n" {
		t.Fatalf("log from 6: %q", out)
	}
	e.want(0, []string{"task", "show", id}, "extract", "w1:1")
	e.want(1, []string{"task", "log", "999"}, "not found")
	e.want(2, []string{"task", "log", "x"}, "positive number")
	e.want(2, []string{"task", "log", id, "--stream", "err"}, `--stream "err": want all, stdout or stderr`)
}

func TestUsageAndExitCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(2, []string{"--bogus"}, "unknown flag: --bogus")
	e.want(2, []string{"frob"}, `unknown command "frob"`)
	e.want(2, []string{"workflow", "frob"}, `unknown command "frob"`)
	e.want(2, []string{"project", "create"}, "needs NAME")
	e.want(2, []string{"project", "create", "a", "b"}, "takes 1 argument")
	e.want(2, []string{"-o", "xml", "project", "list"}, `-o "xml"`)
	e.want(0, []string{"--help"}, "workflow")
	e.want(0, []string{"workflow", "run", "--help"}, "--wait")
	e.want(1, []string{"cluster"}, "no cluster view")

	// A closed port: exit 3.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var out, errb bytes.Buffer
	if code := run([]string{"--server", "http://" + addr, "project", "list"}, &out, &errb); code != 3 ||
		!strings.HasPrefix(errb.String(), "beluga: cannot reach the server at http://"+addr) {
		t.Fatalf("unreachable: exit %d, stderr %q", code, errb.String())
	}
}

// master plays the master's side of one run, one step per poll.
type master struct {
	t     *testing.T
	st    *store.Store
	inst  int64
	tasks map[string]*model.TaskInstance
}

func (m *master) check(err error) {
	if err != nil {
		m.t.Error(err) // not Fatal: this runs on a server goroutine
	}
}

func (m *master) claim() {
	got, err := m.st.InstanceClaimCommands(context.Background(), "m1:5678", 1, 10)
	m.check(err)
	if len(got) == 1 {
		m.inst = got[0].ID
	}
}

func (m *master) submit(key, name string, attempt int) {
	now := time.Now().UTC()
	ti := &model.TaskInstance{WorkflowInstanceID: m.inst, Name: name, Type: "shell", State: model.TaskSubmitted, Attempt: attempt, SubmitTime: &now}
	m.check(m.st.TaskInsert(context.Background(), []*model.TaskInstance{ti}))
	m.tasks[key] = ti
}

func (m *master) dispatch(key string) {
	_, err := m.st.TaskMarkDispatched(context.Background(), []model.Dispatch{{ID: m.tasks[key].ID, Host: "w1:1234", Time: time.Now()}})
	m.check(err)
}

func (m *master) report(key string, kind model.ReportKind, st model.TaskState, exit int) {
	now := time.Now()
	_, err := m.st.TaskApplyReports(context.Background(), []model.Report{{ID: m.tasks[key].ID, Kind: kind, Host: "w1:1234",
		PID: 99, State: st, ExitCode: exit, StartTime: now, EndTime: now}})
	m.check(err)
}

func (m *master) finish(st model.WorkflowState, reason string) {
	m.check(m.st.InstanceFinish(context.Background(), m.inst, st, time.Now(), reason))
}

func TestRunWaitSucceeded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl.yaml", etl)})
	m := &master{t: t, st: e.store, tasks: map[string]*model.TaskInstance{}}
	e.steps = []func(){
		func() { m.claim(); m.submit("a", "extract", 1) },
		func() { m.dispatch("a") },
		func() { m.report("a", model.ReportRunning, "", 0) },
		func() { m.report("a", model.ReportResult, model.TaskSucceeded, 0); m.submit("b1", "load", 1) },
		func() { m.dispatch("b1"); m.report("b1", model.ReportRunning, "", 0) },
		func() { m.report("b1", model.ReportResult, model.TaskFailed, 1) },
		func() {
			m.submit("b2", "load", 2)
			m.dispatch("b2")
			m.report("b2", model.ReportResult, model.TaskSucceeded, 0)
			m.finish(model.WorkflowSucceeded, "")
		},
	}
	out := e.want(0, []string{"workflow", "run", "nightly_etl", "-p", "p", "--wait"}, "instance 1 submitted")
	want := []string{
		`extract +attempt 1 +- +-> submitted +-`,
		`extract +attempt 1 +submitted +-> dispatched +w1:1234`,
		`extract +attempt 1 +dispatched +-> running +w1:1234`,
		`extract +attempt 1 +running +-> succeeded +w1:1234`,
		`load +attempt 1 +- +-> submitted +-`,
		`load +attempt 1 +submitted +-> running +w1:1234`,
		`load +attempt 1 +running +-> failed +w1:1234`,
		`load +attempt 2 +- +-> succeeded +w1:1234`,
		`instance 1 succeeded in `,
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  `)
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(lines[i]) || i < len(want)-1 && !stamp.MatchString(lines[i]) {
			t.Fatalf("line %d = %q, want %q\n%s", i, lines[i], w, out)
		}
	}
}

func TestRunWaitFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl.yaml", etl)})
	m := &master{t: t, st: e.store, tasks: map[string]*model.TaskInstance{}}
	e.steps = []func(){
		func() {
			m.claim()
			m.submit("a", "extract", 1)
			m.dispatch("a")
			m.report("a", model.ReportResult, model.TaskFailed, 2)
			m.finish(model.WorkflowFailed, `task "extract" failed`)
		},
	}
	code, out, errOut := e.cli("workflow", "run", "nightly_etl", "-p", "p", "--wait", "--param", "bizdate=1")
	if code != 1 || !strings.Contains(out, "extract") || !strings.Contains(out, `instance 1 failed in `) ||
		!strings.Contains(out, `: task "extract" failed`) || errOut != "beluga: instance 1 ended failed\n" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// -o json: one event per line, then the final instance.
	e.mu.Lock()
	e.steps = []func(){func() {
		m.claim()
		m.submit("x", "extract", 1)
		m.finish(model.WorkflowStopped, "stopped by user")
	}}
	e.mu.Unlock()
	code, out, _ = e.cli("-o", "json", "workflow", "run", "nightly_etl", "-p", "p", "--wait")
	dec := json.NewDecoder(strings.NewReader(out))
	var ev taskEvent
	var final api.InstanceDetail
	if code != 1 || dec.Decode(&ev) != nil || ev.Task != "extract" || ev.To != "submitted" || dec.Decode(&final) != nil || final.State != "stopped" {
		t.Fatalf("json wait: exit %d\n%s", code, out)
	}
}

func TestActionCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	inst := e.etlRun()
	if _, err := e.store.InstanceClaimCommands(ctx, "m1:1", 1, 10); err != nil {
		t.Fatal(err)
	}
	id := itoa(inst.ID)

	e.want(0, []string{"instance", "pause", id, "--by", "ed"}, "instance "+id+": pause requested (command ", "instance state ready_pause")
	e.want(1, []string{"instance", "stop", id}, "it is ready_pause")
	e.want(0, []string{"instance", "show", id}, "HISTORY", "pause", "ed", "requested; instance running -> ready_pause")
	e.want(2, []string{"instance", "stop", "abc"}, "positive number")
	e.want(2, []string{"instance", "stop"}, "needs ID")
	e.want(1, []string{"instance", "stop", "999"}, "workflow instance 999: not found")

	if err := e.store.InstanceFinish(ctx, inst.ID, model.WorkflowFailed, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	e.want(1, []string{"instance", "resume", id}, "it is failed")
	var acc api.ActionAccepted
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "instance", "rerun", id})), &acc); err != nil ||
		acc.Action != "rerun" || acc.State != "failed" || acc.InstanceID != inst.ID {
		t.Fatalf("json rerun %+v %v", acc, err)
	}
	e.want(1, []string{"instance", "recover-failed", id}, "still waiting for the master")
	if _, err := e.store.ActionClaim(ctx, 10); err != nil {
		t.Fatal(err)
	}
	e.want(0, []string{"instance", "recover-failed", id, "--by", "fay"}, "recover_failed requested")

	tasks := []*model.TaskInstance{
		{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning, Attempt: 1, Host: "w1:1"},
		{WorkflowInstanceID: inst.ID, Name: "load", Type: "shell", State: model.TaskKilled, Attempt: 1, Host: "w1:1"},
	}
	if err := e.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	running, killed := itoa(tasks[0].ID), itoa(tasks[1].ID)
	e.want(0, []string{"task", "kill", running, "--by", "gus"}, "task instance "+running+" (instance "+id+"): kill requested")
	e.want(1, []string{"task", "force-success", running}, "it is running")
	e.want(0, []string{"task", "force-success", killed}, "force_success requested")
	e.want(1, []string{"task", "kill", "999"}, "task instance 999: not found")
	e.want(2, []string{"task", "kill", "x"}, "positive number")

	out := e.want(0, []string{"instance", "show", id}, "admin")
	if !regexp.MustCompile(`kill\s+admin\s+` + running + `\s+requested; task extract attempt 1 running`).MatchString(out) {
		t.Fatalf("history table:\n%s", out)
	}
	var d api.InstanceDetail
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "instance", "show", id})), &d); err != nil || len(d.History) != 5 {
		t.Fatalf("json show history %+v %v", d.History, err)
	}
}

func TestTaskGroupCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.want(0, []string{"task-group", "create", "db", "--capacity", "2", "--description", "the warehouse"}, "task group db created (capacity 2)")
	e.want(1, []string{"task-group", "create", "db", "--capacity", "2"}, `task group "db" exists`)
	e.want(2, []string{"task-group", "create", "x"}, "--capacity N is required")
	e.want(2, []string{"task-group", "create", "x", "--capacity", "0"}, "capacity must be an integer from 1")
	e.want(2, []string{"task-group", "create", "x", "--capacity", "many"}, "invalid argument")
	e.want(2, []string{"task-group", "create", "a/b", "--capacity", "1"}, "not valid")

	// A running task of the group is its use and blocks deletion.
	inst := e.etlRun()
	tasks := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning, Attempt: 1, TaskGroup: "db"}}
	if err := e.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	out := e.want(0, []string{"task-group", "list"}, "NAME", "CAPACITY", "IN USE", "the warehouse")
	if !regexp.MustCompile(`db\s+2\s+1\s`).MatchString(out) {
		t.Fatalf("list:\n%s", out)
	}
	var list api.List[api.TaskGroup]
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "task-group", "list"})), &list); err != nil || len(list.Items) != 1 || list.Items[0].InUse != 1 {
		t.Fatalf("json list %+v %v", list, err)
	}

	e.want(0, []string{"task-group", "resize", "db", "5"}, "task group db: capacity 5 (1 in use)")
	e.want(2, []string{"task-group", "resize", "db", "x"}, "whole number")
	e.want(2, []string{"task-group", "resize", "db", "0"}, "capacity must be")
	e.want(2, []string{"task-group", "resize", "db"}, "needs N")
	e.want(1, []string{"task-group", "resize", "nope", "3"}, `task group "nope": not found`)

	e.want(1, []string{"task-group", "delete", "db"}, "dispatched or running")
	if _, err := e.store.TaskSetStates(ctx, []int64{tasks[0].ID}, []model.TaskState{model.TaskRunning}, model.TaskSucceeded); err != nil {
		t.Fatal(err)
	}
	e.want(0, []string{"task-group", "delete", "db"}, "task group db deleted")
	e.want(1, []string{"task-group", "delete", "db"}, "not found")
	e.want(2, []string{"task-group", "frob"}, `unknown command "frob"`)
}

func TestScheduleCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl.yaml", etl)})
	s := func(args ...string) []string { return append(append([]string{"schedule"}, args...), "-p", "p") }
	set := func(args ...string) []string { return s(append([]string{"set", "nightly_etl"}, args...)...) }

	// Bad input exits 2 naming the problem and stores nothing.
	e.want(2, set(), "--cron EXPR is required")
	e.want(2, []string{"schedule", "set", "nightly_etl", "--cron", "@daily"}, "--project is required")
	e.want(2, s("set", "--cron", "@daily"), "needs NAME")
	e.want(2, set("--cron", "0 0 2 * * * *"), "found 7")
	e.want(2, set("--cron", "CRON_TZ=Asia/Shanghai 0 2 * * *"), "give the zone in timezone")
	e.want(2, set("--cron", "@daily", "--timezone", "Mars/Base"), `timezone "Mars/Base"`)
	e.want(2, set("--cron", "@daily", "--start", "yesterday"), `--start "yesterday": use an RFC 3339 time`)
	e.want(2, set("--cron", "@daily", "--start", "2026-02-01T00:00:00Z", "--end", "2026-01-01T00:00:00Z"), "must be after start_time")
	e.want(2, set("--cron", "@daily", "--catchup", "sometimes"), `catchup "sometimes"`)
	e.want(2, set("--cron", "@daily", "--priority", "urgent"), `priority "urgent"`)
	e.want(2, set("--cron", "@daily", "--param", "novalue"), "use NAME=VALUE")
	e.want(2, set("--cron", "@daily", "--param", "1x=a"), "environment variable")
	e.want(1, s("set", "nope", "--cron", "@daily"), `workflow "nope"`)
	e.want(2, []string{"schedule", "frob"}, `unknown command "frob"`)
	if out := e.want(0, []string{"schedule", "list"}, "PROJECT"); strings.Count(out, "\n") != 1 {
		t.Fatalf("rejected schedules were stored:\n%s", out)
	}

	// 02:00 in Shanghai is 18:00 UTC.
	e.want(0, set("--cron", "0 2 * * *", "--timezone", "Asia/Shanghai", "--param", "bizdate=x", "--priority", "high",
		"--worker-group", "gpu", "--catchup", "all", "--by", "ann"),
		"schedule of p/nightly_etl created; next fire ", " 18:00:00 UTC (", " 02:00:00 CST)")
	out := e.want(0, s("show", "nightly_etl"), "SCHEDULE", "p/nightly_etl", "0 2 * * *", "Asia/Shanghai", "bizdate=x",
		"high", "gpu", "all", "by admin", "UPCOMING (UTC)", "IN Asia/Shanghai")
	if n := len(regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d 18:00:00\s+\d{4}-\d\d-\d\d 02:00:00 CST$`).FindAllString(out, -1)); n != 5 {
		t.Fatalf("%d upcoming rows, want 5:\n%s", n, out)
	}
	var sc api.Schedule
	if err := json.Unmarshal([]byte(e.want(0, s("-o", "json", "show", "nightly_etl"))), &sc); err != nil ||
		len(sc.Upcoming) != 5 || sc.Priority != "high" || sc.NextFireTime == nil {
		t.Fatalf("json show %+v %v", sc, err)
	}

	// disable and enable keep the rest of the schedule.
	e.want(0, s("disable", "nightly_etl"), "schedule of p/nightly_etl disabled")
	e.want(0, s("disable", "nightly_etl"), "schedule of p/nightly_etl already disabled")
	out = e.want(0, s("show", "nightly_etl"), "gpu", "bizdate=x")
	if !regexp.MustCompile(`enabled\s+false`).MatchString(out) || strings.Contains(out, "UPCOMING") {
		t.Fatalf("disabled show:\n%s", out)
	}
	e.want(0, s("enable", "nightly_etl"), "schedule of p/nightly_etl enabled; next fire ", "CST)")
	if err := json.Unmarshal([]byte(e.want(0, s("-o", "json", "show", "nightly_etl"))), &sc); err != nil ||
		!sc.Enabled || sc.WorkerGroup != "gpu" || sc.Catchup != "all" || sc.Params["bizdate"] != "x" || sc.Revision != 2 {
		t.Fatalf("after enable %+v %v", sc, err)
	}
	e.want(1, s("enable", "nope"), "not found")

	// set replaces the whole schedule.
	e.want(0, set("--cron", "@hourly", "--disabled"), "schedule of p/nightly_etl replaced; disabled")
	e.want(0, s("show", "nightly_etl"), "@hourly", "(the workflow's)", "latest")

	// list: every project, or one.
	e.want(0, []string{"project", "create", "q"})
	e.want(0, []string{"workflow", "apply", "-p", "q", "-f", filepath.Join(e.dir, "etl.yaml")})
	e.want(0, []string{"schedule", "set", "nightly_etl", "-p", "q", "--cron", "30 6 * * 1-5"}, "created")
	out = e.want(0, []string{"schedule", "list"}, "PROJECT", "WORKFLOW", "NEXT FIRE (UTC)", "30 6 * * 1-5", "@hourly")
	if !regexp.MustCompile(`q\s+nightly_etl\s+30 6 \* \* 1-5\s+UTC\s+true\s+\d{4}-`).MatchString(out) {
		t.Fatalf("list:\n%s", out)
	}
	if out := e.want(0, []string{"schedule", "list", "-p", "q"}); strings.Contains(out, "@hourly") || strings.Count(out, "\n") != 2 {
		t.Fatalf("list -p q:\n%s", out)
	}
	var list api.List[api.Schedule]
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "schedule", "list"})), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("json list %+v %v", list, err)
	}

	// overlap: set, shown, kept by disable/enable; bad values name the problem.
	e.want(0, set("--cron", "@hourly", "--overlap", "wait"), "replaced")
	e.want(0, s("disable", "nightly_etl"), "disabled")
	e.want(0, s("enable", "nightly_etl"), "enabled")
	if out := e.want(0, s("show", "nightly_etl")); !regexp.MustCompile(`overlap\s+wait`).MatchString(out) {
		t.Fatalf("show after --overlap wait:\n%s", out)
	}
	e.want(2, set("--cron", "@hourly", "--overlap", "queue"), `overlap "queue" is not valid: use allow (the default), skip, wait or replace`)
	e.want(2, set("--cron", "@every 0s"), "@every 0s is below the 1s minimum")
	e.want(0, s("show", "nightly_etl"), "wait")

	e.want(0, s("delete", "nightly_etl"), "schedule of p/nightly_etl deleted")
	e.want(1, s("delete", "nightly_etl"), "not found")
	e.want(1, s("show", "nightly_etl"), `schedule of workflow "nightly_etl" in project "p": not found`)
}

func TestBackfillCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.want(0, []string{"project", "create", "p"})
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl.yaml", etl)})
	bf := func(args ...string) []string { return append(append([]string{"backfill"}, args...), "-p", "p") }
	start := func(args ...string) []string { return bf(append([]string{"start", "nightly_etl"}, args...)...) }
	nov := []string{"--from", "2026-11-01", "--to", "2026-11-30"}

	// Bad input exits 2 naming the problem and stores nothing.
	e.want(2, start("--cron", "@daily"), "--from and --to are required")
	e.want(2, []string{"backfill", "start", "nightly_etl", "--from", "2026-11-01", "--to", "2026-11-02", "--cron", "@daily"}, "--project is required")
	e.want(2, bf("start", "--from", "2026-11-01", "--to", "2026-11-02"), "needs NAME")
	e.want(2, start("--from", "Nov 1", "--to", "2026-11-30", "--cron", "@daily"), `--from "Nov 1": use a date such as 2026-11-01`)
	e.want(2, start("--from", "2026-11-01", "--to", "2026-11-31", "--cron", "@daily"), `--to "2026-11-31"`)
	e.want(2, start(append(nov, "--cron", "@daily", "--timezone", "Mars/Base")...), `timezone "Mars/Base"`)
	e.want(2, start(nov...), "give a cron or set a schedule")
	e.want(2, start(append(nov, "--cron", "@daily", "--parallelism", "0")...), "parallelism 0 is not valid")
	e.want(2, start(append(nov, "--cron", "@daily", "--order", "random")...), `order "random"`)
	e.want(2, start(append(nov, "--cron", "@daily", "--on-failure", "retry")...), `on_failure "retry"`)
	e.want(2, start(append(nov, "--cron", "@daily", "--param", "novalue")...), "use NAME=VALUE")
	e.want(2, start("--from", "2026-01-01", "--to", "2026-03-31", "--cron", "@hourly"), "has 2160 schedule times", "at most 1000 runs per backfill; narrow the range")
	e.want(2, start("--from", "2026-11-02", "--to", "2026-11-01", "--cron", "@daily"), "end 2026-11-01T23:59:59Z is before start 2026-11-02T00:00:00Z")
	e.want(1, bf("start", "nope", "--from", "2026-11-01", "--to", "2026-11-02", "--cron", "@daily"), `workflow "nope"`)
	e.want(2, []string{"backfill", "frob"}, `unknown command "frob"`)
	if out := e.want(0, []string{"backfill", "list"}, "ID", "STATE", "SUBMITTED"); strings.Count(out, "\n") != 1 {
		t.Fatalf("rejected backfills were stored:\n%s", out)
	}

	// Dates are read in the cron's zone; --to includes its whole day.
	e.want(0, start(append(nov, "--cron", "0 2 * * *", "--timezone", "Asia/Shanghai", "--by", "ann")...),
		"backfill 1 of p/nightly_etl started: 30 run(s), 1 at a time, first 2026-10-31 18:00:00 UTC (2026-11-01 02:00:00 CST), "+
			"last 2026-11-29 18:00:00 UTC (2026-11-30 02:00:00 CST)")
	// Without --cron: the schedule's cron and zone, for the dates too.
	e.want(0, []string{"schedule", "set", "nightly_etl", "-p", "p", "--cron", "0 2 * * *", "--timezone", "Asia/Shanghai"})
	e.want(0, start("--from", "2026-11-01", "--to", "2026-11-03", "--order", "desc", "--parallelism", "2", "--on-failure", "stop",
		"--priority", "high", "--param", "bizdate=$[yyyyMMdd]"),
		"backfill 2 of p/nightly_etl started: 3 run(s), 2 at a time, first 2026-11-02 18:00:00 UTC (2026-11-03 02:00:00 CST), "+
			"last 2026-10-31 18:00:00 UTC (2026-11-01 02:00:00 CST)")
	var b api.Backfill
	if err := json.Unmarshal([]byte(e.want(0, start("-o", "json", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-01T23:59:59Z",
		"--cron", "@hourly", "--dry-run"))), &b); err != nil || b.ID != 3 || b.Total != 24 || !b.DryRun || b.Timezone != "" {
		t.Fatalf("json start %+v %v", b, err)
	}

	// The master submits two times of backfill 2: show lists their runs.
	m, err := e.store.BackfillGet(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	insts, err := e.store.BackfillSubmit(ctx, m, 2)
	if err != nil || len(insts) != 2 {
		t.Fatalf("submit %v %v", insts, err)
	}
	out := e.want(0, []string{"backfill", "show", "2"}, "BACKFILL", "p/nightly_etl", "0 2 * * *", "Asia/Shanghai",
		"2 of 3 submitted: 0 succeeded, 0 failed, 2 unfinished", "stop", "high", "bizdate=$[yyyyMMdd]",
		"SCHEDULE TIME (UTC)", "IN Asia/Shanghai", "INSTANCE")
	for i, want := range []string{
		`1\s+2026-11-02 18:00:00\s+2026-11-03 02:00:00 CST\s+` + itoa(insts[0].ID) + `\s+submitted`,
		`2\s+2026-11-01 18:00:00\s+2026-11-02 02:00:00 CST\s+` + itoa(insts[1].ID) + `\s+submitted`,
		`3\s+2026-10-31 18:00:00\s+2026-11-01 02:00:00 CST\s+-\s+not submitted`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("show: time %d does not match %q:\n%s", i+1, want, out)
		}
	}
	e.want(0, []string{"instance", "show", itoa(insts[0].ID)}, "backfill by backfill 2 for 2026-11-02 18:00:00 UTC")
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "backfill", "show", "2"})), &b); err != nil ||
		b.Submitted != 2 || len(b.Times) != 3 || b.Progress.Unfinished != 2 {
		t.Fatalf("json show %+v %v", b, err)
	}

	// list: every project, one, by workflow and state.
	out = e.want(0, []string{"backfill", "list"}, "CREATED (UTC)")
	if !regexp.MustCompile(`(?m)^2\s+p\s+nightly_etl\s+running\s+2/3\s+0\s+0\s+2\s+\d{4}-`).MatchString(out) || strings.Count(out, "\n") != 4 {
		t.Fatalf("list:\n%s", out)
	}
	e.want(0, []string{"backfill", "list", "-p", "p", "--workflow", "nightly_etl", "--state", "running"}, "2/3", "0/30", "admin")
	e.want(2, []string{"backfill", "list", "--state", "paused"}, `"paused" is not a backfill state`)
	var list api.List[api.Backfill]
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "backfill", "list", "-p", "p"})), &list); err != nil || len(list.Items) != 3 {
		t.Fatalf("json list %+v %v", list, err)
	}

	// stop: once; then it is not running.
	e.want(0, []string{"backfill", "stop", "2", "--by", "bo"}, "backfill 2 stopped: 2 of 3 time(s) were submitted; its 2 unfinished run(s) go on")
	e.want(1, []string{"backfill", "stop", "2"}, "backfill 2 is stopped, not running")
	e.want(0, []string{"backfill", "show", "2"}, "stopped by admin after 2 of 3")
	if out := e.want(0, []string{"backfill", "list", "--state", "stopped"}); strings.Count(out, "\n") != 2 {
		t.Fatalf("list stopped:\n%s", out)
	}
	e.want(1, []string{"backfill", "stop", "999"}, "backfill 999: not found")
	e.want(1, []string{"backfill", "show", "999"}, "backfill 999: not found")
	e.want(2, []string{"backfill", "stop", "x"}, "positive number")
	e.want(2, []string{"backfill", "show"}, "needs ID")
}

// TestTaskShowParamsOutputs: `task show` lists what an attempt ran with and
// what it exported; `instance show` lists each task's params and every
// output with the task that produced it.
func TestTaskShowParamsOutputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	inst := e.etlRun()
	now := time.Now().UTC()
	ex := 0
	tasks := []*model.TaskInstance{
		{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskSucceeded, Attempt: 1, Host: "w1:1",
			StartTime: &now, EndTime: &now, ExitCode: &ex,
			Params:  map[string]string{"bizdate": "20260101", "BELUGA_TASK_NAME": "extract"},
			Outputs: map[string]string{"rows": "42", "path": "/data/out 1.csv", "note": "two\nlines"}},
		{WorkflowInstanceID: inst.ID, Name: "load", Type: "python", State: model.TaskRunning, Attempt: 1, Host: "w2:1",
			Params: map[string]string{"bizdate": "20260101", "rows": "42", "BELUGA_TASK_NAME": "load"}},
	}
	if err := e.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	ext, load := itoa(tasks[0].ID), itoa(tasks[1].ID)

	out := e.want(0, []string{"task", "show", ext}, "extract", "shell", "w1:1", "succeeded")
	for _, re := range []string{`(?m)^PARAM\s+VALUE$`, `(?m)^BELUGA_TASK_NAME\s+extract$`, `(?m)^bizdate\s+20260101$`,
		`(?m)^OUTPUT\s+VALUE$`, `(?m)^note\s+"two\\nlines"$`, `(?m)^path\s+/data/out 1\.csv$`, `(?m)^rows\s+42$`, `(?m)^duration\s+0s$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("task show lacks %s:\n%s", re, out)
		}
	}
	out = e.want(0, []string{"task", "show", load}, "python", "running")
	if !regexp.MustCompile(`(?m)^rows\s+42$`).MatchString(out) || !strings.Contains(out, "(no outputs)") {
		t.Fatalf("task show of a running task:\n%s", out)
	}
	var ti api.TaskInstance
	if err := json.Unmarshal([]byte(e.want(0, []string{"-o", "json", "task", "show", ext})), &ti); err != nil ||
		ti.Outputs["rows"] != "42" || ti.Params["bizdate"] != "20260101" {
		t.Fatalf("json task show %+v %v", ti, err)
	}

	out = e.want(0, []string{"instance", "show", itoa(inst.ID)})
	for _, re := range []string{
		`(?m)^OUTPUT\s+VALUE\s+TASK\s+TASK ID$`,
		`(?m)^path\s+/data/out 1\.csv\s+extract\s+` + ext + `$`,
		`(?m)^rows\s+42\s+extract\s+` + ext + `$`,
		`(?m)^TASK ID\s+TASK\s+PARAM\s+VALUE$`,
		`(?m)^` + ext + `\s+extract\s+bizdate\s+20260101$`,
		`(?m)^` + load + `\s+load\s+rows\s+42$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("instance show lacks %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "BELUGA_TASK_NAME") {
		t.Fatalf("instance show lists built-in params (task show has them):\n%s", out)
	}
}

// beluga version prints the binary's version line and refuses arguments.
func TestVersionCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "beluga ") || !strings.Contains(out.String(), runtime.Version()) {
		t.Fatalf("version: code %d, out %q, err %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"version", "extra"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown command") && !strings.Contains(errb.String(), "accepts 0 arg") {
		t.Fatalf("version extra: code %d, out %q, err %q", code, out.String(), errb.String())
	}
}

// TestBackfillCommandsCalendar: a backfill without --cron takes the
// schedule's calendar; start and show name it and the times it refused.
func TestBackfillCommandsCalendar(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl.yaml", etl)})
	e.want(0, []string{"calendar", "set", "xmas", "-p", "p", "-f", e.file("xmas.yaml", "holidays:\n  - {date: 2025-12-24}\n  - {date: 2025-12-26}\n")})
	e.want(0, []string{"schedule", "set", "nightly_etl", "-p", "p", "--cron", "0 9 * * 3,5", "--calendar", "xmas", "--on-holiday", "next_business_day"})
	e.want(0, []string{"backfill", "start", "nightly_etl", "-p", "p", "--from", "2025-12-22", "--to", "2025-12-31"},
		"3 run(s)", "first 2025-12-25 09:00:00 UTC, last 2025-12-31 09:00:00 UTC",
		"calendar xmas (on_holiday next_business_day): 2 cron time(s) moved, 0 dropped")
	out := e.want(0, []string{"backfill", "show", "1"}, "calendar xmas (on_holiday next_business_day)", "REFUSED BY THE CALENDAR (UTC)", "MOVED TO (UTC)")
	for _, want := range []string{`2025-12-24 09:00:00\s+refused_calendar\s+2025-12-25 09:00:00`, `2025-12-26 09:00:00\s+refused_calendar\s+2025-12-29 09:00:00`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("show lacks %s:\n%s", want, out)
		}
	}
}
