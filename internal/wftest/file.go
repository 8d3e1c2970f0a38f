// Package wftest runs workflow tests (`beluga workflow test`): a spec with
// its tasks mocked, run by the real master (its runner, master/flow, params
// resolution, branching types) on an embedded engine, and the outcome
// checked against what the test file expects.
//
// A test file sits next to its spec (nightly.yaml, nightly.test.yaml) and
// holds cases; each case is one run of the spec: the mocks say what each
// worker task does (exit code, outputs, duration, per attempt), the expect
// block what must come of it. See README.md, "Workflow tests".
package wftest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// File is one parsed test file and the spec it tests.
type File struct {
	Path     string // the test file
	SpecPath string
	Spec     *spec.Workflow
	Raw      []byte // the spec as written
	Cases    []Case
}

// Case is one run of the spec.
type Case struct {
	Name   string            `yaml:"name"`
	Params map[string]string `yaml:"params"`
	// ScheduleTime is the time the run is for, as a schedule's run has
	// one: $[...] params count from it ("": the run's start).
	ScheduleTime string `yaml:"schedule_time"`
	// Timezone is the IANA zone $[...] params are read in ("": UTC).
	Timezone string          `yaml:"timezone"`
	Mocks    map[string]Mock `yaml:"mocks"`
	Expect   Expect          `yaml:"expect"`
	Line     int             `yaml:"-"`
	at       *time.Time      // ScheduleTime parsed
}

// Outcome is what one attempt of a mocked task does.
type Outcome struct {
	ExitCode int               `yaml:"exit_code"`
	Outputs  map[string]string `yaml:"outputs"`
	// Duration is how long the attempt pretends to run. It is not waited
	// (tests run in virtual time): it decides a timeout, as the worker would.
	Duration Duration `yaml:"duration"`
	Message  string   `yaml:"message"`
}

// Mock is what a task does: one outcome for every attempt, or Attempts in
// turn (the last repeats).
type Mock struct {
	Outcome  `yaml:",inline"`
	Attempts []Outcome `yaml:"attempts"`
}

// Attempt is the outcome of attempt n (1-based).
func (m Mock) Attempt(n int) Outcome {
	if len(m.Attempts) == 0 {
		return m.Outcome
	}
	return m.Attempts[min(max(n, 1), len(m.Attempts))-1]
}

// Expect is what a case checks; an empty field checks nothing.
type Expect struct {
	State  string   `yaml:"state"`  // the instance's final state
	Reason string   `yaml:"reason"` // a substring of the instance's reason
	Ran    []string `yaml:"ran"`    // each ran (an attempt that was not skipped)
	// Skipped: each was skipped (a branch not taken).
	Skipped []string `yaml:"skipped"`
	// NotRun: each did not run (skipped, or never reached).
	NotRun []string `yaml:"not_run"`
	// Order: each list is a chain; every task in it ended before the next
	// one started.
	Order [][]string `yaml:"order"`
	// Branch: a branching task (switch, conditions) -> the downstream tasks
	// it chose (empty: none).
	Branch map[string][]string   `yaml:"branch"`
	Tasks  map[string]TaskExpect `yaml:"tasks"`
}

// TaskExpect checks one task's latest attempt.
type TaskExpect struct {
	State    string            `yaml:"state"`
	Attempts int               `yaml:"attempts"`
	Params   map[string]string `yaml:"params"`  // each is passed with this value
	Outputs  map[string]string `yaml:"outputs"` // each is exported with this value
}

// Duration is a Go duration in YAML ("30s").
type Duration time.Duration

