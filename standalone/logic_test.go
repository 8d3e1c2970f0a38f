package standalone_test

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// noFile fails the test when a task that must never run left its mark.
func noFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); err == nil {
		t.Fatalf("%s exists: a skipped task ran", filepath.Base(p))
	}
}

// skippedNeverRan checks a skipped task's row: shown, never on a worker.
func skippedNeverRan(t *testing.T, iv instanceView, name string) {
	t.Helper()
	tk := iv.task(name)
	if iv.count(name) != 1 || tk.State != "skipped" || tk.Host != "" || tk.ExitCode != nil {
		t.Fatalf("task %s: %+v (%d rows), want one skipped row that no worker ran", name, tk, iv.count(name))
	}
}

// TestConditions: on success the on_success branch runs and on_failure
// (with what only it leads to) is skipped; on failure the failure branch
// runs and, when it succeeds, the instance succeeds with the failed task
// still failed. Skipped tasks never reach a worker: their marks are never
// written.
func TestConditions(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		spec := func(name, code string) string {
			m := func(s string) string { return filepath.Join(e.dir, name+"-"+s) }
			return fmt.Sprintf(`name: %s
tasks:
  - {name: ingest, command: "exit %s"}
  - name: check
    type: conditions
    depends_on: [ingest]
    on_success: [publish]
    on_failure: [page_oncall]
  - {name: publish, command: "touch %s", depends_on: [check]}
  - {name: announce, command: "touch %s", depends_on: [publish]}
  - {name: page_oncall, command: "touch %s", depends_on: [check]}
  - {name: after_page, command: "touch %s", depends_on: [page_oncall]}
`, name, code, m("publish"), m("announce"), m("page"), m("after_page"))
		}
		e.apply(spec("cond_ok", "0"))
		iv, d := e.succeeded(e.run("cond_ok", nil), 30*time.Second)
		if iv.task("publish").State != "succeeded" || iv.task("announce").State != "succeeded" {
			t.Fatalf("on_success branch: %+v", iv.Tasks)
		}
		skippedNeverRan(t, iv, "page_oncall")
		skippedNeverRan(t, iv, "after_page")
		noFile(t, filepath.Join(e.dir, "cond_ok-page"))
		noFile(t, filepath.Join(e.dir, "cond_ok-after_page"))
		if !strings.Contains(d.outputs(), "check.branch=on_success") {
			t.Fatalf("the conditions task does not show its branch: %s", d.outputs())
		}

		e.apply(spec("cond_fail", "4"))
		iv, d = e.succeeded(e.run("cond_fail", nil), 30*time.Second)
		if tk := iv.task("ingest"); tk.State != "failed" || tk.ExitCode == nil || *tk.ExitCode != 4 {
			t.Fatalf("ingest: %+v", tk)
		}
		if iv.task("page_oncall").State != "succeeded" || iv.task("after_page").State != "succeeded" {
			t.Fatalf("on_failure branch: %+v", iv.Tasks)
		}
		skippedNeverRan(t, iv, "publish")
		skippedNeverRan(t, iv, "announce")
		noFile(t, filepath.Join(e.dir, "cond_fail-publish"))
		if !strings.Contains(d.outputs(), "check.branch=on_failure") {
			t.Fatalf("the conditions task does not show its branch: %s", d.outputs())
		}

		// The failure branch failing fails the instance, naming it.
		e.apply(strings.Replace(spec("cond_fail2", "4"), `"touch `+filepath.Join(e.dir, "cond_fail2-page")+`"`, `"exit 5"`, 1))
		iv = e.wait(e.run("cond_fail2", nil), 30*time.Second)
		if d := e.detail(iv.ID); iv.State != "failed" || !strings.Contains(d.Reason, "page_oncall") {
			t.Fatalf("instance %s (%s)", iv.State, d.Reason)
		}
	})
}

