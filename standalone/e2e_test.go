package standalone_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/standalone"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
)

// env is one standalone Beluga driven over its REST API, as a user would.
type env struct {
	t     *testing.T
	sa    *standalone.Standalone
	base  string
	dir   string
	http  *http.Client // nil: http.DefaultClient
	token string       // the admin's, from the password the standalone made
}

// backends runs f against the embedded SQLite file, a real MariaDB and a
// real PostgreSQL, side by side: each has its own standalone, data dir and
// database, and most of a run's time is spent waiting on the database and
// on tasks, so the three overlap (go test's -parallel bounds how many).
// Callers make backends their test's last statement: the parent's function
// returns before the subtests run.
func backends(t *testing.T, f func(t *testing.T, dbURL func(t *testing.T) string)) {
	for _, b := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(*testing.T) string { return "" }},
		{"mysql", func(t *testing.T) string { return mariadbtest.URL(t) }},
		{"postgres", func(t *testing.T) string { return pgtest.URL(t) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b.url)
		})
	}
}

func start(t *testing.T, dbURL string) *env {
	t.Helper()
	c := config.Defaults()
	c.DataDir = t.TempDir()
	c.DB = dbURL
	c.API.Listen = "127.0.0.1:0"
	c.Worker.Slots = 8
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	sa, err := standalone.Start(context.Background(), c, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	return e
}

// startOn starts a standalone on data dir dir and database dbURL ("": the
// embedded SQLite in dir), stopped at cleanup. Called again on the same dir,
// it is a restart.
func startOn(t *testing.T, dir, dbURL string) *env {
	t.Helper()
	c := config.Defaults()
	c.DataDir, c.DB, c.API.Listen = dir, dbURL, "127.0.0.1:0" // the worker's port is random too
	sa, err := standalone.Start(context.Background(), c, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	return &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: dir}
}

// adminPassword is the password the standalone wrote to
// <dir>/admin-password on its first start.
func (e *env) adminPassword() string {
	e.t.Helper()
	pw, err := os.ReadFile(filepath.Join(e.dir, "admin-password"))
	if err != nil {
		e.t.Fatalf("the standalone wrote no admin password: %v", err)
	}
	return strings.TrimSpace(string(pw))
}

// login logs in to the standalone as admin, with the password it wrote to
// <dir>/admin-password on its first start, once per env (an env without a
// dir stays anonymous).
func (e *env) login() {
	e.t.Helper()
	if e.token != "" || e.dir == "" {
		return
	}
	body, _ := json.Marshal(map[string]string{"username": "admin", "password": e.adminPassword()})
	hc := e.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Post(e.base+"/api/v1/login", "application/json", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("login as admin: %d %v", resp.StatusCode, err)
	}
	e.token = out.Token
}

// bearer adds a token to every request that has no Authorization.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// client is an HTTP client that calls as the admin.
func (e *env) client() *http.Client {
	e.t.Helper()
	e.login()
	next := http.DefaultTransport
	if e.http != nil && e.http.Transport != nil {
		next = e.http.Transport
	}
	c := &http.Client{Transport: bearer{e.token, next}}
	if e.http != nil {
		c.Timeout = e.http.Timeout
	}
	return c
}

func (e *env) do(method, path, body string, want int, out any) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.base+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	// Bodies must say what they are: JSON, or a YAML workflow spec.
	if body != "" {
		ct := "application/json"
		if !strings.HasPrefix(strings.TrimSpace(body), "{") {
			ct = "application/yaml"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := e.client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if s, ok := out.(*string); ok {
			*s = string(b)
			return
		}
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

func (e *env) apply(spec string) {
	e.t.Helper()
	var name struct{ Name string }
	for _, line := range strings.Split(spec, "\n") {
		if v, ok := strings.CutPrefix(line, "name: "); ok {
			name.Name = strings.TrimSpace(v)
			break
		}
	}
	e.do("PUT", "/api/v1/projects/demo/workflows/"+name.Name, spec, http.StatusCreated, nil)
}

func (e *env) run(workflow string, params map[string]string) int64 {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"params": params})
	var out struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
	}
	e.do("POST", "/api/v1/projects/demo/workflows/"+workflow+"/runs", string(body), http.StatusCreated, &out)
	if out.ID == 0 || out.State != "submitted" {
		e.t.Fatalf("run answer: %+v", out)
	}
	return out.ID
}

type taskView struct {
	ID        int64      `json:"id"`
	Name      string     `json:"name"`
	State     string     `json:"state"`
	Attempt   int        `json:"attempt"`
	Host      string     `json:"host"`
	ExitCode  *int       `json:"exit_code"`
	StartTime *time.Time `json:"start_time"`
	EndTime   *time.Time `json:"end_time"`
}

