package wftest

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
)

// CaseResult is one case's verdict.
type CaseResult struct {
	File     string
	Name     string
	Failures []string
	Run      *RunResult
	Took     time.Duration
}

// FileResult is one test file's cases (or why it could not run: Err).
type FileResult struct {
	Path  string
	Spec  string
	Err   error // a bad test file or spec (*InputError), or the engine's
	Cases []CaseResult
	Took  time.Duration
}

// Report is every file of one command.
type Report struct {
	Files []FileResult
	// EngineErr: the embedded engine did not start (nothing ran).
	EngineErr error
	Took      time.Duration
}

// Counts are the cases passed and failed, and the files that could not run.
func (r *Report) Counts() (passed, failed, bad int) {
	for _, f := range r.Files {
		if f.Err != nil {
			bad++
		}
		for _, c := range f.Cases {
			if len(c.Failures) > 0 {
				failed++
			} else {
				passed++
			}
		}
	}
	return
}

// ExitCode is the command's: 2 when a file could not run for bad input (a
// test file or spec), else 1 when a case failed or the engine did, else 0.
func (r *Report) ExitCode() int {
	_, failed, bad := r.Counts()
	input := false
	for _, f := range r.Files {
		input = input || IsInputError(f.Err)
	}
	switch {
	case input:
		return 2
	case failed > 0 || bad > 0 || r.EngineErr != nil:
		return 1
	}
	return 0
}

// RunFiles loads every test file (all of them first: a bad one is reported
// before anything runs), then runs their cases on one engine.
func RunFiles(ctx context.Context, paths []string, log *zap.Logger) *Report {
	began := time.Now()
	rep := &Report{}
	var files []*File
	for _, p := range paths {
		f, err := Load(p)
		fr := FileResult{Path: p, Err: err}
		if f != nil {
			fr.Spec = f.SpecPath
		}
		rep.Files = append(rep.Files, fr)
		files = append(files, f)
	}
	if _, _, bad := rep.Counts(); bad > 0 {
		rep.Took = time.Since(began)
		return rep
	}
	eng, err := Start(ctx, log)
	if err != nil {
		rep.EngineErr = err
		rep.Took = time.Since(began)
		return rep
	}
	defer eng.Stop()
	for i, f := range files {
		fr := &rep.Files[i]
		fbegan := time.Now()
		p, err := eng.Prepare(ctx, f)
		if err != nil {
			fr.Err = err
			continue
		}
		for _, c := range f.Cases {
			cbegan := time.Now()
			run, err := eng.Run(ctx, p, c)
			cr := CaseResult{File: f.Path, Name: c.Name, Run: run}
			if err != nil {
				cr.Failures = []string{err.Error()}
			} else {
				cr.Failures = Check(c.Expect, run)
			}
			cr.Took = time.Since(cbegan)
			fr.Cases = append(fr.Cases, cr)
		}
		fr.Took = time.Since(fbegan)
	}
	rep.Took = time.Since(began)
	return rep
}

// WriteText writes the readable summary: per case PASS or FAIL with its
// time, the tasks as they ran, and each failure's reason.
func (r *Report) WriteText(w io.Writer, verbose bool) {
	if r.EngineErr != nil {
		fmt.Fprintf(w, "ERROR the workflow test engine did not start: %v\n", r.EngineErr)
	}
	for _, f := range r.Files {
		if f.Err != nil {
			fmt.Fprintf(w, "ERROR %s\n", f.Err)
			continue
		}
		fmt.Fprintf(w, "%s (workflow %s)\n", f.Path, f.Spec)
		for _, c := range f.Cases {
			verdict := "PASS"
			if len(c.Failures) > 0 {
				verdict = "FAIL"
			}
			fmt.Fprintf(w, "  %s  %s (%s)\n", verdict, c.Name, c.Took.Round(time.Millisecond))
			if c.Run != nil && (verbose || len(c.Failures) > 0) {
				fmt.Fprintf(w, "        run: %s", c.Run.State)
				if c.Run.Reason != "" {
					fmt.Fprintf(w, " (%s)", c.Run.Reason)
				}
				fmt.Fprintf(w, "; tasks: %s\n", c.Run.Summary())
			}
			for _, why := range c.Failures {
				fmt.Fprintf(w, "        - %s\n", why)
			}
		}
	}
	passed, failed, bad := r.Counts()
	if bad > 0 {
		fmt.Fprintf(w, "%d test file(s) could not run\n", bad)
	}
	fmt.Fprintf(w, "%d passed, %d failed (%s)\n", passed, failed, r.Took.Round(time.Millisecond))
}

// Summary lists the tasks as they ran: name=state, with the attempts when
// more than one and a choice for a branching task.
func (r *RunResult) Summary() string {
	var parts []string
	for _, n := range r.Names {
		t := r.Tasks[n]
		s := n + "=" + t.Last().State
		if len(t.Attempts) > 1 {
			s += fmt.Sprintf("(%d attempts)", len(t.Attempts))
		}
		if next, ok := t.Last().Outputs["next"]; ok && t.Last().State != string(model.TaskSkipped) && isBranching(t.Type) {
			s += "->[" + next + "]"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

func isBranching(typ string) bool { return typ == "switch" || typ == "conditions" }

// JUnit XML, the form Jenkins, GitLab, GitHub Actions reporters and most
// CI systems read: one testsuite per test file, one testcase per case.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// WriteJUnit writes the report as JUnit XML. A file that could not run is
// one testcase with an error, so CI shows it too.
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Time: secs(r.Took)}
	if r.EngineErr != nil {
		out.Tests, out.Errors = 1, 1
		out.Suites = append(out.Suites, junitSuite{Name: "engine", Tests: 1, Errors: 1, Time: "0.000",
			Cases: []junitCase{{Name: "start", Classname: "engine", Time: "0.000",
				Error: &junitProblem{Message: r.EngineErr.Error(), Type: "engine", Text: r.EngineErr.Error()}}}})
	}
	for _, f := range r.Files {
		s := junitSuite{Name: f.Path, Time: secs(f.Took)}
		if f.Err != nil {
			s.Tests, s.Errors = 1, 1
			s.Cases = append(s.Cases, junitCase{Name: "load", Classname: f.Path, Time: "0.000",
				Error: &junitProblem{Message: f.Err.Error(), Type: "bad input", Text: f.Err.Error()}})
		}
		for _, c := range f.Cases {
			jc := junitCase{Name: c.Name, Classname: f.Path, Time: secs(c.Took)}
			if c.Run != nil {
				jc.SystemOut = "run: " + c.Run.State + "; tasks: " + c.Run.Summary()
			}
			if len(c.Failures) > 0 {
				jc.Failure = &junitProblem{Message: c.Failures[0], Type: "expectation", Text: strings.Join(c.Failures, "\n")}
				s.Failures++
			}
			s.Tests++
			s.Cases = append(s.Cases, jc)
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteJUnitFile writes the JUnit XML to path.
func (r *Report) WriteJUnitFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	if err := r.WriteJUnit(f); err != nil {
		f.Close()
		return fmt.Errorf("--junit: %w", err)
	}
	return f.Close()
}