// TestSwitchOnOutputAndJoin: a switch routes on an upstream's output
// (setValue) and a run param; the chosen branch runs, the others are
// skipped and never run, and a join after the switch runs once with the
// upstream values. A run no case matches, with no default, fails naming
// the values it saw.
func TestSwitchOnOutputAndJoin(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		m := func(s string) string { return filepath.Join(e.dir, s) }
		e.apply(fmt.Sprintf(`name: routed
params: {env: prod, n: "1500"}
tasks:
  - {name: count, command: 'echo "\${setValue(rows=$n)}"'}
  - name: route
    type: switch
    depends_on: [count]
    cases:
      - {when: 'env == "prod" && int(rows) > 1000', next: [big_batch]}
      - {when: 'env == "prod"', next: [small_batch]}
    default: [skip_note]
  - {name: big_batch, command: 'touch %[1]s-$rows', depends_on: [route]}
  - {name: small_batch, command: 'touch %[2]s-$rows', depends_on: [route]}
  - {name: skip_note, command: 'touch %[3]s', depends_on: [route]}
  - {name: join, command: 'echo "$rows" > %[4]s', depends_on: [big_batch, small_batch, skip_note]}
`, m("big"), m("small"), m("note"), m("join")))
		for _, c := range []struct {
			params      map[string]string
			ran, marker string
			skipped     []string
			cas         string
		}{
			{map[string]string{"n": "1500"}, "big_batch", "big-1500", []string{"small_batch", "skip_note"}, "route.case=1"},
			{map[string]string{"n": "20"}, "small_batch", "small-20", []string{"big_batch", "skip_note"}, "route.case=2"},
			{map[string]string{"env": "dev"}, "skip_note", "note", []string{"big_batch", "small_batch"}, "route.case=default"},
		} {
			os.Remove(m("join"))
			iv, d := e.succeeded(e.run("routed", c.params), 30*time.Second)
			if iv.task(c.ran).State != "succeeded" || iv.task("join").State != "succeeded" || iv.count("join") != 1 {
				t.Fatalf("%v: %+v", c.params, iv.Tasks)
			}
			waitFile(t, m(c.marker))
			for _, s := range c.skipped {
				skippedNeverRan(t, iv, s)
			}
			if !strings.Contains(d.outputs(), c.cas) || !strings.Contains(d.outputs(), "route.next="+c.ran) {
				t.Fatalf("%v: the switch does not show its choice: %s", c.params, d.outputs())
			}
			if want := c.params["n"]; want != "" && fileText(t, m("join")) != want {
				t.Fatalf("join saw rows %q, want %q", fileText(t, m("join")), want)
			}
		}
		for _, p := range []string{"small-1500", "big-20", "note-1500"} {
			noFile(t, m(p))
		}
		// A dry run takes every branch (nothing runs, nothing is skipped).
		var dry struct{ ID int64 }
		e.do("POST", "/api/v1/projects/demo/workflows/routed/runs", `{"dry_run":true}`, http.StatusCreated, &dry)
		iv, _ := e.succeeded(dry.ID, 30*time.Second)
		if len(iv.Tasks) != 6 {
			t.Fatalf("dry run: %+v", iv.Tasks)
		}
		for _, tk := range iv.Tasks {
			if tk.State != "succeeded" || tk.Host != "" {
				t.Fatalf("dry run: %+v", iv.Tasks)
			}
		}

		e.apply(`name: unrouted
tasks:
  - {name: count, command: "echo '${setValue(rows=7)}'"}
  - name: route
    type: switch
    depends_on: [count]
    cases:
      - {when: 'int(rows) > 1000', next: [big]}
  - {name: big, command: "true", depends_on: [route]}
`)
		iv = e.wait(e.run("unrouted", nil), 30*time.Second)
		d := e.detail(iv.ID)
		if iv.State != "failed" || iv.task("route").State != "failed" || !strings.Contains(d.Reason, `rows="7"`) || iv.count("big") != 0 {
			t.Fatalf("instance %s (%s): %+v", iv.State, d.Reason, iv.Tasks)
		}
	})
}

// TestBranchSpecsRefused: a bad expression is refused naming the task,
// the case and the position; a branch naming a task that is not a direct
// downstream, or no task at all, is refused naming it.
func TestBranchSpecsRefused(t *testing.T) {
	e := start(t, "")
	for _, c := range []struct{ spec, want string }{
		{`name: bad_expr
tasks:
  - {name: a, command: "true"}
  - name: route
    type: switch
    depends_on: [a]
    cases:
      - {when: 'true', next: [b]}
      - {when: 'rows >', next: [b]}
  - {name: b, command: "true", depends_on: [route]}
`, `task \"route\": case 2: when \"rows \u003e\": unexpected token EOF at line 1, column 6`},
		{`name: not_down
tasks:
  - {name: a, command: "true"}
  - {name: check, type: conditions, depends_on: [a], on_success: [b], on_failure: [a]}
  - {name: b, command: "true", depends_on: [check]}
`, `task \"check\": branch names task \"a\", which is not a direct downstream`},
		{`name: ghost
tasks:
  - {name: a, command: "true"}
  - {name: check, type: conditions, depends_on: [a], on_success: [nobody]}
`, `task \"check\": branch names unknown task \"nobody\"`},
	} {
		name := strings.TrimPrefix(strings.SplitN(c.spec, "\n", 2)[0], "name: ")
		var body string
		e.do("PUT", "/api/v1/projects/demo/workflows/"+name, c.spec, http.StatusBadRequest, &body)
		if !strings.Contains(body, c.want) {
			t.Fatalf("%s: answer %s\nwant it to contain %s", name, body, c.want)
		}
		e.do("GET", "/api/v1/projects/demo/workflows/"+name, "", http.StatusNotFound, nil)
	}
}

