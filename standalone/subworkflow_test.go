package standalone_test

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/store"
)

// logicView is what the logic-task tests read of an instance.
type logicView struct {
	ID       int64  `json:"id"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
	RunTimes int    `json:"run_times"`
	Parent   *struct {
		InstanceID     int64 `json:"instance_id"`
		TaskInstanceID int64 `json:"task_instance_id"`
	} `json:"parent"`
	Tasks []struct {
		ID              int64             `json:"id"`
		Name            string            `json:"name"`
		State           string            `json:"state"`
		Attempt         int               `json:"attempt"`
		ChildInstanceID *int64            `json:"child_instance_id"`
		Message         string            `json:"message"`
		Outputs         map[string]string `json:"outputs"`
		StartTime       *time.Time        `json:"start_time"`
		EndTime         *time.Time        `json:"end_time"`
		DryRun          bool              `json:"dry_run"`
	} `json:"tasks"`
}

func (e *env) logic(id int64) logicView {
	e.t.Helper()
	var v logicView
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &v)
	return v
}

// latestOf is the index of task name's latest attempt in v.Tasks (-1: none).
func (v logicView) latestOf(name string) int {
	at, best := -1, 0
	for i, t := range v.Tasks {
		if t.Name == name && t.Attempt > best {
			at, best = i, t.Attempt
		}
	}
	return at
}

// childOf waits until the latest attempt of task name of instance id has
// its child run and returns the child's id.
func (e *env) childOf(id int64, name string) int64 {
	e.t.Helper()
	var child int64
	wait.UntilErr(e.t, 30*time.Second, fmt.Sprintf("a child of task %s of instance %d", name, id), func() error {
		v := e.logic(id)
		if i := v.latestOf(name); i >= 0 && v.Tasks[i].ChildInstanceID != nil {
			child = *v.Tasks[i].ChildInstanceID
			return nil
		}
		return fmt.Errorf("tasks %+v", v.Tasks)
	})
	return child
}

// runsOfWorkflow counts the instances of a workflow in the DB.
func (e *env) runsOfWorkflow(workflow string) int {
	e.t.Helper()
	_, n, err := e.store().InstanceList(context.Background(), store.InstanceFilter{Project: "demo", Workflow: workflow})
	if err != nil {
		e.t.Fatal(err)
	}
	return int(n)
}

func (e *env) refused(spec, want string) {
	e.t.Helper()
	var name string
	for _, line := range strings.Split(spec, "\n") {
		if v, ok := strings.CutPrefix(line, "name: "); ok {
			name = strings.TrimSpace(v)
			break
		}
	}
	var body struct{ Error struct{ Message string } }
	e.do("PUT", "/api/v1/projects/demo/workflows/"+name, spec, http.StatusBadRequest, &body)
	if !strings.Contains(body.Error.Message, want) {
		e.t.Fatalf("refusal of %s: %q, want it to name %q", name, body.Error.Message, want)
	}
}

func TestSubWorkflow(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(`name: load_orders
tasks:
  - name: load
    command: echo '${setValue(rows='"$day"'-42)}'
`)
		e.apply(`name: nightly
tasks:
  - name: child
    type: sub_workflow
    workflow: load_orders
    params: {day: "${d}"}
  - {name: after, command: "test \"${rows}\" = 20261201-42", depends_on: [child]}
`)
		id := e.run("nightly", map[string]string{"d": "20261201"})
		iv, _ := e.succeeded(id, 60*time.Second)
		if iv.task("after").State != "succeeded" {
			t.Fatalf("downstream of the child: %+v", iv.Tasks)
		}
		p := e.logic(id)
		ct := p.Tasks[p.latestOf("child")]
		if ct.ChildInstanceID == nil || ct.Outputs["rows"] != "20261201-42" {
			t.Fatalf("parent task: child %v, outputs %v", ct.ChildInstanceID, ct.Outputs)
		}
		c := e.logic(*ct.ChildInstanceID)
		if c.State != "succeeded" || c.Parent == nil || c.Parent.InstanceID != id || c.Parent.TaskInstanceID != ct.ID {
			t.Fatalf("child: %s, parent %+v (want instance %d task %d)", c.State, c.Parent, id, ct.ID)
		}

		// A failing child fails the parent task and the parent.
		e.apply(`name: bad_child
tasks:
  - {name: boom, command: "exit 3"}
`)
		e.apply(`name: parent_of_bad
tasks:
  - {name: child, type: sub_workflow, workflow: bad_child}
`)
		id = e.run("parent_of_bad", nil)
		if iv := e.wait(id, 60*time.Second); iv.State != "failed" || iv.task("child").State != "failed" {
			t.Fatalf("parent of a failing child: %s, %+v", iv.State, iv.Tasks)
		}

		// Across projects: "project/name", for a child and for a dependency.
		e.do("POST", "/api/v1/projects", `{"name":"crm"}`, http.StatusCreated, nil)
		e.do("PUT", "/api/v1/projects/crm/workflows/export", "name: export\ntasks:\n  - {name: push, command: \"echo '${setValue(sent=yes)}'\"}\n", http.StatusCreated, nil)
		e.apply(`name: cross
tasks:
  - {name: child, type: sub_workflow, workflow: crm/export}
  - {name: after, type: dependent, depends_on: [child], wait_for: [{project: crm, workflow: export, task: push, date: current_hour}]}
`)
		id = e.run("cross", nil)
		e.succeeded(id, 60*time.Second)
		if v := e.logic(id); v.Tasks[v.latestOf("child")].Outputs["sent"] != "yes" || !strings.Contains(v.Tasks[v.latestOf("after")].Message, "crm/export task push") {
			t.Fatalf("across projects: %+v", v.Tasks)
		}

		// Bad specs are refused at apply and change nothing.
		e.refused(`name: orphan
tasks:
  - {name: child, type: sub_workflow, workflow: no_such_workflow}
`, "no_such_workflow")
		e.refused(`name: selfish
tasks:
  - {name: me, type: sub_workflow, workflow: selfish}
`, "demo/selfish -> demo/selfish")
		e.refused(`name: load_orders
tasks:
  - {name: back, type: sub_workflow, workflow: nightly}
`, "demo/load_orders -> demo/nightly -> demo/load_orders")
		e.refused(`name: nameless
tasks:
  - {name: child, type: sub_workflow}
`, "workflow is required")
		if n := e.runsOfWorkflow("orphan"); n != 0 {
			t.Fatalf("refused workflow has %d runs", n)
		}
	})
}

// tookUp waits until instance id's runner has applied action: its own
// history note, whose detail starts with prefix.
func (e *env) tookUp(id int64, action, prefix string) {
	e.t.Helper()
	wait.UntilErr(e.t, 30*time.Second, fmt.Sprintf("instance %d's runner to take up %s", id, action), func() error {
		var iv instanceView
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
		for _, h := range iv.History {
			if h.By == "master" && h.Action == action && strings.HasPrefix(h.Detail, prefix) {
				return nil
			}
		}
		return fmt.Errorf("history %+v", iv.History)
	})
}

// gatedChild is a child whose first task waits for a file and whose second
// fails while another file exists.
func gatedChild(dir string) string {
	return fmt.Sprintf(`name: gated
tasks:
  - {name: a, command: "echo a >> %[1]s/runs; while [ ! -f %[1]s/gate ]; do sleep 0.01; done"}
  - {name: b, command: "echo b >> %[1]s/runs; test ! -f %[1]s/bad", depends_on: [a]}
`, dir)
}

const parentOfGated = `name: parent
tasks:
  - {name: child, type: sub_workflow, workflow: gated}
`

func TestSubWorkflowStopAndResume(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(gatedChild(e.dir))
		e.apply(parentOfGated)
		id := e.run("parent", nil)
		child := e.childOf(id, "child")
		e.waitTask(child, "a", "running")
		e.act("instance", id, "stop", http.StatusAccepted)
		iv := e.wait(id, 30*time.Second)
		c := e.wait(child, 30*time.Second)
		if iv.State != "stopped" || iv.task("child").State != "killed" || c.State != "stopped" {
			t.Fatalf("after stop: parent %s, its task %s, child %s", iv.State, iv.task("child").State, c.State)
		}
		os.WriteFile(filepath.Join(e.dir, "gate"), nil, 0o644)
		e.act("instance", id, "resume", http.StatusAccepted)
		e.applied(id, "resume")
		iv, _ = e.succeeded(id, 60*time.Second)
		if got := e.childOf(id, "child"); got != child {
			t.Fatalf("resume started child %d, want the same child %d", got, child)
		}
		if c := e.logic(child); c.State != "succeeded" || e.runsOfWorkflow("gated") != 1 {
			t.Fatalf("child %s, %d child runs", c.State, e.runsOfWorkflow("gated"))
		}
		if got := runsOf(t, filepath.Join(e.dir, "runs")); got != "a,a,b" {
			t.Fatalf("executions %s", got)
		}
	})
}

func TestSubWorkflowPauseAndResume(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(gatedChild(e.dir))
		e.apply(parentOfGated)
		id := e.run("parent", nil)
		child := e.childOf(id, "child")
		e.waitTask(child, "a", "running")
		e.act("instance", id, "pause", http.StatusAccepted)
		e.applied(id, "pause")
		// The parent's request is itself a history row of the child's by
		// "master": wait for the child's runner to take the pause up.
		e.tookUp(child, "pause", "pausing:")
		os.WriteFile(filepath.Join(e.dir, "gate"), nil, 0o644) // a ends while pausing; b is held
		iv := e.wait(id, 30*time.Second)
		c := e.wait(child, 30*time.Second)
		if iv.State != "paused" || iv.task("child").State != "paused" || c.State != "paused" || c.task("b").State != "paused" {
			t.Fatalf("after pause: parent %s, its task %s, child %s, b %s", iv.State, iv.task("child").State, c.State, c.task("b").State)
		}
		e.act("instance", id, "resume", http.StatusAccepted)
		e.applied(id, "resume")
		e.succeeded(id, 60*time.Second)
		if got := e.childOf(id, "child"); got != child || e.runsOfWorkflow("gated") != 1 {
			t.Fatalf("resume: child %d (want %d), %d child runs", got, child, e.runsOfWorkflow("gated"))
		}
		if got := runsOf(t, filepath.Join(e.dir, "runs")); got != "a,b" {
			t.Fatalf("executions %s", got)
		}
	})
}

func TestSubWorkflowRerunRecoverAndDryRun(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		os.WriteFile(filepath.Join(e.dir, "gate"), nil, 0o644)
		os.WriteFile(filepath.Join(e.dir, "bad"), nil, 0o644)
		e.apply(gatedChild(e.dir))
		e.apply(parentOfGated)
		id := e.run("parent", nil)
		if iv := e.wait(id, 60*time.Second); iv.State != "failed" {
			t.Fatalf("parent with a failing child: %s", iv.State)
		}
		child := e.childOf(id, "child")
		os.Remove(filepath.Join(e.dir, "bad"))
		e.act("instance", id, "recover_failed", http.StatusAccepted)
		e.applied(id, "recover_failed")
		e.succeeded(id, 60*time.Second)
		if got := e.childOf(id, "child"); got != child || e.runsOfWorkflow("gated") != 1 {
			t.Fatalf("recover_failed: child %d (want %d), %d child runs", got, child, e.runsOfWorkflow("gated"))
		}
		if got := runsOf(t, filepath.Join(e.dir, "runs")); got != "a,b,b" {
			t.Fatalf("recover_failed ran %s, want only b again", got)
		}
		e.act("instance", id, "rerun", http.StatusAccepted)
		e.applied(id, "rerun")
		e.succeeded(id, 60*time.Second)
		if c := e.logic(child); e.childOf(id, "child") != child || c.RunTimes != 2 || e.runsOfWorkflow("gated") != 1 {
			t.Fatalf("rerun: child %d run %d times, %d child runs", e.childOf(id, "child"), c.RunTimes, e.runsOfWorkflow("gated"))
		}
		if got := runsOf(t, filepath.Join(e.dir, "runs")); got != "a,b,b,a,b" {
			t.Fatalf("rerun ran %s", got)
		}

		// A dry run of the parent creates no child.
		var out struct{ ID int64 }
		e.do("POST", "/api/v1/projects/demo/workflows/parent/runs", `{"dry_run":true}`, http.StatusCreated, &out)
		e.succeeded(out.ID, 30*time.Second)
		if v := e.logic(out.ID); v.Tasks[0].ChildInstanceID != nil || !v.Tasks[0].DryRun || e.runsOfWorkflow("gated") != 1 {
			t.Fatalf("dry run: %+v, %d child runs", v.Tasks, e.runsOfWorkflow("gated"))
		}
	})
}

func TestDependentWokenByUpstream(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		gate := filepath.Join(e.dir, "gate")
		e.apply(fmt.Sprintf(`name: ingest
tasks:
  - {name: load, command: "while [ ! -f %s ]; do sleep 0.01; done"}
`, gate))
		// An hour's fallback poll: only the upstream's finish can wake it in time.
		e.apply(`name: report
tasks:
  - name: wait_ingest
    type: dependent
    wait_for:
      - {workflow: ingest, date: today}
      - {workflow: ingest, task: load, date: current_hour}
    check_interval: 1h
  - {name: publish, command: "true", depends_on: [wait_ingest]}
`)
		id := e.run("report", nil)
		wait.UntilErr(t, 30*time.Second, "the dependent to say what it waits for", func() error {
			v := e.logic(id)
			if i := v.latestOf("wait_ingest"); i >= 0 && strings.Contains(v.Tasks[i].Message, "waiting for demo/ingest") {
				if v.Tasks[i].State != "running" {
					t.Fatalf("a waiting dependent is %s", v.Tasks[i].State)
				}
				return nil
			}
			return fmt.Errorf("tasks %+v", v.Tasks)
		})
		up := e.run("ingest", nil)
		e.waitTask(up, "load", "running")
		os.WriteFile(gate, nil, 0o644)
		e.succeeded(id, 30*time.Second)
		u, v := e.logic(up), e.logic(id)
		upEnd := u.Tasks[0].EndTime
		dep := v.Tasks[v.latestOf("wait_ingest")]
		if upEnd == nil || dep.EndTime == nil || !strings.Contains(dep.Message, "satisfied") {
			t.Fatalf("upstream %+v, dependent %+v", u.Tasks, dep)
		}
		t.Logf("dependent wake-up: upstream task ended %s, dependent succeeded %s later", upEnd.Format(time.RFC3339Nano), dep.EndTime.Sub(*upEnd))
	})
}

func TestDependentFails(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(`name: flaky
tasks:
  - {name: x, command: "exit 1"}
`)
		e.apply(`name: needs_flaky
tasks:
  - name: wait
    type: dependent
    wait_for: [{workflow: flaky, date: today}]
    on_failed: fail
    check_interval: 1h
`)
		up := e.run("flaky", nil)
		if iv := e.wait(up, 30*time.Second); iv.State != "failed" {
			t.Fatalf("upstream %s", iv.State)
		}
		id := e.run("needs_flaky", nil)
		iv := e.wait(id, 30*time.Second)
		v := e.logic(id)
		if iv.State != "failed" || !strings.Contains(v.Tasks[0].Message, "failed") {
			t.Fatalf("dependent on a failed run: %s, %+v", iv.State, v.Tasks)
		}
		e.refused(`name: lost
tasks:
  - {name: w, type: dependent, wait_for: [{workflow: nowhere, date: today}]}
`, "nowhere")
		e.refused(`name: when
tasks:
  - {name: w, type: dependent, wait_for: [{workflow: flaky, date: someday}]}
`, "someday")
	})
}

// TestWebUIChildLinks: the instance page links a sub_workflow task to its
// child run, and the child's page links back to its parent.
func TestWebUIChildLinks(t *testing.T) {
	t.Parallel() // a browser of its own; mostly waits on typing and the page
	e := start(t, "")
	e.apply("name: kid\ntasks:\n  - {name: a, command: \"true\"}\n")
	e.apply("name: mom\ntasks:\n  - {name: child, type: sub_workflow, workflow: kid}\n")
	id := e.run("mom", nil)
	e.succeeded(id, 30*time.Second)
	child := e.childOf(id, "child")
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 30*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", id))
		sel := `table.tasks tr[data-task=child] a.child-link`
		s.until("the child link", fmt.Sprintf(`document.querySelector(%s)?.getAttribute('href') === %s`, js(sel), js(fmt.Sprintf("#/instances/%d", child))))
		s.click(sel)
		s.until("the child's page with its parent", fmt.Sprintf(`location.hash === %s && document.querySelector('#parent-link')?.getAttribute('href') === %s`,
			js(fmt.Sprintf("#/instances/%d", child)), js(fmt.Sprintf("#/instances/%d", id))))
		s.click(`#parent-link`)
		s.until("the parent", fmt.Sprintf(`location.hash === %s && !!document.querySelector(%s)`, js(fmt.Sprintf("#/instances/%d", id)), js(sel)))
	})
}

