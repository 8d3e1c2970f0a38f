package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// unprivUser is the OS user the unprivileged server runs as (made when
// missing; the tests run as root).
const unprivUser = "beluga-unpriv"

// TestUnprivilegedServerRefusesUsersCode (docs/security.md, item 1): a
// standalone that is not root cannot keep tasks from itself (no user switch,
// no sandbox). It says so at start and in /healthz, and, while setting
// tasks.allow_unsandboxed_code is 0 (the default), refuses with a 403 naming
// the setting both insiders' ways to run code as it: a plain user applying a
// shell or python task in her own project, and a user with operate starting
// an existing workflow with one (a run, a schedule, a backfill, a dataset event
// its consumer waits for). An admin's
// run works; once an admin allows it, the plain user's tasks run (as the
// server's uid); set back to 0, a version she applied meanwhile fails at
// dispatch even when an admin starts it.
func TestUnprivilegedServerRefusesUsersCode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start the server as another, unprivileged user")
	}
	uid, gid := unprivilegedUser(t)
	// The binary and the data dir where that user reaches them (the
	// test's own temp dirs are 0700 root's).
	top, err := os.MkdirTemp("", "beluga-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(top, "beluga")
	if out, err := exec.Command("cp", buildBeluga(t), bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	dir := filepath.Join(top, "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	stderrPath := filepath.Join(top, "stderr")
	stderr, err := os.Create(stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	_, addr := servingWith(t, bin, dir, func(c *exec.Cmd) {
		c.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		c.Dir = top
		c.Env = append(os.Environ(), "HOME="+top, "BELUGA_WORKER_TASK_ISOLATION=on") // main_test turns it off
		c.Stderr = stderr
	})
	api := "http://" + addr + "/api/v1"
	admin := &caller{t: t, token: tokenOf(t, addr)}

	// Said at start and in /healthz.
	if b, _ := os.ReadFile(stderrPath); !strings.Contains(string(b), "tasks.allow_unsandboxed_code") {
		t.Fatalf("no warning naming the setting at start:\n%s", b)
	}
	var h struct {
		Tasks struct {
			RunsAsServer bool   `json:"runs_as_server"`
			Warning      string `json:"warning"`
			UsersCode    string `json:"users_code"`
		} `json:"tasks"`
	}
	admin.json("GET", "http://"+addr+"/healthz", "", http.StatusOK, &h)
	if !h.Tasks.RunsAsServer || !strings.Contains(h.Tasks.UsersCode, "refused") ||
		!strings.Contains(h.Tasks.UsersCode, "tasks.allow_unsandboxed_code is 0") || h.Tasks.Warning == "" {
		t.Fatalf("/healthz tasks: %+v", h.Tasks)
	}

	// The admin's workflow in demo; alice a plain user, bob an editor of demo.
	shell := "tasks:\n  - name: a\n    command: id -u\n"
	python := "tasks:\n  - name: p\n    type: python\n    command: print(1)\n"
	admin.do("POST", api+"/projects", `{"name":"demo"}`, http.StatusCreated)
	admin.do("PUT", api+"/projects/demo/workflows/code", shell, http.StatusCreated)
	admin.do("PUT", api+"/projects/demo/workflows/codeds", "on_datasets: [orders@daily]\n"+shell, http.StatusCreated)
	alice := admin.newUser(api, "alice")
	bob := admin.newUser(api, "bob")
	admin.do("PUT", api+"/projects/demo/grants/bob", `{"level":"edit"}`, http.StatusOK)
	alice.do("POST", api+"/projects", `{"name":"alices"}`, http.StatusCreated)

	refusedFor := func(c *caller, method, url, body string) {
		t.Helper()
		msg := c.do(method, url, body, http.StatusForbidden)
		if !strings.Contains(msg, "tasks.allow_unsandboxed_code") {
			t.Fatalf("%s %s: the 403 does not name the setting: %s", method, url, msg)
		}
	}
	refusedFor(alice, "PUT", api+"/projects/alices/workflows/mine", shell)
	refusedFor(alice, "PUT", api+"/projects/alices/workflows/py", python)
	refusedFor(bob, "PUT", api+"/projects/demo/workflows/code", shell+"    retries: 1\n")
	refusedFor(bob, "POST", api+"/projects/demo/workflows/code/runs", `{}`)
	refusedFor(bob, "PUT", api+"/projects/demo/workflows/code/schedule", `{"cron":"0 0 * * *","enabled":true}`)
	refusedFor(bob, "POST", api+"/projects/demo/workflows/code/backfill",
		`{"cron":"0 0 * * *","start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z"}`)
	// A dataset event starts its consumers: as a run by hand.
	refusedFor(bob, "POST", api+"/projects/demo/datasets/orders/events", `{"partition":"2026-12-07"}`)
	if body := admin.do("GET", api+"/projects/demo/datasets/orders", "", http.StatusOK); strings.Contains(body, "2026-12-07") {
		t.Fatalf("an event recorded after the refusal: %s", body)
	}
	alice.do("GET", api+"/projects/alices/workflows/mine", "", http.StatusNotFound) // nothing stored
	admin.do("GET", api+"/projects/demo/workflows/code/schedule", "", http.StatusNotFound)
	if body := admin.do("GET", api+"/backfills", "", http.StatusOK); strings.Contains(body, `"code"`) {
		t.Fatalf("a backfill after the refusal: %s", body)
	}

	// An admin runs code; the task runs as the server's own uid.
	if out := admin.runLog(api, "demo", "code", "a"); out != strconv.Itoa(uid) {
		t.Fatalf("admin's task printed %q, want the server's uid %d", out, uid)
	}

	// Allowed: alice applies and runs.
	admin.do("PUT", api+"/settings/tasks.allow_unsandboxed_code", `{"value":1}`, http.StatusOK)
	admin.json("GET", "http://"+addr+"/healthz", "", http.StatusOK, &h)
	if !strings.Contains(h.Tasks.UsersCode, "is 1") {
		t.Fatalf("/healthz after allowing: %+v", h.Tasks)
	}
	alice.do("PUT", api+"/projects/alices/workflows/mine", shell, http.StatusCreated)
	if out := alice.runLog(api, "alices", "mine", "a"); out != strconv.Itoa(uid) {
		t.Fatalf("alice's task printed %q, want %d", out, uid)
	}

	// Denied again: her stored version is refused at run by the API, and
	// at dispatch when someone the API lets through (an admin) starts it.
	admin.do("PUT", api+"/settings/tasks.allow_unsandboxed_code", `{"value":0}`, http.StatusOK)
	refusedFor(alice, "POST", api+"/projects/alices/workflows/mine/runs", `{}`)
	var run struct{ ID int64 }
	admin.json("POST", api+"/projects/alices/workflows/mine/runs", `{}`, http.StatusCreated, &run)
	raw := admin.do("GET", fmt.Sprintf("%s/instances/%d?wait=60s", api, run.ID), "", http.StatusOK)
	var iv struct {
		State string
		Tasks []struct{ State, Name string }
	}
	if err := json.Unmarshal([]byte(raw), &iv); err != nil {
		t.Fatal(err)
	}
	if iv.State != "failed" || len(iv.Tasks) != 1 || iv.Tasks[0].State != "failed" ||
		!strings.Contains(raw, "tasks.allow_unsandboxed_code is 0") {
		t.Fatalf("alice's version started by an admin with the setting at 0: %s", raw)
	}
}

// unprivilegedUser makes (when missing) and returns unprivUser.
func unprivilegedUser(t *testing.T) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup(unprivUser)
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--shell", "/usr/sbin/nologin", unprivUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v %s", unprivUser, err, out)
		}
		if u, err = user.Lookup(unprivUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

func tokenOf(t *testing.T, addr string) string {
	tok, ok := tokens.Load(addr)
	if !ok {
		t.Fatal("no admin token")
	}
	return tok.(string)
}

// caller is one user's token against the API.
type caller struct {
	t     *testing.T
	token string
}

// do sends body (YAML to a workflow's PUT, else JSON) and returns the
// answer's body, failing unless its status is want (-1: any).
func (c *caller) do(method, url, body string, want int) string {
	c.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	if strings.Contains(url, "/workflows/") && method == "PUT" && !strings.HasSuffix(url, "/schedule") {
		req.Header.Set("Content-Type", "application/yaml")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if want >= 0 && resp.StatusCode != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, b, want)
	}
	return string(b)
}

func (c *caller) json(method, url, body string, want int, v any) {
	c.t.Helper()
	if err := json.Unmarshal([]byte(c.do(method, url, body, want)), v); err != nil {
		c.t.Fatalf("%s %s: %v", method, url, err)
	}
}

// newUser makes a plain user and returns her logged in.
func (c *caller) newUser(api, name string) *caller {
	c.t.Helper()
	c.do("POST", api+"/users", `{"name":"`+name+`","password":"`+name+`-password"}`, http.StatusCreated)
	var lr struct{ Token string }
	c.json("POST", api+"/login", `{"username":"`+name+`","password":"`+name+`-password"}`, http.StatusOK, &lr)
	return &caller{t: c.t, token: lr.Token}
}

// runLog runs project/workflow, waits for it to succeed and returns task's
// log, trimmed.
func (c *caller) runLog(api, project, workflow, task string) string {
	c.t.Helper()
	var run struct{ ID int64 }
	c.json("POST", api+"/projects/"+project+"/workflows/"+workflow+"/runs", `{}`, http.StatusCreated, &run)
	var iv struct {
		State string
		Tasks []struct {
			ID   int64
			Name string
		}
	}
	raw := c.do("GET", fmt.Sprintf("%s/instances/%d?wait=60s", api, run.ID), "", http.StatusOK)
	if err := json.Unmarshal([]byte(raw), &iv); err != nil || iv.State != "succeeded" {
		c.t.Fatalf("run of %s/%s: %v %s", project, workflow, err, raw)
	}
	for _, ti := range iv.Tasks {
		if ti.Name == task {
			return strings.TrimSpace(c.do("GET", fmt.Sprintf("%s/task-instances/%d/log", api, ti.ID), "", http.StatusOK))
		}
	}
	c.t.Fatalf("run of %s/%s has no task %s: %s", project, workflow, task, raw)
	return ""
}