// latest is the latest attempt of task name.
func latest(iv instanceView, name string) taskView {
	var last taskView
	for _, tk := range iv.Tasks {
		if tk.Name == name && tk.Attempt >= last.Attempt {
			last = tk
		}
	}
	return last
}

// TestBranchesUnderRecoverAndRerun: recover_failed of an instance that
// failed in a conditions task's failure branch runs only that branch again
// (the handled failure and the decision stand, skipped tasks stay
// skipped); rerun gives every task a new attempt, skipped ones decided
// (and skipped) anew, never run.
func TestBranchesUnderRecoverAndRerun(t *testing.T) {
	e := start(t, "")
	runs, fixed := filepath.Join(e.dir, "runs"), filepath.Join(e.dir, "fixed")
	e.apply(fmt.Sprintf(`name: paging
tasks:
  - {name: ingest, command: "echo ingest >> %[1]s; exit 4"}
  - {name: check, type: conditions, depends_on: [ingest], on_success: [publish], on_failure: [page_oncall]}
  - {name: publish, command: "echo publish >> %[1]s", depends_on: [check]}
  - {name: page_oncall, command: "echo page >> %[1]s; [ -f %[2]s ]", depends_on: [check]}
  - {name: after_page, command: "echo after >> %[1]s", depends_on: [page_oncall]}
`, runs, fixed))
	id := e.run("paging", nil)
	if iv := e.wait(id, 30*time.Second); iv.State != "failed" || latest(iv, "page_oncall").State != "failed" {
		t.Fatalf("first run: %s %+v", iv.State, iv.Tasks)
	}
	os.WriteFile(fixed, nil, 0o644)
	e.act("instance", id, "recover_failed", http.StatusAccepted)
	e.waitTask(id, "after_page", "succeeded")
	iv := e.wait(id, 30*time.Second)
	if iv.State != "succeeded" || iv.count("ingest") != 1 || iv.count("check") != 1 || iv.count("page_oncall") != 2 ||
		iv.count("publish") != 1 || latest(iv, "publish").State != "skipped" {
		t.Fatalf("after recover_failed: %s %+v", iv.State, iv.Tasks)
	}
	e.act("instance", id, "rerun", http.StatusAccepted)
	wait.UntilErr(t, 30*time.Second, "the rerun to finish", func() error {
		var v instanceView
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &v)
		if v.State == "succeeded" && v.count("after_page") == 2 {
			iv = v
			return nil
		}
		return fmt.Errorf("%s %+v", v.State, v.Tasks)
	})
	if p := latest(iv, "publish"); iv.count("publish") != 2 || p.State != "skipped" || p.Attempt != 2 || p.Host != "" {
		t.Fatalf("after rerun, publish: %+v (%d rows)", p, iv.count("publish"))
	}
	if got := runsOf(t, runs); got != "ingest,page,page,after,ingest,page,after" {
		t.Fatalf("executions %s", got)
	}
}

// TestBranchPausedThenResumed: a conditions task that became ready while
// the instance was pausing is written paused, undecided; on resume it is
// decided (a new attempt) and its branch runs, the other skipped.
func TestBranchPausedThenResumed(t *testing.T) {
	e := start(t, "")
	runs, gate := filepath.Join(e.dir, "runs"), filepath.Join(e.dir, "gate")
	e.apply(fmt.Sprintf(`name: pausebranch
tasks:
  - {name: a, command: "echo a >> %[1]s; while [ ! -f %[2]s ]; do sleep 0.01; done"}
  - {name: check, type: conditions, depends_on: [a], on_success: [yes], on_failure: ["no"]}
  - {name: "yes", command: "echo yes >> %[1]s", depends_on: [check]}
  - {name: "no", command: "echo no >> %[1]s", depends_on: [check]}
`, runs, gate))
	id := e.run("pausebranch", nil)
	e.waitTask(id, "a", "running")
	e.act("instance", id, "pause", http.StatusAccepted)
	e.applied(id, "pause")
	os.WriteFile(gate, nil, 0o644) // a finishes while pausing
	iv := e.wait(id, 30*time.Second)
	if iv.State != "paused" || latest(iv, "check").State != "paused" || iv.count("yes")+iv.count("no") != 0 {
		t.Fatalf("after pause: %s %+v", iv.State, iv.Tasks)
	}
	e.act("instance", id, "resume", http.StatusAccepted)
	e.waitTask(id, "yes", "succeeded")
	iv = e.wait(id, 30*time.Second)
	if c := latest(iv, "check"); iv.State != "succeeded" || c.State != "succeeded" || c.Attempt != 2 {
		t.Fatalf("after resume: %s %+v", iv.State, iv.Tasks)
	}
	skippedNeverRan(t, iv, "no")
	if got := runsOf(t, runs); got != "a,yes" {
		t.Fatalf("executions %s", got)
	}
}
