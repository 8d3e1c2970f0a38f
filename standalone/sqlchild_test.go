package standalone_test

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/procfs"
)

// TestSQLTaskRunsAsItsUser (docs/security.md, item 4): a sql task's
// statements run in a child process of the worker, as the task user and in
// its sandbox, not in the worker: its process is not the server's, has the
// task user's uid, and a kill interrupts its statement (it ends on its own
// on SIGTERM, exit code 1, not SIGKILLed). A SQLite datasource that reaches
// beluga.db by another path (a hard link the path check cannot see) fails
// to open it, where before, in the worker's process as root, it read the
// server's users.
func TestSQLTaskRunsAsItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the server switches tasks to the task user only as root")
	}
	e := startIsolated(t)
	tu, err := user.Lookup("beluga-task")
	if err != nil {
		t.Fatal(err)
	}
	// The datasource's file where the task user may write it (not under
	// the test's temp dir, whose parent the sandbox covers with the data
	// dir's).
	dir, err := os.MkdirTemp("", "beluga-sqlds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	lite := filepath.Join(dir, "wh.db")
	if err := os.WriteFile(lite, nil, 0o660); err != nil {
		t.Fatal(err)
	}
	tuid, _ := strconv.Atoi(tu.Uid)
	tgid, _ := strconv.Atoi(tu.Gid)
	if err := os.Chown(lite, tuid, tgid); err != nil { // the task users' file (group rw), as an admin would give it
		t.Fatal(err)
	}
	if err := os.Chmod(lite, 0o660); err != nil {
		t.Fatal(err)
	}
	e.do("PUT", "/api/v1/datasources/lite", `{"type":"sqlite","database":"`+lite+`","projects":["demo"]}`, http.StatusCreated, nil)
	spec := func(name, ds, stmt string) string {
		return "name: " + name + "\ntasks:\n  - name: q\n    type: sql\n    datasource: " + ds + "\n    sql: [\"" + stmt + "\"]\n"
	}

	e.apply(spec("slow", "lite", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) AS n FROM c"))
	id := e.run("slow", nil)
	var tv taskView
	wait.UntilErr(t, time.Minute, "the sql task to run", func() error {
		var iv instanceView
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
		tv = iv.task("q")
		if tv.State == "failed" || tv.State == "succeeded" {
			state, msg := e.taskMessage(id, "q")
			t.Fatalf("the slow sql task ended: %s %q", state, msg)
		}
		if tv.State != "running" {
			return fmt.Errorf("tasks %+v", iv.Tasks)
		}
		return nil
	})
	var ti struct {
		PID int `json:"pid"`
	}
	// The pid comes with the Running report, a little after the state.
	wait.Until(t, 30*time.Second, "the running sql task's pid", func() bool {
		e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d", tv.ID), "", http.StatusOK, &ti)
		return ti.PID != 0
	})
	if ti.PID == os.Getpid() {
		t.Fatal("the sql task runs in the server's process")
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ti.PID))
	if err != nil {
		t.Fatal(err)
	}
	var uid, gid, ppid string
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid = strings.Fields(v)[0]
		}
		if v, ok := strings.CutPrefix(line, "Gid:"); ok {
			gid = strings.Fields(v)[0]
		}
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			ppid = strings.TrimSpace(v)
		}
	}
	// A task user: the task user itself or one of its group's users of a
	// task each (docs/security.md).
	runAs, err := user.LookupId(uid)
	if err != nil || gid != tu.Gid || uid == "0" || uid == strconv.Itoa(os.Geteuid()) ||
		!strings.HasPrefix(runAs.Username, tu.Username) || ppid != strconv.Itoa(os.Getpid()) {
		t.Fatalf("the sql task's process %d: uid %s gid %s (task user %s, group %s), parent %s (server %d)", ti.PID, uid, gid, tu.Uid, tu.Gid, ppid, os.Getpid())
	}
	if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ti.PID)); !strings.Contains(string(cmd), "task-sql") {
		state, msg := e.taskMessage(id, "q")
		t.Fatalf("the sql task's process runs %q; the task: %s %q", cmd, state, msg)
	}
	// Killed once its statement runs (the log shows it just before):
	// before, the process may still be starting, with no handler yet.
	var log string
	if wait.Poll(30*time.Second, "the statement in the log", func() bool {
		e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", tv.ID), "", http.StatusOK, &log)
		return strings.Contains(log, "WITH RECURSIVE")
	}) != nil {
		if !procfs.Alive(ti.PID) {
			state, msg := e.taskMessage(id, "q")
			var ti2 struct {
				ExitCode *int   `json:"exit_code"`
				LogPath  string `json:"log_path"`
			}
			e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d", tv.ID), "", http.StatusOK, &ti2)
			raw, _ := os.ReadFile(ti2.LogPath)
			t.Fatalf("the sql task's process ended before its statement: %s %q exit %v file log %q", state, msg, ti2.ExitCode, raw)
		}
		t.Fatalf("the sql task never started its statement; log:\n%s", log)
	}
	e.act("task", tv.ID, "kill", http.StatusAccepted)
	killed := e.waitTask(id, "q", "killed")
	if killed.ExitCode == nil || *killed.ExitCode != 1 {
		code := -1
		if killed.ExitCode != nil {
			code = *killed.ExitCode
		}
		var log string
		e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", tv.ID), "", http.StatusOK, &log)
		t.Fatalf("the killed sql task's exit code is %d, want 1: its statement was not interrupted on SIGTERM; log:\n%s", code, log)
	}
	wait.Until(t, 30*time.Second, fmt.Sprintf("the sql task's process %d to end after its kill", ti.PID), func() bool { return !procfs.Alive(ti.PID) })

	// beluga.db by a path the check does not know: the worker, as root,
	// could open it; the task's process cannot.
	link := filepath.Join(dir, "core.db")
	if err := os.Link(filepath.Join(e.dir, "beluga.db"), link); err != nil {
		t.Skipf("no hard link to beluga.db from %s: %v", dir, err)
	}
	e.do("PUT", "/api/v1/datasources/core", `{"type":"sqlite","database":"`+link+`","projects":["demo"]}`, http.StatusCreated, nil)
	e.apply(spec("core", "core", "SELECT COUNT(*) AS n FROM app_user"))
	if state, msg := e.taskMessage(e.run("core", nil), "q"); state != "failed" || !strings.Contains(msg, "unable to open database file") {
		t.Fatalf("a datasource linked to beluga.db: %s %q", state, msg)
	}
}
