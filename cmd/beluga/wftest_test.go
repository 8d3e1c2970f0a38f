package main

import (
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkflowTestBinary runs the built binary end to end: the examples'
// tests (a switch taken both ways among them) pass with exit 0; a case
// whose expectation is not met exits 1 with the reason in the output and
// in the JUnit XML; a bad test file exits 2 naming the file and line.
func TestWorkflowTestBinary(t *testing.T) {
	bin := buildBeluga(t)
	dir := t.TempDir()
	run := func(args ...string) (int, string) {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}

	junit := filepath.Join(dir, "ok.xml")
	code, out := run("workflow", "test", "--junit", junit, "-v", "../../examples/quality_gate.test.yaml", "../../examples/nightly.test.yaml")
	if code != 0 {
		t.Fatalf("examples: exit %d\n%s", code, out)
	}
	for _, want := range []string{"PASS  clean data is published", "gate=succeeded->[publish]", "quarantine=skipped",
		"PASS  bad rows are quarantined", "gate=succeeded->[quarantine]", "publish=skipped", "8 passed, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	suites := readJUnit(t, junit)
	if suites.Tests != 8 || suites.Failures != 0 || len(suites.Suites) != 2 {
		t.Errorf("junit: %+v", suites)
	}

	// A wrong expectation: the gate publishes, the test says quarantine.
	spec, err := os.ReadFile("../../examples/quality_gate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "gate.yaml"), string(spec))
	write(t, filepath.Join(dir, "gate.test.yaml"), `cases:
  - name: wrong branch
    mocks:
      check: {outputs: {bad_rows: "0"}}
    expect:
      branch: {gate: [quarantine]}
      skipped: [publish]
  - name: right branch
    mocks:
      check: {outputs: {bad_rows: "0"}}
    expect:
      branch: {gate: [publish]}
`)
	junit = filepath.Join(dir, "fail.xml")
	code, out = run("workflow", "test", "--junit", junit, filepath.Join(dir, "gate.test.yaml"))
	if code != 1 {
		t.Fatalf("failing case: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"FAIL  wrong branch", "branch: expected gate to choose quarantine, it chose publish",
		"skipped: expected publish to be skipped, it ended succeeded", "PASS  right branch", "1 passed, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	suites = readJUnit(t, junit)
	if suites.Tests != 2 || suites.Failures != 1 {
		t.Fatalf("junit: %+v", suites)
	}
	c := suites.Suites[0].Cases[0]
	if c.Name != "wrong branch" || c.Failure == nil || !strings.Contains(c.Failure.Message, "publish to be skipped") ||
		!strings.Contains(c.Failure.Text, "it chose publish") ||
		!strings.Contains(c.Failure.Text, "publish to be skipped") {
		t.Errorf("junit failure: %+v", c)
	}
	if suites.Suites[0].Cases[1].Failure != nil {
		t.Errorf("the passing case has a failure: %+v", suites.Suites[0].Cases[1])
	}

	// A bad test file: exit 2, the file and line named, nothing run.
	write(t, filepath.Join(dir, "bad.test.yaml"), "workflow: gate.yaml\ncases:\n  - name: x\n    mocks:\n      nosuch: {exit_code: 1}\n")
	code, out = run("workflow", "test", "--junit", filepath.Join(dir, "bad.xml"), filepath.Join(dir, "bad.test.yaml"), filepath.Join(dir, "gate.test.yaml"))
	if code != 2 || !strings.Contains(out, "bad.test.yaml:5: case \"x\": mocks: no task \"nosuch\"") || strings.Contains(out, "PASS") {
		t.Fatalf("bad file: exit %d, want 2 naming bad.test.yaml:5\n%s", code, out)
	}
	if s := readJUnit(t, filepath.Join(dir, "bad.xml")); s.Errors != 1 {
		t.Errorf("bad file junit: %+v", s)
	}
	if code, out = run("workflow", "test"); code != 2 {
		t.Errorf("no file: exit %d\n%s", code, out)
	}
}

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d junitDoc
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatalf("junit does not parse: %v\n%s", err, b)
	}
	return d
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
