package wftest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// TestExamples runs every examples/*.test.yaml on the engine, as
// `beluga workflow test` does: CI checks that the examples' tests pass.
// It logs each case's time (the figure docs quote; no timing is asserted).
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.test.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples' tests: %v %v", files, err)
	}
	rep := RunFiles(context.Background(), files, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	var out bytes.Buffer
	rep.WriteText(&out, true)
	t.Log("\n" + out.String())
	if code := rep.ExitCode(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var slowest time.Duration
	n := 0
	for _, f := range rep.Files {
		for _, c := range f.Cases {
			slowest = max(slowest, c.Took)
			n++
		}
	}
	t.Logf("%d cases, slowest %s, all %s", n, slowest, rep.Took)
}

// TestFailedExpectation: a case whose expectation is not met fails with
// the reason, in the text and in the JUnit XML; the others still run.
func TestFailedExpectation(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "wf.yaml"), gateSpec)
	write(t, filepath.Join(dir, "wf.test.yaml"), `cases:
  - name: x is 1 takes a
    mocks: {check: {outputs: {x: "1"}}}
    expect: {branch: {gate: [a]}, skipped: [b], state: succeeded}
  - name: otherwise b
    expect: {branch: {gate: [b]}, skipped: [a], order: [[check, gate, b]]}
  - name: wrong
    mocks: {check: {outputs: {x: "1"}}}
    expect: {state: failed, ran: [b], order: [[a, check]]}
`)
	rep := RunFiles(context.Background(), []string{filepath.Join(dir, "wf.test.yaml")}, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if code := rep.ExitCode(); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var text, junit bytes.Buffer
	rep.WriteText(&text, false)
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PASS  x is 1 takes a", "PASS  otherwise b", "FAIL  wrong",
		"state: expected failed, got succeeded", "ran: expected b to run, it ended skipped",
		"order: expected a before check: check started", "before a ended", "2 passed, 1 failed"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{`<testcase name="wrong"`, `<failure message="state: expected failed, got succeeded" type="expectation">`,
		"ran: expected b to run, it ended skipped&#xA;order: expected a before check", `tests="3" failures="1"`} {
		if !strings.Contains(junit.String(), want) {
			t.Errorf("junit lacks %q:\n%s", want, junit.String())
		}
	}
}

// TestMockedMasterTypes: sub_workflow and dependent tasks are mocked like a
// worker's (what they wait for is not the test's); their retries and the
// values they export go through the runner as any task's. A task group and
// a worker group the engine does not have are stubbed.
func TestMockedMasterTypes(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "parent.yaml"), `name: parent
tasks:
  - name: wait_upstream
    type: dependent
    wait_for:
      - {workflow: other_wf, date: today}
  - name: child
    type: sub_workflow
    workflow: child_wf
    depends_on: [wait_upstream]
    retries: 1
  - {name: after, command: "echo ${rows}", depends_on: [child], task_group: etl_slots, worker_group: gpu}
`)
	write(t, filepath.Join(dir, "parent.test.yaml"), `cases:
  - name: the child's outputs reach after
    mocks: {child: {outputs: {rows: "5"}}}
    expect:
      state: succeeded
      order: [[wait_upstream, child, after]]
      tasks: {after: {params: {rows: "5"}}}
  - name: the child fails on both attempts
    mocks: {child: {exit_code: 1}}
    expect: {state: failed, not_run: [after], tasks: {child: {attempts: 2, state: failed}}}
`)
	rep := RunFiles(context.Background(), []string{filepath.Join(dir, "parent.test.yaml")}, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	var text bytes.Buffer
	rep.WriteText(&text, true)
	if code := rep.ExitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, text.String())
	}
}

// TestSecretParamsMasked: a secret param reaches the mocked task (sealed at
// rest, opened for the dispatch as in production) and shows as *** in the
// test's checks and output, never in clear.
func TestSecretParamsMasked(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "sec.yaml"), "name: sec\nparams: {token: s3cr3t-value}\nsecret_params: [token]\ntasks:\n  - {name: a, command: \"echo ${token}\"}\n")
	write(t, filepath.Join(dir, "sec.test.yaml"), `cases:
  - name: masked
    expect: {state: succeeded, tasks: {a: {params: {token: "***"}}}}
  - name: clear
    expect: {tasks: {a: {params: {token: s3cr3t-value}}}}
`)
	rep := RunFiles(context.Background(), []string{filepath.Join(dir, "sec.test.yaml")}, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	var text bytes.Buffer
	rep.WriteText(&text, true)
	passed, failed, bad := rep.Counts()
	if passed != 1 || failed != 1 || bad != 0 {
		t.Fatalf("passed %d failed %d bad %d\n%s", passed, failed, bad, text.String())
	}
	if !strings.Contains(text.String(), `tasks.a.params.token: expected "s3cr3t-value", got "***"`) {
		t.Errorf("output:\n%s", text.String())
	}
}

// TestConditionsBothWays: a conditions task takes on_success when its
// upstream succeeds and on_failure when it fails; the failure it handles
// does not fail the run.
func TestConditionsBothWays(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "cond.yaml"), `name: cond
tasks:
  - {name: load, command: echo load, retries: 1}
  - name: check
    type: conditions
    depends_on: [load]
    on_success: [publish]
    on_failure: [page_oncall]
  - {name: publish, command: echo publish, depends_on: [check]}
  - {name: page_oncall, command: echo page, depends_on: [check]}
`)
	write(t, filepath.Join(dir, "cond.test.yaml"), `cases:
  - name: load succeeds, publish
    expect:
      state: succeeded
      branch: {check: [publish]}
      skipped: [page_oncall]
      order: [[load, check, publish]]
  - name: load fails twice, page
    mocks: {load: {exit_code: 1}}
    expect:
      state: succeeded
      branch: {check: [page_oncall]}
      skipped: [publish]
      ran: [page_oncall]
      tasks: {load: {state: failed, attempts: 2}}
  - name: the page fails, the run fails
    mocks: {load: {exit_code: 1}, page_oncall: {exit_code: 7}}
    expect: {state: failed, reason: "task page_oncall failed", skipped: [publish]}
`)
	rep := RunFiles(context.Background(), []string{filepath.Join(dir, "cond.test.yaml")}, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	var text bytes.Buffer
	rep.WriteText(&text, true)
	if code := rep.ExitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, text.String())
	}
}
