package standalone_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The threat of docs/security.md sections 3 and 4: bob, a plain user with
// edit on demo and nothing on crm, tries to reach crm through a
// sub_workflow or dependent, and the server's files through a sql task.

// plainUser makes user name with edit on demo and returns an env that
// calls as them.
func (e *env) plainUser(name string) *env {
	e.t.Helper()
	e.do("POST", "/api/v1/users", `{"name":"`+name+`","password":"`+name+`-password"}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/demo/grants/"+name, `{"level":"edit"}`, http.StatusOK, nil)
	return &env{t: e.t, sa: e.sa, base: e.base, dir: e.dir, token: e.loginAs(name, name+"-password")}
}

// message is the error message of a refused call.
func (e *env) message(method, path, body string, want int) string {
	e.t.Helper()
	var out struct{ Error struct{ Message string } }
	e.do(method, path, body, want, &out)
	return out.Error.Message
}

// taskMessage waits for instance id to end and returns its task's state
// and what says why: the task's message, the instance's reason and the
// task's log (a failure before dispatch is in the reason, a worker's in
// the log).
func (e *env) taskMessage(id int64, task string) (string, string) {
	e.t.Helper()
	e.wait(id, time.Minute)
	v := e.logic(id)
	i := v.latestOf(task)
	if i < 0 {
		e.t.Fatalf("instance %d has no task %s: %+v", id, task, v.Tasks)
	}
	var log string
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/task-instances/%d/log", e.base, v.Tasks[i].ID), nil)
	if resp, err := e.client().Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		log = string(b) // a task failed before dispatch has none (404)
	}
	return v.Tasks[i].State, strings.Join([]string{v.Tasks[i].Message, v.Reason, log}, "\n")
}

// A sub_workflow or dependent naming another project's workflow needs a
// grant there at apply (the editor's) and again at run (the grants of who
// applied the version, as they are then); a missing project or workflow
// and a forbidden one get the same answer, and nothing of crm reaches bob.
func TestProjectsAreWalls(t *testing.T) {
	e := start(t, "")
	e.do("POST", "/api/v1/projects", `{"name":"crm"}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/crm/workflows/export",
		"name: export\nparams: {token: crm-only}\ntasks:\n  - {name: push, command: \"echo '${setValue(leak=$token)}'\"}\n", http.StatusCreated, nil)
	bob := e.plainUser("bob")

	// At apply: 403 naming the project; a workflow or project that does not
	// exist reads the same as one that does.
	applyAs := func(who *env, ref, typ string, want int) string {
		spec := "name: cross\ntasks:\n  - {name: child, type: sub_workflow, workflow: " + ref + "}\n"
		if typ == "dependent" {
			p, w, _ := strings.Cut(ref, "/")
			spec = "name: cross\ntasks:\n  - {name: child, type: dependent, wait_for: [{project: " + p + ", workflow: " + w + ", date: today}]}\n"
		}
		return who.message("PUT", "/api/v1/projects/demo/workflows/cross", spec, want)
	}
	for _, typ := range []string{"sub_workflow", "dependent"} {
		real := applyAs(bob, "crm/export", typ, http.StatusForbidden)
		if !strings.Contains(real, `on project "crm"`) {
			t.Fatalf("%s refusal %q does not name the project", typ, real)
		}
		for _, ref := range []string{"crm/nope", "ghost/export"} {
			got := applyAs(bob, ref, typ, http.StatusForbidden)
			p, w, _ := strings.Cut(ref, "/")
			if same := strings.NewReplacer(`"`+p+`"`, `"crm"`, p+"/"+w, "crm/export").Replace(got); same != real {
				t.Fatalf("%s %s: %q; the existing one: %q", typ, ref, got, real)
			}
		}
	}
	if n := e.runsOfWorkflow("cross"); n != 0 {
		t.Fatalf("refused workflow has %d runs", n)
	}

	// At run: bob had operate on crm when he applied; it is revoked before
	// the run, which fails its task with the reason and starts nothing in crm.
	e.do("PUT", "/api/v1/projects/crm/grants/bob", `{"level":"operate"}`, http.StatusOK, nil)
	applyAs(bob, "crm/export", "sub_workflow", http.StatusCreated)
	bob.do("PUT", "/api/v1/projects/demo/workflows/waits",
		"name: waits\ntasks:\n  - {name: dep, type: dependent, check_interval: 100ms, wait_for: [{project: crm, workflow: export, date: today}]}\n",
		http.StatusCreated, nil)
	e.do("DELETE", "/api/v1/projects/crm/grants/bob", "", http.StatusNoContent, nil)

	state, msg := bob.taskMessage(bob.run("cross", map[string]string{"token": "from-bob"}), "child")
	want := `crm/export is another project's: reaching it needs operate on project "crm"; "bob", who applied this workflow version, has none`
	if state != "failed" || strings.SplitN(msg, "\n", 2)[0] != want {
		t.Fatalf("sub_workflow after the revoke: %s %q, want failed %q", state, msg, want)
	}
	state, msg = bob.taskMessage(bob.run("waits", nil), "dep")
	want = `wait_for[0]: crm/export is another project's: reaching it needs view on project "crm"; "bob", who applied this workflow version, has none`
	if state != "failed" || strings.SplitN(msg, "\n", 2)[0] != want {
		t.Fatalf("dependent after the revoke: %s %q, want failed %q", state, msg, want)
	}
	var runs struct{ Items []any }
	e.do("GET", "/api/v1/instances?project=crm", "", http.StatusOK, &runs)
	if len(runs.Items) != 0 {
		t.Fatalf("crm has %d runs: bob's child started", len(runs.Items))
	}

	// The admin's version of the same spec still reaches crm.
	e.do("PUT", "/api/v1/projects/demo/workflows/cross", "name: cross\ntasks:\n  - {name: child, type: sub_workflow, workflow: crm/export}\n", http.StatusCreated, nil)
	if state, msg := e.taskMessage(e.run("cross", nil), "child"); state != "succeeded" {
		t.Fatalf("the admin's cross-project child: %s %q", state, msg)
	}
}