type instanceView struct {
	ID      int64      `json:"id"`
	State   string     `json:"state"`
	EndTime *time.Time `json:"end_time"`
	Tasks   []taskView `json:"tasks"`
	History []struct {
		Action string `json:"action"`
		By     string `json:"by"`
		Detail string `json:"detail"`
	} `json:"history"`
}

func (iv instanceView) task(name string) taskView {
	for _, t := range iv.Tasks {
		if t.Name == name {
			return t
		}
	}
	return taskView{}
}

func (iv instanceView) count(name string) int {
	n := 0
	for _, t := range iv.Tasks {
		if t.Name == name {
			n++
		}
	}
	return n
}

// wait polls the instance until it finishes or the deadline passes.
func (e *env) wait(id int64, within time.Duration) instanceView {
	e.t.Helper()
	var iv instanceView
	wait.UntilErr(e.t, within, fmt.Sprintf("instance %d to end", id), func() error {
		iv = instanceView{}
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
		switch iv.State {
		case "succeeded", "failed", "stopped", "paused":
			return nil
		}
		return fmt.Errorf("still %s: %+v", iv.State, iv.Tasks)
	})
	return iv
}

// applied waits until the master has taken up an operator action on the
// instance (its runner notes it in the history): an API answer only says
// the action was queued.
func (e *env) applied(id int64, action string) {
	e.t.Helper()
	wait.UntilErr(e.t, 30*time.Second, fmt.Sprintf("the master to take up %s on instance %d", action, id), func() error {
		var iv instanceView
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
		for _, h := range iv.History {
			if h.By == "master" && h.Action == action {
				return nil
			}
		}
		return fmt.Errorf("history %+v", iv.History)
	})
}

// store opens the instance's database for assertions on the rows themselves.
func (e *env) store() *store.Store {
	return e.sa.Store
}

func TestDiamond(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(`name: diamond
tasks:
  - {name: a, command: "sleep 0.05"}
  - {name: b, command: "sleep 0.1", depends_on: [a]}
  - {name: c, command: "sleep 0.2", depends_on: [a]}
  - {name: d, command: "true", depends_on: [b, c]}
`)
		iv := e.wait(e.run("diamond", nil), 30*time.Second)
		if iv.State != "succeeded" || len(iv.Tasks) != 4 {
			t.Fatalf("instance: %+v", iv)
		}
		for _, n := range []string{"a", "b", "c", "d"} {
			if c := iv.count(n); c != 1 {
				t.Fatalf("task %s has %d instances, want 1", n, c)
			}
			if tk := iv.task(n); tk.State != "succeeded" || tk.Attempt != 1 || tk.ExitCode == nil || *tk.ExitCode != 0 || tk.Host == "" {
				t.Fatalf("task %s: %+v", n, tk)
			}
		}
		// DB rows, at full precision: d starts after both b and c ended.
		rows, err := e.store().TaskList(context.Background(), iv.ID)
		if err != nil {
			t.Fatal(err)
		}
		end := map[string]time.Time{}
		var dStart time.Time
		for _, r := range rows {
			end[r.Name] = *r.EndTime
			if r.Name == "d" {
				dStart = *r.StartTime
			}
		}
		if dStart.Before(end["b"]) || dStart.Before(end["c"]) {
			t.Fatalf("d started %v before b ended %v or c ended %v", dStart, end["b"], end["c"])
		}
	})
}

// failing has a failing branch and an independent slow one. slow finishes
// only after bad has failed, so its downstream tells the strategies apart.
func failing(strategy, mark string) string {
	return fmt.Sprintf(`name: failing_%[1]s
failure_strategy: %[1]s
tasks:
  - {name: a, command: "true"}
  - {name: bad, command: "echo boom >&2; touch %[2]s; exit 3", depends_on: [a]}
  - {name: after_bad, command: "true", depends_on: [bad]}
  - {name: slow, command: "while [ ! -f %[2]s ]; do sleep 0.01; done; sleep 0.5"}
  - {name: after_slow, command: "true", depends_on: [slow]}
`, strategy, mark)
}

