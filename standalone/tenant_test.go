package standalone_test

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTenantTask: a task whose tenant is an OS user runs as that user, in
// a work dir it owns; its log is the worker's, 0600 (no task user opens
// any log: output reaches it through pipes); a tenant that does not exist fails the
// task with a message naming it, and nothing runs.
func TestTenantTask(t *testing.T) {
	e := start(t, "")

	// A missing tenant needs no root: the lookup fails wherever it runs.
	e.apply("name: ghost\ntasks:\n  - name: a\n    tenant: no_such_user_x9\n    command: echo must-not-run\n")
	id := e.run("ghost", nil)
	iv := e.wait(id, 30*time.Second)
	if iv.State != "failed" || iv.task("a").State != "failed" {
		t.Fatalf("missing tenant: %+v", iv)
	}
	var raw string
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &raw)
	if !strings.Contains(raw, `tenant \"no_such_user_x9\": no such OS user`) {
		t.Fatalf("the failure does not name the tenant: %s", raw)
	}

	if os.Geteuid() != 0 {
		t.Skip("running a task as another OS user needs root (to create the user with useradd and switch to it); the missing-tenant case ran")
	}
	name := "blg" + strings.ToLower(rand.Text()[:8])
	if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	// The test's temp dirs are 0700; a real data dir is made 0755. The
	// tenant must reach its work dir through them.
	for _, d := range []string{e.dir, filepath.Dir(e.dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The project's tenant applies to its workflows' tasks.
	e.do("POST", "/api/v1/projects", `{"name":"tenanted","tenant":"`+name+`"}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/tenanted/workflows/as_tenant", "name: as_tenant\ntasks:\n  - name: who\n    command: 'id -un; pwd; echo written > mine.txt'\n", http.StatusCreated, nil)
	var run struct{ ID int64 }
	e.do("POST", "/api/v1/projects/tenanted/workflows/as_tenant/runs", "{}", http.StatusCreated, &run)
	id = run.ID
	iv = e.wait(id, 30*time.Second)
	tk := iv.task("who")
	if iv.State != "succeeded" {
		var raw string
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &raw)
		var tlog string
		e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", tk.ID), "", http.StatusOK, &tlog)
		t.Fatalf("tenant task: %s\nlog: %s", raw, tlog)
	}
	var log string
	e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", tk.ID), "", http.StatusOK, &log)
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) < 2 || lines[0] != name {
		t.Fatalf("the task ran as %q, want %s; log %q", lines[0], name, log)
	}
	dir := lines[1]
	var ti struct {
		LogPath string `json:"log_path"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d", tk.ID), "", http.StatusOK, &ti)
	for _, p := range []string{dir, filepath.Join(dir, "mine.txt")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid := fmt.Sprint(fi.Sys().(*syscall.Stat_t).Uid); uid != u.Uid {
			t.Fatalf("%s is owned by uid %s, want the tenant's %s", p, uid, u.Uid)
		}
	}
	fi, err := os.Stat(ti.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("log %s is uid %d mode %o, want the worker's (uid %d) 0600", ti.LogPath, uid, fi.Mode().Perm(), os.Geteuid())
	}
}