// TestDependentHeldAndResumed: stopping a waiting dependent's run kills
// the wait and resume waits again in a new attempt; pausing holds the wait
// (the task is paused, not killed) and resume continues the same attempt.
// Either way the upstream's finish ends it.
func TestDependentHeldAndResumed(t *testing.T) {
	for _, c := range []struct {
		action, instance, task string
		attempts               int
	}{
		{"stop", "stopped", "killed", 2},
		{"pause", "paused", "paused", 1},
	} {
		t.Run(c.action, func(t *testing.T) {
			e := start(t, "")
			e.apply("name: source\ntasks:\n  - {name: a, command: \"true\"}\n")
			e.apply(`name: sink
tasks:
  - {name: wait, type: dependent, wait_for: [{workflow: source, date: today}], check_interval: 1h}
`)
			id := e.run("sink", nil)
			e.waitTask(id, "wait", "running")
			e.act("instance", id, c.action, http.StatusAccepted)
			if iv := e.wait(id, 30*time.Second); iv.State != c.instance || iv.task("wait").State != c.task {
				t.Fatalf("after %s: %s, wait %s", c.action, iv.State, iv.task("wait").State)
			}
			e.act("instance", id, "resume", http.StatusAccepted)
			e.applied(id, "resume")
			e.waitTask(id, "wait", "running")
			e.succeeded(e.run("source", nil), 30*time.Second)
			iv, _ := e.succeeded(id, 30*time.Second)
			if iv.count("wait") != c.attempts {
				t.Fatalf("attempts of wait: %d, want %d", iv.count("wait"), c.attempts)
			}
		})
	}
}