func TestFailureStrategies(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		for _, tc := range []struct {
			strategy      string
			afterSlowRuns bool
		}{{"end", false}, {"continue", true}} {
			mark := filepath.Join(e.dir, "mark-"+tc.strategy)
			e.apply(failing(tc.strategy, mark))
			iv := e.wait(e.run("failing_"+tc.strategy, nil), 30*time.Second)
			if iv.State != "failed" {
				t.Fatalf("%s: instance %s, want failed", tc.strategy, iv.State)
			}
			if tk := iv.task("bad"); tk.State != "failed" || tk.ExitCode == nil || *tk.ExitCode != 3 {
				t.Fatalf("%s: bad: %+v", tc.strategy, tk)
			}
			if iv.count("after_bad") != 0 {
				t.Fatalf("%s: after_bad ran after its upstream failed", tc.strategy)
			}
			if tk := iv.task("slow"); tk.State != "succeeded" {
				t.Fatalf("%s: slow should finish: %+v", tc.strategy, tk)
			}
			ran := iv.count("after_slow") == 1 && iv.task("after_slow").State == "succeeded"
			if ran != tc.afterSlowRuns || (!ran && iv.count("after_slow") != 0) {
				t.Fatalf("%s: after_slow ran=%v (%d rows), want %v", tc.strategy, ran, iv.count("after_slow"), tc.afterSlowRuns)
			}
			var log string
			e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("bad").ID), "", http.StatusOK, &log)
			if !strings.Contains(log, "boom") {
				t.Fatalf("%s: log of bad: %q", tc.strategy, log)
			}
		}
	})
}

func TestChainAndFanout(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		var chain, fan strings.Builder
		chain.WriteString("name: chain100\ntasks:\n")
		for i := 0; i < 100; i++ {
			dep := ""
			if i > 0 {
				dep = fmt.Sprintf(", depends_on: [t%d]", i-1)
			}
			fmt.Fprintf(&chain, "  - {name: t%d, command: \"true\"%s}\n", i, dep)
		}
		fan.WriteString("name: fanout1000\ntasks:\n")
		var all []string
		for i := 0; i < 1000; i++ {
			fmt.Fprintf(&fan, "  - {name: f%d, command: \"true\"}\n", i)
			all = append(all, fmt.Sprintf("f%d", i))
		}
		fmt.Fprintf(&fan, "  - {name: join, command: \"true\", depends_on: [%s]}\n", strings.Join(all, ", "))
		e.apply(chain.String())
		e.apply(fan.String())
		for _, wf := range []struct {
			name  string
			tasks int
		}{{"chain100", 100}, {"fanout1000", 1001}} {
			iv := e.wait(e.run(wf.name, nil), 3*time.Minute)
			if iv.State != "succeeded" || len(iv.Tasks) != wf.tasks {
				t.Fatalf("%s: state %s with %d task instances, want succeeded with %d", wf.name, iv.State, len(iv.Tasks), wf.tasks)
			}
			seen := map[string]bool{}
			for _, tk := range iv.Tasks {
				if seen[tk.Name] || tk.Attempt != 1 || tk.State != "succeeded" {
					t.Fatalf("%s: task %+v (seen before: %v)", wf.name, tk, seen[tk.Name])
				}
				seen[tk.Name] = true
			}
		}
	})
}

func TestParamsAndOutputInLog(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(`name: params
params: {region: eu, bizdate: "19700101"}
tasks:
  - name: show
    command: echo "hello ${bizdate} ${region} ${who}"; echo "to stderr" >&2
    params: {who: task}
`)
		iv := e.wait(e.run("params", map[string]string{"bizdate": "20261129"}), 30*time.Second)
		if iv.State != "succeeded" {
			t.Fatalf("instance: %+v", iv)
		}
		var log string
		e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("show").ID), "", http.StatusOK, &log)
		for _, want := range []string{"hello 20261129 eu task", "to stderr"} {
			if !strings.Contains(log, want) {
				t.Fatalf("log %q lacks %q", log, want)
			}
		}
	})
}

// TestTimeParamsReachTasks: $[...] in workflow, run and task params reach
// the task resolved against the run's creation time (no schedule: UTC), with
// the built-in BELUGA_* dates beside them and overridable.
func TestTimeParamsReachTasks(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(`name: timeparams
params: {day: "$[yyyyMMdd]", prev: "$[yyyy-MM-dd-1]"}
tasks:
  - name: show
    command: echo "day=${day} prev=${prev} hour=${hour} biz=${BELUGA_BIZ_DATE} cur=${BELUGA_CUR_DATE} dt=${BELUGA_DATETIME} at=${BELUGA_SCHEDULE_TIME}"
    params: {BELUGA_DATETIME: mine}
`)
		id := e.run("timeparams", map[string]string{"hour": "h$[HH]"})
		iv := e.wait(id, 30*time.Second)
		if iv.State != "succeeded" {
			t.Fatalf("instance: %+v", iv)
		}
		var inst struct {
			CreatedAt time.Time `json:"created_at"`
		}
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &inst)
		at := inst.CreatedAt.UTC()
		want := fmt.Sprintf("day=%s prev=%s hour=h%s biz=%s cur=%s dt=mine at=%s", at.Format("20060102"),
			at.AddDate(0, 0, -1).Format("2006-01-02"), at.Format("15"), at.AddDate(0, 0, -1).Format("20060102"),
			at.Format("20060102"), at.Format(time.RFC3339))
		var log string
		e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("show").ID), "", http.StatusOK, &log)
		if !strings.Contains(log, want) {
			t.Fatalf("log %q lacks %q", log, want)
		}
		// A bad expression is refused up front, naming the param.
		e.do("POST", "/api/v1/projects/demo/workflows/timeparams/runs", `{"params":{"d":"$[yyyyQQ]"}}`, http.StatusBadRequest, nil)
	})
}

