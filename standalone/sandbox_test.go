package standalone_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/standalone"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// startIsolated is start with task isolation on (TestMain turns it off
// for the tests whose tasks share files with the test).
func startIsolated(t *testing.T) *env {
	t.Helper()
	c := config.Defaults()
	c.DataDir, c.API.Listen, c.Worker.Slots = t.TempDir(), "127.0.0.1:0", 4
	c.Worker.TaskIsolation = "on"
	sa, err := standalone.Start(context.Background(), c, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	return e
}

// probes is a shell script trying each path with cmd and printing
// "READ <name>" when it got through, "denied <name>" when not.
func probes(cmd string, paths map[string]string) string {
	var b strings.Builder
	for name, p := range paths {
		fmt.Fprintf(&b, "if %s '%s' >/dev/null 2>&1; then echo 'READ %s'; else echo 'denied %s'; fi\n", cmd, p, name, name)
	}
	return b.String()
}

// TestTaskIsNotTheServer (docs/security.md, item 1): a plain user with a
// project of her own runs a shell task that goes for the server: its data
// dir, secret files and DB, its process in /proc, and another project's
// task's work dir and log. Each is denied, and the task runs neither as
// root nor as the server's user.
func TestTaskIsNotTheServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the server switches tasks to the task user only as root (docs/security.md says what holds without)")
	}
	e := startIsolated(t)

	// Another project's task leaves a file in its work dir and a log.
	e.apply("name: victim\ntasks:\n  - name: v\n    command: 'pwd; echo demo-private > mine.txt'\n")
	vid := e.run("victim", nil)
	viv := e.wait(vid, time.Minute)
	if viv.State != "succeeded" {
		t.Fatalf("victim: %+v", viv)
	}
	vt := viv.task("v")
	var vlog string
	e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", vt.ID), "", http.StatusOK, &vlog)
	vdir := strings.TrimSpace(vlog)
	var vti struct {
		LogPath string `json:"log_path"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d", vt.ID), "", http.StatusOK, &vti)

	// Alice: a plain user, her own project, no grant on demo.
	e.do("POST", "/api/v1/users", `{"name":"alice","password":"alice-password"}`, http.StatusCreated, nil)
	var lr struct {
		Token string `json:"token"`
	}
	e.do("POST", "/api/v1/login", `{"username":"alice","password":"alice-password"}`, http.StatusOK, &lr)
	alice := &env{t: t, sa: e.sa, base: e.base, dir: e.dir, token: lr.Token}
	alice.do("POST", "/api/v1/projects", `{"name":"alices"}`, http.StatusCreated, nil)

	pid := strconv.Itoa(os.Getpid())
	read := map[string]string{
		"cluster-secret":     filepath.Join(e.dir, "cluster-secret"),
		"secret.key":         filepath.Join(e.dir, "secret.key"),
		"metrics-token":      filepath.Join(e.dir, "metrics-token"),
		"admin-password":     filepath.Join(e.dir, "admin-password"),
		"beluga.db":          filepath.Join(e.dir, "beluga.db"),
		"proc-environ":       "/proc/" + pid + "/environ",
		"proc-cmdline":       "/proc/" + pid + "/cmdline",
		"other-task-file":    filepath.Join(vdir, "mine.txt"),
		"other-task-log":     vti.LogPath,
		"proc-1-environ":     "/proc/1/environ",
		"server-exe-maps":    "/proc/" + pid + "/maps",
		"worker-data-dir-ls": filepath.Join(e.dir, "worker", "logs"),
	}
	// A listing got through when it shows what is there (in the sandbox
	// the data dir's path exists, on an empty tmpfs).
	list := map[string]string{
		"data-dir":       e.dir + "' | grep -qx 'beluga.db",
		"proc-fd":        "/proc/" + pid + "/fd' | grep -qx '0",
		"other-task-dir": vdir + "' | grep -qx 'mine.txt",
	}
	write := map[string]string{
		"write-beluga.db": filepath.Join(e.dir, "beluga.db"),
	}
	script := "echo \"uid $(id -u)\"\n" + probes("cat", read) + probes("ls -A", list) + probes("test -w", write)
	state, out := alice.runScript("alices", "probe", script)
	if state != "succeeded" {
		t.Fatalf("probe task %s: %s", state, out)
	}
	denied := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.HasPrefix(line, "uid "):
			uid := strings.TrimPrefix(line, "uid ")
			if uid == "0" || uid == strconv.Itoa(os.Geteuid()) {
				t.Errorf("the task ran as uid %s: root or the server's own user", uid)
			}
		case strings.HasPrefix(line, "READ "):
			t.Errorf("the task got through to %s", strings.TrimPrefix(line, "READ "))
		case strings.HasPrefix(line, "denied "):
			denied++
		}
	}
	if want := len(read) + len(list) + len(write); denied != want {
		t.Errorf("%d probes denied, want %d; log:\n%s", denied, want, out)
	}
}

type healthView struct {
	Tasks *struct {
		TaskUser string `json:"task_user"`
		Sandbox  bool   `json:"sandbox"`
		Warning  string `json:"warning"`
	} `json:"tasks"`
}

// TestHealthzSaysHowTasksAreIsolated: /healthz names the task user and
// the sandbox when isolation is on, and warns when it is off.
func TestHealthzSaysHowTasksAreIsolated(t *testing.T) {
	off := start(t, "") // TestMain: isolation off
	var h healthView
	off.do("GET", "/healthz", "", http.StatusOK, &h)
	if h.Tasks == nil || h.Tasks.Sandbox || h.Tasks.TaskUser != "" || !strings.Contains(h.Tasks.Warning, "isolation is off") {
		t.Fatalf("isolation off: /healthz tasks = %+v", h.Tasks)
	}
	if os.Geteuid() != 0 {
		return
	}
	on := startIsolated(t)
	h = healthView{}
	on.do("GET", "/healthz", "", http.StatusOK, &h)
	if h.Tasks == nil || !h.Tasks.Sandbox || h.Tasks.TaskUser != "beluga-task" || h.Tasks.Warning != "" {
		t.Fatalf("isolation on, as root: /healthz tasks = %+v", h.Tasks)
	}
}

// TestTasksDoNotSeeEachOther (docs/security.md, item 1): a plain user's
// task, running beside another project's, goes for it through /proc: the
// other task's environment (its params, secrets among them) and its work
// dir through /proc/<pid>/cwd. Tasks without a tenant must not share an OS
// user for this to hold: each runs as a task user of its own while it
// runs.
func TestTasksDoNotSeeEachOther(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the server switches tasks to task users only as root")
	}
	e := startIsolated(t)
	const marker = "victim-marker-5e1f"
	e.apply("name: victim\ntasks:\n  - name: v\n    command: 'echo demo-private > mine.txt; sleep 120'\n")
	vid := e.run("victim", map[string]string{"VICTIM_TOKEN": marker})
	e.waitTask(vid, "v", "running")
	wait.UntilErr(t, 30*time.Second, "the victim's file", func() error {
		out, err := exec.Command("sh", "-c", "grep -l "+marker+" /proc/[0-9]*/environ 2>/dev/null | head -1").Output()
		if err != nil || len(strings.TrimSpace(string(out))) == 0 {
			return fmt.Errorf("no process with the marker yet: %v", err)
		}
		return nil
	})

	alice := e.as("alice", "user")
	alice.do("POST", "/api/v1/projects", `{"name":"alices"}`, http.StatusCreated, nil)
	script := `seen=0
for p in /proc/[0-9]*; do
  seen=$((seen+1))
  if grep -qa ` + marker + ` $p/environ 2>/dev/null; then echo "READ environ $p"; fi
  if cat $p/cwd/mine.txt 2>/dev/null | grep -q demo-private; then echo "READ cwd $p"; fi
done
echo "saw $seen"`
	state, out := alice.runScript("alices", "peek", script)
	if state != "succeeded" || !strings.Contains(out, "saw ") {
		t.Fatalf("peek task %s: %s", state, out)
	}
	if strings.Contains(out, "READ") {
		t.Errorf("a task reached another project's running task:\n%s", out)
	}
	e.act("instance", vid, "stop", http.StatusAccepted)
}

// runScript applies script as workflow name's one shell task (p) in
// project, runs it and returns the run's state and the task's log.
func (e *env) runScript(project, name, script string) (string, string) {
	e.t.Helper()
	spec := "name: " + name + "\ntasks:\n  - name: p\n    command: |\n"
	for _, line := range strings.Split(strings.TrimSpace(script), "\n") {
		spec += "      " + line + "\n"
	}
	base := "/api/v1/projects/" + project + "/workflows/" + name
	e.do("PUT", base, spec, http.StatusCreated, nil)
	var run struct {
		ID int64 `json:"id"`
	}
	e.do("POST", base+"/runs", "{}", http.StatusCreated, &run)
	iv := e.wait(run.ID, time.Minute)
	var out string
	e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("p").ID), "", http.StatusOK, &out)
	return iv.State, out
}