// TestLogicTaskTimeout: no worker enforces a master-run task's timeout;
// the master does, as a worker would: with fail, a waiting dependent stops
// waiting and fails, and a sub_workflow fails and its child is stopped.
func TestLogicTaskTimeout(t *testing.T) {
	e := start(t, "")
	e.apply("name: source\ntasks:\n  - {name: a, command: \"true\"}\n")
	e.apply(`name: sink
tasks:
  - {name: wait, type: dependent, wait_for: [{workflow: source, date: today}], check_interval: 1h, timeout: 300ms, timeout_strategy: fail}
`)
	e.apply(gatedChild(e.dir))
	e.apply(`name: parent
tasks:
  - {name: child, type: sub_workflow, workflow: gated, timeout: 300ms, timeout_strategy: fail}
`)
	sink, parent := e.run("sink", nil), e.run("parent", nil)
	for _, c := range []struct {
		id   int64
		task string
	}{{sink, "wait"}, {parent, "child"}} {
		iv := e.wait(c.id, 30*time.Second)
		v := e.logic(c.id)
		tk := v.Tasks[v.latestOf(c.task)]
		if iv.State != "failed" || tk.State != "failed" || !strings.Contains(tk.Message, "timed out after 300ms") {
			t.Fatalf("%s past its timeout: instance %s, task %+v", c.task, iv.State, tk)
		}
	}
	child := e.childOf(parent, "child")
	if c := e.wait(child, 30*time.Second); c.State != "stopped" {
		t.Fatalf("child of the timed-out sub_workflow: %s", c.State)
	}
}