// TestShutdownMidRunLeavesNoChild stops the whole process while a task and
// its child are running; both processes must be gone when Stop returns.
func TestShutdownMidRunLeavesNoChild(t *testing.T) {
	e := start(t, "")
	pids := filepath.Join(e.dir, "pids")
	e.apply(fmt.Sprintf(`name: long
tasks:
  - {name: sleeper, command: "sleep 300 & echo $! > %[1]s.child; echo $$ > %[1]s.tmp; mv %[1]s.tmp %[1]s; wait"}
`, pids))
	e.run("long", nil)
	var b []byte
	wait.Until(t, 30*time.Second, "the task to start (its pid file)", func() bool {
		var err error
		b, err = os.ReadFile(pids)
		return err == nil
	})
	child, _ := os.ReadFile(pids + ".child")
	e.sa.Stop()
	for _, raw := range [][]byte{b, child} {
		pid, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
		if err != nil {
			t.Fatalf("pid file: %q", raw)
		}
		if procfs.Alive(pid) {
			t.Fatalf("process %d outlived the shutdown", pid)
		}
	}
}

// TestRestartRecoversInPlace stops standalone mid-run and starts it again on
// the same data dir: the instance resumes in place, the task that was
// running gets a second attempt, and nothing that had finished runs again.
func TestRestartRecoversInPlace(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		url := db(t)
		dir := t.TempDir()
		e := startOn(t, dir, url)
		e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
		gate := filepath.Join(dir, "gate")
		started := filepath.Join(dir, "started")
		e.apply(fmt.Sprintf(`name: resume
tasks:
  - {name: a, command: "echo a >> %[1]s.runs"}
  - {name: wait, command: "echo wait >> %[1]s.runs; touch %[2]s; while [ ! -f %[1]s ]; do sleep 0.01; done", depends_on: [a]}
  - {name: b, command: "echo b >> %[1]s.runs", depends_on: [wait]}
`, gate, started))
		id := e.run("resume", nil)
		waitFile(t, started)
		e.sa.Stop()

		e = startOn(t, dir, url)
		os.WriteFile(gate, nil, 0o644)
		iv := e.wait(id, 60*time.Second)
		if iv.State != "succeeded" {
			t.Fatalf("instance after restart: %+v", iv)
		}
		if iv.count("a") != 1 || iv.count("b") != 1 || iv.count("wait") != 2 {
			t.Fatalf("task rows: a=%d wait=%d b=%d, want 1, 2, 1: %+v", iv.count("a"), iv.count("wait"), iv.count("b"), iv.Tasks)
		}
		rows, _ := e.store().TaskList(context.Background(), id)
		for _, r := range rows {
			if r.Name == "wait" && r.Attempt == 1 && (r.State != "need_fault_tolerance" || !r.Superseded) {
				t.Fatalf("first attempt of wait: %+v", r)
			}
		}
		runs, _ := os.ReadFile(gate + ".runs")
		if got := strings.Fields(string(runs)); strings.Join(got, ",") != "a,wait,wait,b" {
			t.Fatalf("executions: %v, want a, wait twice (killed at stop, then again), b", got)
		}
	})
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	wait.Until(t, 30*time.Second, path+" to appear", func() bool { _, err := os.Stat(path); return err == nil })
}

// TestAPIHostCheck: the API of a standalone on a loopback address answers
// loopback names and the configured api.allowed_hosts only (DNS rebinding).
func TestAPIHostCheck(t *testing.T) {
	c := config.Defaults()
	c.DataDir, c.API.Listen, c.API.AllowedHosts = t.TempDir(), "127.0.0.1:0", []string{"beluga.example.com"}
	sa, err := standalone.Start(context.Background(), c, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	for host, want := range map[string]int{"": http.StatusOK, "localhost:1": http.StatusOK, "beluga.example.com": http.StatusOK,
		"evil.example": http.StatusForbidden} {
		req, err := http.NewRequest("GET", "http://"+sa.API.Addr()+"/api/v1/projects", nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusForbidden && !strings.Contains(string(b), "allowed_hosts")) {
			t.Fatalf("Host %q: %d %s, want %d", host, resp.StatusCode, b, want)
		}
	}
}