// A datasource is granted to projects by an admin; bob cannot see or use
// one not granted to demo (the same answer as for a missing one), and a
// SQLite datasource cannot ATTACH the server's DB nor be inside its data dir.
func TestDatasourceGrantsAndSQLiteFiles(t *testing.T) {
	e := start(t, "")
	lite := filepath.Join(t.TempDir(), "wh.db")
	if err := os.WriteFile(lite, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.do("PUT", "/api/v1/datasources/lite", `{"type":"sqlite","database":"`+lite+`"}`, http.StatusCreated, nil)
	bob := e.plainUser("bob")
	sqlSpec := func(name, ds, stmt string) string {
		return "name: " + name + "\ntasks:\n  - name: q\n    type: sql\n    datasource: " + ds + "\n    sql: [\"" + stmt + "\"]\n"
	}
	put := func(who *env, name, ds, stmt string, want int) string {
		return who.message("PUT", "/api/v1/projects/demo/workflows/"+name, sqlSpec(name, ds, stmt), want)
	}

	real := put(bob, "q", "lite", "SELECT 1 AS one", http.StatusForbidden)
	if got := strings.ReplaceAll(put(bob, "q", "ghost", "SELECT 1 AS one", http.StatusForbidden), "ghost", "lite"); got != real || !strings.Contains(real, `not granted to project "demo"`) {
		t.Fatalf("bob's datasources: %q and %q", real, got)
	}
	var list struct{ Items []struct{ Name string } }
	bob.do("GET", "/api/v1/datasources", "", http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Fatalf("bob lists %+v", list.Items)
	}
	bob.do("GET", "/api/v1/datasources/lite", "", http.StatusNotFound, nil)

	e.do("PUT", "/api/v1/datasources/lite", `{"type":"sqlite","database":"`+lite+`","projects":["demo"]}`, http.StatusOK, nil)
	bob.do("GET", "/api/v1/datasources", "", http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "lite" {
		t.Fatalf("bob lists %+v", list.Items)
	}
	put(bob, "q", "lite", "SELECT 1 AS one", http.StatusCreated)
	if state, msg := bob.taskMessage(bob.run("q", nil), "q"); state != "succeeded" {
		t.Fatalf("bob's granted sql task: %s %q", state, msg)
	}

	// ATTACH of beluga.db (and VACUUM INTO, which attaches) fails in the
	// engine, whatever the spelling.
	db := filepath.Join(e.dir, "beluga.db")
	for name, stmt := range map[string]string{
		"attach": "ATTACH DATABASE '" + db + "' AS core",
		"upper":  "attach   'file:" + db + "?mode=ro' as core",
		"vacuum": "VACUUM INTO '" + filepath.Join(e.dir, "copy.db") + "'",
	} {
		put(bob, name, "lite", stmt, http.StatusCreated)
		if state, msg := bob.taskMessage(bob.run(name, nil), "q"); state != "failed" || !strings.Contains(msg, "too many attached databases") {
			t.Fatalf("%s: %s %q", name, state, msg)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "copy.db")); err == nil {
		t.Fatal("VACUUM INTO wrote into the data dir")
	}

	// A datasource on the server's own DB file is refused at run, even to an
	// admin's workflow.
	e.do("PUT", "/api/v1/datasources/core", `{"type":"sqlite","database":"`+db+`","projects":["demo"]}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/demo/workflows/core", sqlSpec("core", "core", "SELECT COUNT(*) AS n FROM app_user"), http.StatusCreated, nil)
	if state, msg := e.taskMessage(e.run("core", nil), "q"); state != "failed" || !strings.Contains(msg, "holds the server's own files") {
		t.Fatalf("a datasource on beluga.db: %s %q", state, msg)
	}

	// The grant withdrawn, bob's version fails at run, naming the reason.
	e.do("PUT", "/api/v1/datasources/lite", `{"type":"sqlite","database":"`+lite+`","projects":[]}`, http.StatusOK, nil)
	if state, msg := bob.taskMessage(bob.run("q", nil), "q"); state != "failed" || !strings.Contains(msg, `not granted to project "demo"`) {
		t.Fatalf("after the grant was withdrawn: %s %q", state, msg)
	}
}

// A task group is granted to projects like a datasource: bob's task may not
// take the slots of a group not granted to demo (the same 403 as for a
// missing group), sees only granted groups, and fails at run once the grant
// is withdrawn.
func TestTaskGroupGrants(t *testing.T) {
	e := start(t, "")
	e.do("POST", "/api/v1/task-groups", `{"name":"etl","capacity":1}`, http.StatusCreated, nil)
	bob := e.plainUser("bob")
	spec := func(group string) string {
		return "name: grouped\ntasks:\n  - {name: a, command: \"true\", task_group: " + group + "}\n"
	}
	real := bob.message("PUT", "/api/v1/projects/demo/workflows/grouped", spec("etl"), http.StatusForbidden)
	got := bob.message("PUT", "/api/v1/projects/demo/workflows/grouped", spec("ghost"), http.StatusForbidden)
	if strings.ReplaceAll(got, "ghost", "etl") != real || !strings.Contains(real, `task group "etl" is not granted to project "demo"`) {
		t.Fatalf("bob's task groups: %q and %q", real, got)
	}
	var list struct{ Items []struct{ Name string } }
	bob.do("GET", "/api/v1/task-groups", "", http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Fatalf("bob lists %+v", list.Items)
	}
	bob.do("GET", "/api/v1/task-groups/etl", "", http.StatusNotFound, nil)

	e.do("PATCH", "/api/v1/task-groups/etl", `{"projects":["demo"]}`, http.StatusOK, nil)
	bob.do("GET", "/api/v1/task-groups", "", http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "etl" {
		t.Fatalf("bob lists %+v", list.Items)
	}
	bob.do("PUT", "/api/v1/projects/demo/workflows/grouped", spec("etl"), http.StatusCreated, nil)
	if state, msg := bob.taskMessage(bob.run("grouped", nil), "a"); state != "succeeded" {
		t.Fatalf("bob's task in a granted group: %s %q", state, msg)
	}
	e.do("PATCH", "/api/v1/task-groups/etl", `{"projects":[]}`, http.StatusOK, nil)
	if state, msg := bob.taskMessage(bob.run("grouped", nil), "a"); state != "failed" || !strings.Contains(msg, `task group "etl" is not granted to project "demo"`) {
		t.Fatalf("after the grant was withdrawn: %s %q", state, msg)
	}
}
