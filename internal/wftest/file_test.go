package wftest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const gateSpec = `name: gate_wf
tasks:
  - name: check
    command: echo check
  - name: gate
    type: switch
    depends_on: [check]
    cases:
      - {when: "x == '1'", next: [a]}
    default: [b]
  - {name: a, command: echo a, depends_on: [gate]}
  - {name: b, command: echo b, depends_on: [gate]}
`

// TestLoadRefusesBadFiles: every bad test file is an InputError naming
// the file, the line where there is one, and the problem.
func TestLoadRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "wf.yaml"), []byte(gateSpec), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("name: x\ntasks:\n  - name: a\n    depends_on: [nosuch]\n    command: echo\n"), 0o644)
	for _, tc := range []struct{ name, file, body, want string }{
		{"unknown field", "wf.test.yaml", "cases:\n  - name: c\n    expect:\n      sate: failed\n", "wf.test.yaml:4: field sate not found"},
		{"not yaml", "wf.test.yaml", "cases: [\n", "wf.test.yaml:1: did not find expected node content"},
		{"no cases", "wf.test.yaml", "cases: []\n", "wf.test.yaml:1: no cases"},
		{"no name", "wf.test.yaml", "cases:\n  - params: {a: b}\n", "wf.test.yaml:2: case 1 has no name"},
		{"two cases of a name", "wf.test.yaml", "cases:\n  - name: c\n  - name: c\n", "wf.test.yaml:3: case \"c\": a second case of that name (the first is at line 2)"},
		{"mock of an unknown task", "wf.test.yaml", "cases:\n  - name: c\n    mocks:\n      nosuch: {exit_code: 1}\n", `wf.test.yaml:4: case "c": mocks: no task "nosuch" in workflow gate_wf (tasks: check, gate, a, b)`},
		{"mock of a switch", "wf.test.yaml", "cases:\n  - name: c\n    mocks:\n      gate: {exit_code: 1}\n", "wf.test.yaml:4: case \"c\": mocks: task gate is a switch, decided by the master"},
		{"bad state", "wf.test.yaml", "cases:\n  - name: c\n    expect:\n      state: done\n", `wf.test.yaml:4: case "c": expect.state: "done" is not a workflow state`},
		{"bad task state", "wf.test.yaml", "cases:\n  - name: c\n    expect:\n      tasks:\n        a: {state: ok}\n", `expect.tasks.a.state: "ok" is not a task state`},
		{"order of one", "wf.test.yaml", "cases:\n  - name: c\n    expect:\n      order: [[a]]\n", "wf.test.yaml:4: case \"c\": expect.order: each item is a list of at least two tasks"},
		{"order names an unknown task", "wf.test.yaml", "cases:\n  - name: c\n    expect:\n      order:\n        - [check,\n           zz]\n", `wf.test.yaml:6: case "c": expect.order: no task "zz"`},
		{"branch of a shell task", "wf.test.yaml", "cases:\n  - name: c\n    expect:\n      branch: {a: [b]}\n", "expect.branch: task a is a shell, not a branching task"},
		{"reserved param", "wf.test.yaml", "cases:\n  - name: c\n    params: {LD_PRELOAD: x}\n", `wf.test.yaml:3: case "c": params: param "LD_PRELOAD": names starting LD_ are reserved`},
		{"bad zone", "wf.test.yaml", "cases:\n  - name: c\n    timezone: Mars/Base\n", `wf.test.yaml:3: case "c": timezone: "Mars/Base" is not an IANA zone`},
		{"bad schedule time", "wf.test.yaml", "cases:\n  - name: c\n    schedule_time: tomorrow\n", `wf.test.yaml:3: case "c": schedule_time: "tomorrow" is not a time like 2026-03-01T02:00:00Z`},
		{"attempts and an outcome", "wf.test.yaml", "cases:\n  - name: c\n    mocks:\n      a:\n        exit_code: 1\n        attempts: [{exit_code: 0}]\n", `wf.test.yaml:4: case "c": mocks: task a has both attempts and an outcome`},
		{"bad duration", "wf.test.yaml", "cases:\n  - name: c\n    mocks:\n      a: {duration: soon}\n", `wf.test.yaml:4: duration "soon": want a Go duration`},
		{"no spec beside it", "other.test.yaml", "cases:\n  - name: c\n", "other.yaml: no such file"},
		{"spec named and missing", "x.test.yaml", "workflow: gone.yaml\ncases:\n  - name: c\n", "x.test.yaml:1: workflow: stat"},
		{"no spec by its name", "tests.yaml", "cases:\n  - name: c\n", "no workflow: name the spec"},
		{"bad spec", "x.test.yaml", "workflow: broken.yaml\ncases:\n  - name: c\n", "broken.yaml: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			_, err := Load(path)
			if err == nil || !IsInputError(err) {
				t.Fatalf("got %v, want an input error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSpecPathFor(t *testing.T) {
	for in, want := range map[string]string{"a/nightly.test.yaml": "a/nightly.yaml", "x.test.yml": "x.yml",
		"x.test.json": "x.json", "x.yaml": "", "test.yaml": ""} {
		if got := SpecPathFor(in); got != want {
			t.Errorf("SpecPathFor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMockAttempt(t *testing.T) {
	m := Mock{Attempts: []Outcome{{ExitCode: 1}, {ExitCode: 2}}}
	for n, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 2, 9: 2} {
		if got := m.Attempt(n).ExitCode; got != want {
			t.Errorf("attempt %d: exit %d, want %d", n, got, want)
		}
	}
	if (Mock{Outcome: Outcome{ExitCode: 4}}).Attempt(3).ExitCode != 4 {
		t.Error("a single outcome applies to every attempt")
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
