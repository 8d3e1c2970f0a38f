package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

const gitSchedule = "cron: 0 2 * * *\ntimezone: UTC\nparams:\n  day: \"1\"\n"

// TestGitSyncFiles: a commit with a workflow, its schedule and
// datasource and task group references syncs in one go (the schedule
// applied, the references checked against Beluga's); a commit with a bad
// schedule file, a datasource file with a password, a reference Beluga
// does not match or one not granted to a plain editor's project changes
// nothing and names the file; a schedule file gone deletes the schedule.
func TestGitSyncFiles(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	b.mustProject("p")
	b.send("PUT", "/api/v1/datasources/wh", `{"type":"postgres","host":"db.internal","port":5432,"database":"wh","user":"etl","projects":["p"]}`).
		want(t, http.StatusCreated)
	b.send("POST", "/api/v1/task-groups", `{"name":"gpu","capacity":2,"projects":["p"]}`).want(t, http.StatusCreated)
	repo := gittest.New(t)
	c1 := repo.Commit("main", "first", map[string]string{"workflows/etl.yaml": gitETL, "schedules/etl.yaml": gitSchedule,
		"datasources/wh.yaml":  "type: postgres\nhost: db.internal\nport: 5432\ndatabase: wh\nuser: etl\n",
		"task-groups/gpu.yaml": "capacity: 2\n"})
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`","branch":"main"}`).want(t, http.StatusCreated)
	var res GitSyncResult
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &res)
	if res.Commit != c1 || len(res.Workflows) != 1 || len(res.Schedules) != 1 || res.Schedules[0].File != "schedules/etl.yaml" ||
		!res.Schedules[0].Created || len(res.Datasources) != 1 || res.Datasources[0].Name != "wh" || len(res.TaskGroups) != 1 {
		t.Fatalf("sync: %+v", res)
	}
	var sc Schedule
	b.get("/api/v1/projects/p/workflows/etl/schedule").want(t, http.StatusOK).json(t, &sc)
	if sc.Cron != "0 2 * * *" || !sc.Enabled || sc.NextFireTime == nil || sc.Params["day"] != "1" || sc.UpdatedBy != "admin" {
		t.Fatalf("the synced schedule: %+v", sc)
	}

	// Each bad commit changes the workflow too: nothing of it is applied.
	tuned := strings.Replace(gitETL, "extract and load", "tuned", 1)
	for _, c := range []struct {
		name, file, content, want string
	}{
		{"a bad cron", "schedules/etl.yaml", "cron: 0 99 * * *\n", "cron"},
		{"an unknown field", "schedules/etl.yaml", "cron: 0 3 * * *\ncorn: x\n", "corn"},
		{"a secret in clear", "schedules/etl.yaml", "cron: 0 3 * * *\nparams: {api_token: tok-in-clear}\n", `"api_token" looks like a secret`},
		{"a schedule of no workflow", "schedules/ghost.yaml", "cron: 0 3 * * *\n", "ghost"},
		{"a datasource password", "datasources/wh.yaml", "type: postgres\npassword: pw-in-git\n", `field "password"`},
		{"a datasource that differs", "datasources/wh.yaml", "type: postgres\nhost: other.internal\n", `host is "db.internal", the file says "other.internal"`},
		{"a datasource Beluga lacks", "datasources/lake.yaml", "type: mysql\n", `datasource "lake" does not exist`},
		{"a task group that differs", "task-groups/gpu.yaml", "capacity: 8\n", "capacity is 2, the file says 8"},
		{"a task group Beluga lacks", "task-groups/cpu.yaml", "capacity: 1\n", `task group "cpu" does not exist`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := gitState(t, b, "p").LastCommit
			bad := repo.Commit("main", c.name, map[string]string{"workflows/etl.yaml": tuned, c.file: c.content})
			e := b.send("POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadRequest, CodeBadRequest)
			if !strings.Contains(e.Message, bad[:12]) || !strings.Contains(e.Message, c.file+": ") || !strings.Contains(e.Message, c.want) ||
				strings.Contains(e.Message, "pw-in-git") || strings.Contains(e.Message, "tok-in-clear") {
				t.Fatalf("refusal %q: want the commit, %s and %q", e.Message, c.file, c.want)
			}
			g := gitState(t, b, "p")
			if g.LastCommit != before || g.LastErrorFile != c.file {
				t.Fatalf("binding after the refusal: %+v", g)
			}
			var def Workflow
			b.get("/api/v1/projects/p/workflows/etl").want(t, http.StatusOK).json(t, &def)
			if def.Version != 1 {
				t.Fatalf("the workflow moved to version %d", def.Version)
			}
			var now Schedule
			b.get("/api/v1/projects/p/workflows/etl/schedule").want(t, http.StatusOK).json(t, &now)
			if now.Cron != "0 2 * * *" || now.Version != sc.Version {
				t.Fatalf("the schedule changed: %+v", now)
			}
			// Put the file back as it was (or drop it), for the next case.
			restore := map[string]string{"workflows/etl.yaml": gitETL, "schedules/etl.yaml": gitSchedule,
				"datasources/wh.yaml": "type: postgres\nhost: db.internal\nport: 5432\ndatabase: wh\nuser: etl\n", "task-groups/gpu.yaml": "capacity: 2\n"}
			if _, kept := restore[c.file]; !kept {
				restore[c.file] = ""
			}
			repo.Commit("main", "undo", restore)
			b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)
		})
	}

	// A plain editor syncs: a datasource not granted to the project is
	// refused as theirs to use.
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"edit"}`).want(t, http.StatusOK)
	b.send("PUT", "/api/v1/datasources/other", `{"type":"mysql","host":"x","user":"u"}`).want(t, http.StatusCreated)
	repo.Commit("main", "other", map[string]string{"datasources/other.yaml": "type: mysql\n"})
	e := b.as(ann, "POST", "/api/v1/projects/p/git/sync", "").wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, `datasource "other" is not granted to project "p"`) {
		t.Fatalf("an editor's sync of an ungranted datasource: %s", e.Message)
	}
	repo.Commit("main", "no other", map[string]string{"datasources/other.yaml": ""})
	b.as(ann, "POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)

	// The schedule's file goes: the schedule goes, the workflow stays.
	repo.Commit("main", "unschedule", map[string]string{"schedules/etl.yaml": ""})
	res = GitSyncResult{}
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &res)
	if len(res.Schedules) != 1 || !res.Schedules[0].Deleted || res.Schedules[0].Workflow != "etl" {
		t.Fatalf("sync without the schedule file: %+v", res)
	}
	b.get("/api/v1/projects/p/workflows/etl/schedule").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/projects/p/workflows/etl").want(t, http.StatusOK)
	// A schedule made in Beluga, never in Git, is left alone.
	b.send("PUT", "/api/v1/projects/p/workflows/etl/schedule", `{"cron":"0 4 * * *"}`).want(t, http.StatusCreated)
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)
	b.get("/api/v1/projects/p/workflows/etl/schedule").want(t, http.StatusOK)
}

// TestGitWriteBackSchedule: in write_back mode a schedule's save is a
// commit of schedules/<workflow>.yaml authored by the user, its secret
// params written as *** (the value stays in Beluga), and it syncs back
// unchanged; its delete removes the file. In read_only mode both are a
// 409 naming the file, and change nothing.
func TestGitWriteBackSchedule(t *testing.T) {
	t.Parallel()
	b := setupSealed(t)
	b.mustProject("p")
	repo := gittest.New(t)
	repo.Commit("main", "first", map[string]string{"beluga/workflows/etl.yaml": gitETL})
	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`","branch":"main","dir":"beluga","mode":"write_back"}`).
		want(t, http.StatusCreated)
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"edit"}`).want(t, http.StatusOK)

	var sc Schedule
	b.as(ann, "PUT", "/api/v1/projects/p/workflows/etl/schedule?message=nightly+at+3",
		`{"cron":"0 3 * * *","params":{"db_password":"hunter2","day":"2"},"secret_params":["db_password"]}`).
		want(t, http.StatusCreated).json(t, &sc)
	if sc.GitCommit == "" || sc.Cron != "0 3 * * *" {
		t.Fatalf("the save: %+v", sc)
	}
	file := repo.Show("main", "beluga/schedules/etl.yaml")
	if !strings.Contains(file, "cron: 0 3 * * *") || strings.Contains(file, "hunter2") || !strings.Contains(file, "***") {
		t.Fatalf("the committed schedule file:\n%s", file)
	}
	if who, email, msg := repo.Head("main"); who != "ann" || email != "ann@users.beluga.invalid" || msg != "nightly at 3" {
		t.Fatalf("head commit by %q <%s>: %q", who, email, msg)
	}
	var res GitSyncResult
	b.as(ann, "POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK).json(t, &res)
	if len(res.Schedules) != 1 || res.Schedules[0].Created || res.Schedules[0].File != "beluga/schedules/etl.yaml" {
		t.Fatalf("the write-back's commit synced back: %+v", res)
	}
	if got, err := b.store.ScheduleGet(t.Context(), "p", "etl"); err != nil || !strings.HasPrefix(got.Params["db_password"], "beluga:sealed:") || got.Params["day"] != "2" {
		t.Fatalf("the schedule's params after the sync: %v (%v)", got.Params, err)
	}

	b.as(ann, "DELETE", "/api/v1/projects/p/workflows/etl/schedule?message=unscheduled", "").want(t, http.StatusNoContent)
	if repo.Show("main", "beluga/schedules/etl.yaml") != "" {
		t.Fatal("the deleted schedule's file is still on the branch")
	}
	if _, _, msg := repo.Head("main"); msg != "unscheduled" {
		t.Fatalf("head message %q", msg)
	}
	b.send("POST", "/api/v1/projects/p/git/sync", "").want(t, http.StatusOK)
	b.get("/api/v1/projects/p/workflows/etl/schedule").wantError(t, http.StatusNotFound, CodeNotFound)

	b.send("PUT", "/api/v1/projects/p/git", `{"url":"`+repo.Bare+`","branch":"main","dir":"beluga","mode":"read_only"}`).want(t, http.StatusOK)
	head := repo.Show("main", "beluga/workflows/etl.yaml")
	e := b.as(ann, "PUT", "/api/v1/projects/p/workflows/etl/schedule", `{"cron":"0 5 * * *"}`).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "beluga/schedules/etl.yaml") {
		t.Fatalf("read_only refusal %q: want the file", e.Message)
	}
	b.get("/api/v1/projects/p/workflows/etl/schedule").wantError(t, http.StatusNotFound, CodeNotFound)
	if repo.Show("main", "beluga/workflows/etl.yaml") != head {
		t.Fatal("the branch moved")
	}
}