// UnmarshalYAML reads "30s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: duration %q: want a Go duration like 30s or 2m", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// InputError is a bad test file or spec: exit 2. It names the file and,
// where it can, the line.
type InputError struct {
	File string
	Line int
	Msg  string
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// IsInputError reports whether err is a bad input (exit 2).
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

type fileYAML struct {
	Workflow string `yaml:"workflow"`
	Cases    []Case `yaml:"cases"`
}

// maxTestFile bounds what is read of a test file.
const maxTestFile = 4 << 20

// SpecPathFor is the spec a test file tests by default: its name without
// .test (nightly.test.yaml -> nightly.yaml).
func SpecPathFor(testPath string) string {
	dir, base := filepath.Split(testPath)
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		if s, ok := strings.CutSuffix(base, ".test"+ext); ok {
			return filepath.Join(dir, s+ext)
		}
	}
	return ""
}

// Load reads and checks a test file and its spec. Every problem is an
// *InputError.
func Load(path string) (*File, error) {
	bad := func(line int, format string, args ...any) error {
		return &InputError{File: path, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	data, err := readCapped(path)
	if err != nil {
		return nil, bad(0, "%v", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, bad(yamlMsg(err))
	}
	var fy fileYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fy); err != nil {
		return nil, bad(yamlMsg(err))
	}
	f := &File{Path: path, Cases: fy.Cases}
	if fy.Workflow != "" {
		f.SpecPath = fy.Workflow
		if !filepath.IsAbs(f.SpecPath) {
			f.SpecPath = filepath.Join(filepath.Dir(path), f.SpecPath)
		}
	} else if f.SpecPath = SpecPathFor(path); f.SpecPath == "" {
		return nil, bad(0, "no workflow: name the spec (workflow: nightly.yaml) or name the test file after it (nightly.test.yaml)")
	}
	if f.Raw, err = readCapped(f.SpecPath); err != nil {
		return nil, bad(lineAt(&root, "workflow"), "workflow: %v", err)
	}
	if f.Spec, err = spec.Parse(f.Raw); err != nil {
		return nil, &InputError{File: f.SpecPath, Msg: err.Error()}
	}
	if len(f.Cases) == 0 {
		return nil, bad(lineAt(&root, "cases"), "no cases: add at least one under cases:")
	}
	tasks := map[string]*spec.Task{}
	for i := range f.Spec.Tasks {
		tasks[f.Spec.Tasks[i].Name] = &f.Spec.Tasks[i]
	}
	names := map[string]int{}
	for i := range f.Cases {
		c := &f.Cases[i]
		c.Line = lineAt(&root, "cases", i)
		if c.Name == "" {
			return nil, bad(c.Line, "case %d has no name", i+1)
		}
		if prev, dup := names[c.Name]; dup {
			return nil, bad(c.Line, "case %q: a second case of that name (the first is at line %d)", c.Name, prev)
		}
		names[c.Name] = c.Line
		if err := checkCase(c, f.Spec, tasks, &root, i); err != nil {
			return nil, bad(err.line, "case %q: %s", c.Name, err.msg)
		}
	}
	return f, nil
}

type caseError struct {
	line int
	msg  string
}

func checkCase(c *Case, wf *spec.Workflow, tasks map[string]*spec.Task, root *yaml.Node, i int) *caseError {
	at := func(keys ...any) int {
		if l := lineAt(root, append([]any{"cases", i}, keys...)...); l > 0 {
			return l
		}
		return c.Line
	}
	known := func(line int, what, name string) *caseError {
		if _, ok := tasks[name]; ok {
			return nil
		}
		return &caseError{line, fmt.Sprintf("%s: no task %q in workflow %s (tasks: %s)", what, name, wf.Name, taskNames(wf))}
	}
	for _, name := range sortedKeys(c.Mocks) {
		if err := known(at("mocks", name), "mocks", name); err != nil {
			return err
		}
		if m := c.Mocks[name]; len(m.Attempts) > 0 && (m.ExitCode != 0 || m.Outputs != nil || m.Duration != 0 || m.Message != "") {
			return &caseError{at("mocks", name), fmt.Sprintf("mocks: task %s has both attempts and an outcome of its own; put each outcome in attempts", name)}
		}
		if def, ok := tasktype.Lookup(tasks[name].Type); ok && def.Decide != nil {
			return &caseError{at("mocks", name), fmt.Sprintf("mocks: task %s is a %s, decided by the master from its inputs; it is not mocked (mock its upstreams)", name, tasks[name].Type)}
		}
	}
	if err := params.CheckNames(c.Params); err != nil {
		return &caseError{at("params"), "params: " + err.Error()}
	}
	if c.ScheduleTime != "" {
		t, err := time.Parse(time.RFC3339, c.ScheduleTime)
		if err != nil {
			return &caseError{at("schedule_time"), fmt.Sprintf("schedule_time: %q is not a time like 2026-03-01T02:00:00Z", c.ScheduleTime)}
		}
		c.at = &t
	}
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			return &caseError{at("timezone"), fmt.Sprintf("timezone: %q is not an IANA zone (Europe/Paris, UTC)", c.Timezone)}
		}
	}
	e := c.Expect
	if e.State != "" && !validWorkflowState(e.State) {
		return &caseError{at("expect", "state"), fmt.Sprintf("expect.state: %q is not a workflow state (succeeded, failed, stopped, paused)", e.State)}
	}
	for key, list := range map[string][]string{"ran": e.Ran, "skipped": e.Skipped, "not_run": e.NotRun} {
		for j, name := range list {
			if err := known(at("expect", key, j), "expect."+key, name); err != nil {
				return err
			}
		}
	}
	for j, chain := range e.Order {
		if len(chain) < 2 {
			return &caseError{at("expect", "order", j), "expect.order: each item is a list of at least two tasks, first to last"}
		}
		for k, name := range chain {
			if err := known(at("expect", "order", j, k), "expect.order", name); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(e.Branch) {
		if err := known(at("expect", "branch", name), "expect.branch", name); err != nil {
			return err
		}
		def, _ := tasktype.Lookup(tasks[name].Type)
		if def == nil || def.Decide == nil {
			return &caseError{at("expect", "branch", name), fmt.Sprintf("expect.branch: task %s is a %s, not a branching task (switch, conditions)", name, tasks[name].Type)}
		}
	}
	for _, name := range sortedKeys(e.Tasks) {
		if err := known(at("expect", "tasks", name), "expect.tasks", name); err != nil {
			return err
		}
		if s := e.Tasks[name].State; s != "" && !validTaskState(s) {
			return &caseError{at("expect", "tasks", name, "state"), fmt.Sprintf("expect.tasks.%s.state: %q is not a task state (succeeded, failed, killed, skipped, forced_success)", name, s)}
		}
	}
	return nil
}

func validWorkflowState(s string) bool {
	switch model.WorkflowState(s) {
	case model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped, model.WorkflowPaused:
		return true
	}
	return false
}

func validTaskState(s string) bool {
	switch model.TaskState(s) {
	case model.TaskSucceeded, model.TaskFailed, model.TaskKilled, model.TaskSkipped, model.TaskForcedSuccess:
		return true
	}
	return false
}

func taskNames(wf *spec.Workflow) string {
	var out []string
	for _, t := range wf.Tasks {
		out = append(out, t.Name)
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func readCapped(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxTestFile {
		return nil, fmt.Errorf("%s is %d bytes, the limit is %d", path, fi.Size(), maxTestFile)
	}
	return os.ReadFile(path)
}

// yamlMsg is the library's error as a line and a message: "yaml: line 3:
// x" reads line 3, "x" (the first problem's line when there are several).
func yamlMsg(err error) (int, string, string) {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n")
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
	if m := yamlLine.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, "%s", m[2]
	}
	return 0, "%s", s
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// lineAt is the line of the node at path in a YAML document: a string
// walks a mapping's key, an int a sequence's index; 0 when not found.
func lineAt(root *yaml.Node, path ...any) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		found := false
		switch k := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(n.Content); j += 2 {
					if n.Content[j].Value == k {
						line, n, found = n.Content[j].Line, n.Content[j+1], true
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k < len(n.Content) {
				n, found = n.Content[k], true
				line = n.Line
			}
		}
		if !found {
			return 0
		}
	}
	return line
}