// TestSubWorkflowRunQuota: a run whose sub_workflow fan-out would pass
// quota.instances_per_run fails the task that would make one run too many,
// with a message naming the setting, and makes no further run (one run made
// 421 runs and 8,000 tasks before).
func TestSubWorkflowRunQuota(t *testing.T) {
	e := start(t, "")
	e.do("PUT", "/api/v1/settings/quota.instances_per_run", `{"value":2}`, http.StatusOK, nil)
	e.apply(`name: leaf
tasks:
  - {name: one, command: "true"}
`)
	e.apply(`name: fan
tasks:
  - {name: a, type: sub_workflow, workflow: leaf}
  - {name: b, type: sub_workflow, workflow: leaf, depends_on: [a]}
`)
	id := e.run("fan", nil)
	if iv := e.wait(id, 60*time.Second); iv.State != "failed" {
		t.Fatalf("fan: %s, want failed", iv.State)
	}
	v := e.logic(id)
	a, b := v.Tasks[v.latestOf("a")], v.Tasks[v.latestOf("b")]
	if a.State != "succeeded" || b.State != "failed" || !strings.Contains(b.Message, "quota.instances_per_run") {
		t.Fatalf("a %s; b %s %q, want b failed naming quota.instances_per_run", a.State, b.State, b.Message)
	}
	if n := e.runsOfWorkflow("leaf"); n != 1 {
		t.Fatalf("%d runs of leaf, want 1", n)
	}
}
