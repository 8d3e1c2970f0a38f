package spec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/dag"
)

// designYAML is a full example spec.
const designYAML = `name: nightly_etl
params: {bizdate: "$[yyyyMMdd-1]"}
failure_strategy: end        # or continue
timeout: 2h
tasks:
  - name: extract
    type: shell
    command: echo extract ${bizdate}
    retries: 2
    retry_interval: 30s
    timeout: 10m
    priority: high
    worker_group: default
  - name: load
    type: shell
    command: echo load
    depends_on: [extract]
`

// designJSON is designYAML as JSON, keys shuffled and durations spelled
// differently.
const designJSON = `
  {"tasks": [
     {"command": "echo extract ${bizdate}", "name": "extract", "type": "shell",
      "timeout": "600s", "retry_interval": "30000ms", "retries": 2,
      "worker_group": "default", "priority": "high"},
     {"depends_on": ["extract"], "name": "load", "command": "echo load"}
   ],
   "timeout": "120m", "failure_strategy": "end", "name": "nightly_etl",
   "params": {"bizdate": "$[yyyyMMdd-1]"}}
`

func TestParseDesignExample(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{"yaml": designYAML, "json": designJSON} {
		w, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w.Name != "nightly_etl" || len(w.Tasks) != 2 || w.Timeout.D() != 2*time.Hour {
			t.Errorf("%s: got %+v", name, w)
		}
		ex, load := w.Tasks[0], w.Tasks[1]
		if ex.Retries != 2 || ex.RetryInterval.D() != 30*time.Second || ex.Timeout.D() != 10*time.Minute ||
			ex.Priority != "high" || ex.Command != "echo extract ${bizdate}" {
			t.Errorf("%s: extract = %+v", name, ex)
		}
		// Defaults.
		if w.FailureStrategy != "end" || w.Priority != "medium" || w.WorkerGroup != "default" ||
			w.TimeoutStrategy != TimeoutWarn {
			t.Errorf("%s: workflow defaults: %+v", name, w)
		}
		if load.Type != TypeShell || load.Priority != "medium" || load.TimeoutStrategy != "" ||
			ex.TimeoutStrategy != TimeoutFail || load.WorkerGroup != "" {
			t.Errorf("%s: task defaults: extract %+v load %+v", name, ex, load)
		}
		if !slices.Equal(load.DependsOn, []string{"extract"}) || w.Params["bizdate"] != "$[yyyyMMdd-1]" {
			t.Errorf("%s: deps/params: %+v", name, w)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"bom and leading blank lines": "\xef\xbb\xbf\n\n" + designYAML,
		"trailing document marker":    designYAML + "---\n",
		"trailing end marker":         designYAML + "...\n",
		"json with trailing space":    designJSON + "\n\n  ",
		"yaml anchor and merge key": `name: w
tasks:
  - &a {name: a, command: "true", retries: 1}
  - {<<: *a, name: b, depends_on: [a]}
`,
		"block command and numeric param": `name: w.1-x_Y
params: {N: 5, _x: ""}
failure_strategy: continue
tasks:
  - name: a
    command: |
      set -e
      echo "$N" > /dev/null
    timeout: 1m
    timeout_strategy: warn
    retries: 100
`,
		"time params": `name: w
params: {d: "$[yyyy-MM-dd-1]", h: "dt=$[yyyyMMdd]/hr=$[HH-1/24]", m: "$[month_last_day(yyyyMMdd,-1)]", plain: "a]b$"}
tasks: [{name: a, command: x, params: {w: "$[week_first_day(yyyyMMdd,0)]"}}]
`,
		"name of 128 characters": "name: " + strings.Repeat("n", 128) + "\ntasks: [{name: a, command: x}]\n",
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse([]byte(in)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// y joins lines into a YAML document.
func y(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func TestParseRejects(t *testing.T) {
	t.Parallel()
	const head = "name: w\ntasks:\n"
	tests := []struct {
		name string
		in   string
		want []string // each must appear in the error
	}{
		// Decoding.
		{"empty", "", []string{"spec is empty"}},
		{"blank", " \n\t\n", []string{"spec is empty"}},
		{"only a comment", "# nothing\n", []string{"spec is empty"}},
		{"yaml syntax", y("name: [w", "tasks: []"), []string{"line"}},
		{"yaml tab indentation", y("name: w", "tasks:", "\t- name: a"), []string{"line 3"}},
		{"yaml top-level list", y("- name: w"), []string{"line 1", "into a workflow"}},
		{"yaml unknown workflow field", y("name: w", "owner: me", "tasks: [{name: a, command: x}]"),
			[]string{"line 2", `unknown field "owner" in the workflow`}},
		{"yaml unknown task field", y(head+"  - name: a", "    comand: x"),
			[]string{"line 4", `unknown field "comand" in a task (tasks[0]); did you mean "command"?`}},
		{"yaml wrong case field", y("Name: w", "tasks: [{name: a, command: x}]"),
			[]string{"line 1", `unknown field "Name" in the workflow; did you mean "name"?`}},
		{"yaml duplicate key", y("name: w", "name: v", "tasks: [{name: a, command: x}]"),
			[]string{"line 2", `mapping key "name" already defined at line 1`}},
		{"yaml second document", designYAML + "---\nname: other\n", []string{"line 19", "one YAML document"}},
		{"yaml bad task duration", y(head+"  - name: a", "    command: x", "    timeout: 10x"),
			[]string{"line 5", `tasks[0].timeout: bad duration "10x"`}},
		{"yaml problems are all reported", y(head+"  - name: a", "    comand: x", "    timeout: 10x", "    retries: 1.5",
			"  - {name: b, command: x, owner: me}"),
			[]string{"line 4", `unknown field "comand"`, "line 5", `tasks[0].timeout: bad duration "10x"`,
				"line 6", `tasks[0].retries: expected an integer, got "1.5"`, "line 7", `unknown field "owner" in a task (tasks[1])`}},
		{"yaml unknown field via merge key", y("name: w", "tasks:", "  - &a {name: a, command: x, retires: 1}", "  - {<<: *a, name: b}"),
			[]string{"line 3", `unknown field "retires" in a task (tasks[0]); did you mean "retries"?`}},
		{"yaml negative duration", y(head+"  - name: a", "    command: x", "    retry_interval: -5s"),
			[]string{"line 5", "must not be negative"}},
		{"yaml bad workflow duration", y("name: w", "timeout: soon", "tasks: [{name: a, command: x}]"),
			[]string{"line 2", `bad duration "soon"`}},
		{"yaml duration as list", y("name: w", "timeout: [1]", "tasks: [{name: a, command: x}]"),
			[]string{"line 2", "duration must be a string"}},
		{"yaml retries not a number", y(head+"  - name: a", "    command: x", "    retries: two"),
			[]string{"line 5", `tasks[0].retries: expected an integer, got "two"`}},
		{"yaml depends_on not a list", y(head+"  - name: a", "    command: x", "    depends_on: b"),
			[]string{"line 5", "tasks[0].depends_on: expected a list of names"}},
		{"yaml tasks not a list", y("name: w", "tasks: {a: 1}"),
			[]string{"line 2", "cannot unmarshal !!map into []a task"}},
		{"json syntax", "{\n\"name\": \"w\",\n\"tasks\": [}\n", []string{"line 3", "invalid character '}'"}},
		{"json truncated", `{"name": "w", "tasks": [`, []string{"unexpected end of JSON input"}},
		{"json trailing data", `{"name": "w", "tasks": [{"name": "a", "command": "x"}]}` + "\n{}",
			[]string{"line 2", "data after the JSON object"}},
		{"json unknown workflow field", "{\"name\": \"w\",\n \"owner\": \"me\", \"tasks\": [{\"name\": \"a\", \"command\": \"x\"}]}",
			[]string{"line 2", `unknown field "owner" in the workflow`}},
		{"json unknown task field", "{\"name\": \"w\", \"tasks\": [{\"name\": \"a\", \"command\": \"x\"},\n{\"name\": \"b\", \"comand\": \"x\"}]}",
			[]string{"line 2", `unknown field "comand" in a task (tasks[1])`}},
		{"json wrong case field", `{"Name": "w", "tasks": [{"name": "a", "command": "x"}]}`,
			[]string{"line 1", `unknown field "Name"`, `did you mean "name"?`}},
		{"json duplicate key", "{\"name\": \"w\",\n\"name\": \"v\", \"tasks\": [{\"name\": \"a\", \"command\": \"x\"}]}",
			[]string{"line 2", "name: field appears twice"}},
		{"json duplicate param", `{"name": "w", "params": {"a": "1", "a": "2"}, "tasks": [{"name": "a", "command": "x"}]}`,
			[]string{"params.a: field appears twice"}},
		{"json bad task duration", "{\"name\": \"w\", \"tasks\": [\n{\"name\": \"a\", \"command\": \"x\",\n\"retry_interval\": \"3 minutes\"}]}",
			[]string{"line 3", "tasks[0].retry_interval", `bad duration "3 minutes"`}},
		{"json duration as number", `{"name": "w", "timeout": 30, "tasks": [{"name": "a", "command": "x"}]}`,
			[]string{"line 1", "timeout: duration must be a string"}},
		{"json type mismatch", "{\"name\": \"w\", \"tasks\": [{\"name\": \"a\", \"command\": \"x\",\n\"retries\": \"two\"}]}",
			[]string{"line 2", "tasks.retries: expected an integer, got string"}},
		{"json param not a string", `{"name": "w", "params": {"n": 5}, "tasks": [{"name": "a", "command": "x"}]}`,
			[]string{"params", "got number"}},

		// Workflow fields.
		{"missing workflow name", y("tasks: [{name: a, command: x}]"), []string{"workflow name is required"}},
		{"bad workflow name", y("name: nightly etl", "tasks: [{name: a, command: x}]"),
			[]string{`workflow: name "nightly etl"`, "letters, digits"}},
		{"workflow name too long", y("name: "+strings.Repeat("n", 129), "tasks: [{name: a, command: x}]"),
			[]string{"workflow: name", "1 to 128"}},
		{"workflow name dot-dot", y("name: ..", "tasks: [{name: a, command: x}]"), []string{`workflow: name ".."`}},
		{"no tasks", y("name: w"), []string{"workflow has no tasks"}},
		{"empty task list", y("name: w", "tasks: []"), []string{"workflow has no tasks"}},
		{"bad workflow priority", y("name: w", "priority: urgent", "tasks: [{name: a, command: x}]"),
			[]string{`workflow: priority "urgent"`, "highest, high, medium, low or lowest"}},
		{"bad failure strategy", y("name: w", "failure_strategy: abort", "tasks: [{name: a, command: x}]"),
			[]string{`workflow: failure_strategy "abort": use end or continue`}},
		{"task-only timeout strategy on workflow", y("name: w", "timeout: 1h", "timeout_strategy: fail", "tasks: [{name: a, command: x}]"),
			[]string{`workflow: timeout_strategy "fail": use warn or stop`}},
		{"workflow timeout strategy without timeout", y("name: w", "timeout_strategy: stop", "tasks: [{name: a, command: x}]"),
			[]string{`workflow: timeout_strategy "stop" needs a timeout`}},
		{"bad workflow param", y("name: w", "params: {1st: a, ok_1: b, a-b: c}", "tasks: [{name: a, command: x}]"),
			[]string{`workflow: param "1st"`, `workflow: param "a-b"`, "environment variable name"}},
		{"bad workflow time param", y("name: w", `params: {bizdate: "$[yyyyQQ]", ok: "$[yyyyMMdd-1]", day: "x$[yyyyMMdd"}`, "tasks: [{name: a, command: x}]"),
			[]string{`workflow: param "bizdate": $[yyyyQQ]: unknown pattern "QQ"`, `workflow: param "day": $[yyyyMMdd: unterminated`}},
		{"bad workflow time function", y("name: w", `params: {m: "$[add_months(yyyyMMdd)]"}`, "tasks: [{name: a, command: x}]"),
			[]string{`workflow: param "m": $[add_months(yyyyMMdd)]: add_months: write add_months(FORMAT,N)`}},
		{"bad worker group", y("name: w", "worker_group: a/b", "tasks: [{name: a, command: x}]"),
			[]string{`workflow: worker_group "a/b"`}},

		// Tasks.
		{"task without name", y(head+"  - name: a", "    command: x", "  - command: y"), []string{"task #2: name is required"}},
		{"bad task name", y(head+"  - name: a b", "    command: x"), []string{`task "a b": bad name`}},
		{"task without command", y(head+"  - name: a", "    command: x", "  - name: b"),
			[]string{`task "b": command is required for type shell`}},
		{"blank command", y(head+"  - name: a", "    command: '  '"), []string{`task "a": command is required`}},
		{"duplicate task name", y(head+"  - {name: a, command: x}", "  - {name: b, command: x}", "  - {name: a, command: y}"),
			[]string{`task "a": duplicate name (task #1 and #3)`}},
		{"unknown dependency", y(head+"  - {name: a, command: x}", "  - {name: b, command: x, depends_on: [a, nope]}"),
			[]string{`task "b": depends_on names unknown task "nope"`}},
		{"self dependency", y(head + "  - {name: a, command: x, depends_on: [a]}"), []string{`task "a": depends on itself`}},
		{"duplicate dependency", y(head+"  - {name: a, command: x}", "  - {name: b, command: x, depends_on: [a, a]}"),
			[]string{`task "b": depends_on lists "a" twice`}},
		{"cycle", y(head+"  - {name: a, command: x, depends_on: [c]}", "  - {name: b, command: x, depends_on: [a]}",
			"  - {name: c, command: x, depends_on: [b]}", "  - {name: d, command: x, depends_on: [c]}"),
			[]string{"cycle: a -> b -> c -> a"}},
		{"two-task cycle", y(head+"  - {name: x, command: x}", "  - {name: b, command: x, depends_on: [c, x]}",
			"  - {name: c, command: x, depends_on: [b]}"),
			[]string{"cycle: b -> c -> b"}},
		{"unknown type", y(head + "  - {name: a, type: perl, command: x}"), []string{`task "a": unknown type "perl" (supported: conditions, dependent, http, python, shell, sql, sub_workflow, switch)`}},
		{"field of another type", y(head + "  - {name: a, command: x, url: \"http://h/\"}"), []string{`task "a": field "url" does not belong to type shell (its fields: command)`}},
		{"http without url", y(head + "  - {name: a, type: http}"), []string{`task "a": url is required for type http`}},
		{"http with a command", y(head + "  - {name: a, type: http, url: \"http://h/\", command: x}"), []string{`task "a": field "command" does not belong to type http`}},
		{"http bad expect_status", y(head + "  - {name: a, type: http, url: \"http://h/\", expect_status: [200, 99]}"), []string{`task "a": expect_status 99: a status is 100 to 599`}},
		{"http expect_status not a list", y(head + "  - {name: a, type: http, url: \"http://h/\", expect_status: ok}"), []string{`task "a": field "expect_status"`}},
		{"http bad url", y(head + "  - {name: a, type: http, url: \"ftp://h/\"}"), []string{`want an http:// or https:// URL`}},
		{"http bad output name", y(head + "  - {name: a, type: http, url: \"http://h/\", outputs: {1x: data.id}}"), []string{`outputs: "1x" is not an identifier`}},
		{"python without script", y(head + "  - {name: a, type: python}"), []string{`task "a": command is required for type python`}},
		{"typo of a type field", y(head + "  - {name: a, type: http, urll: \"http://h/\"}"), []string{`unknown field "urll" in a task (tasks[0]); did you mean "url"?`}},
		{"bad task priority", y(head + "  - {name: a, command: x, priority: top}"), []string{`task "a": priority "top"`}},
		{"workflow-only timeout strategy on task", y(head + "  - {name: a, command: x, timeout: 1m, timeout_strategy: stop}"),
			[]string{`task "a": timeout_strategy "stop": use warn, fail or warn_fail`}},
		{"task timeout strategy without timeout", y(head + "  - {name: a, command: x, timeout_strategy: warn}"),
			[]string{`task "a": timeout_strategy "warn" needs a timeout`}},
		{"negative retries", y(head + "  - {name: a, command: x, retries: -1}"), []string{`task "a": retries -1 out of range 0..100`}},
		{"too many retries", y(head + "  - {name: a, command: x, retries: 101}"), []string{`task "a": retries 101 out of range`}},
		{"bad task param", y(head + "  - {name: a, command: x, params: {\"\": v, \"x y\": v}}"),
			[]string{`task "a": param ""`, `task "a": param "x y"`}},
		{"bad task time param", y(head + `  - {name: a, command: x, params: {hour: "$[yyyyMMddHH-1/12]"}}`),
			[]string{`task "a": param "hour": $[yyyyMMddHH-1/12]: offset "-1/12"`}},
		{"bad task worker group", y(head + "  - {name: a, command: x, worker_group: \"..\"}"),
			[]string{`task "a": worker_group ".."`}},
		{"NUL in a command", y(head + "  - {name: a, command: \"echo a\\0b\"}"),
			[]string{`task "a": command holds a NUL byte`}},
		{"control character in a task param", y(head + "  - {name: a, command: x, params: {P: \"a\\eb\"}}"),
			[]string{`task "a": param "P": control character U+001B at byte 1`}},
		{"NUL in a workflow param", y("name: w", "params: {P: \"\\0\"}", "tasks: [{name: a, command: x}]"),
			[]string{`workflow: param "P": control character U+0000 at byte 0`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", w)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("error %T is not a *ValidationError", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	t.Parallel()
	big := designYAML + "# " + strings.Repeat("x", MaxSpecBytes) + "\n"
	_, err := Parse([]byte(big))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("the limit is %d", MaxSpecBytes)) {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateCollectsProblems(t *testing.T) {
	t.Parallel()
	w := &Workflow{Tasks: []Task{
		{Name: "a", DependsOn: []string{"b"}},
		{Name: "b", Command: "x", DependsOn: []string{"a"}, Retries: -3},
	}}
	err := w.Validate()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		"workflow name is required",
		`task "a": command is required for type shell`,
		`task "b": retries -3 out of range 0..100`,
		"cycle: a -> b -> a",
	}
	if !slices.Equal(ve.Problems, want) {
		t.Errorf("problems:\n%q\nwant\n%q", ve.Problems, want)
	}
	if got := err.Error(); got != "invalid workflow spec: "+strings.Join(want, "; ") {
		t.Errorf("message %q", got)
	}

	// Many problems: the message is capped.
	w = &Workflow{Name: "w"}
	for i := range 50 {
		w.Tasks = append(w.Tasks, Task{Name: fmt.Sprintf("t%d", i)})
	}
	err = w.Validate()
	if !errors.As(err, &ve) || len(ve.Problems) != maxProblems || ve.Omitted != 30 ||
		!strings.HasSuffix(err.Error(), "; and 30 more") {
		t.Errorf("capped error: %v", err)
	}
}

func TestValidateTooManyTasks(t *testing.T) {
	t.Parallel()
	w := chainSpec(MaxTasks + 1)
	err := w.Validate()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("workflow has %d tasks, the limit is %d", MaxTasks+1, MaxTasks)) {
		t.Fatalf("err = %v", err)
	}
	if err := chainSpec(MaxTasks).Validate(); err != nil {
		t.Fatalf("%d tasks: %v", MaxTasks, err)
	}
}

func TestValidateBeforeDefaults(t *testing.T) {
	t.Parallel()
	// Parse applies defaults; a Workflow built in code need not.
	w := &Workflow{Name: "w", Tasks: []Task{{Name: "a", Command: "true"}}}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestCanonicalSameMeaningSameHash(t *testing.T) {
	t.Parallel()
	_, want := canonical(t, designYAML)
	same := map[string]string{
		"json": designJSON,
		"compact json": `{"name":"nightly_etl","params":{"bizdate":"$[yyyyMMdd-1]"},"timeout":"2h","tasks":[` +
			`{"name":"extract","command":"echo extract ${bizdate}","retries":2,"retry_interval":"30s","timeout":"10m","priority":"high","worker_group":"default"},` +
			`{"name":"load","command":"echo load","depends_on":["extract"]}]}`,
		"defaults spelled out": `name: nightly_etl
failure_strategy: end
priority: medium
worker_group: default
timeout: 2h
timeout_strategy: warn
params:
  bizdate: $[yyyyMMdd-1]
tasks:
- {name: extract, type: shell, command: "echo extract ${bizdate}", retries: 2, retry_interval: 30s,
   timeout: 10m, timeout_strategy: fail, priority: high, worker_group: default}
- name: load
  type: shell
  priority: medium
  command: echo load
  params: {}
  depends_on:
    - extract
`,
	}
	for name, in := range same {
		if _, got := canonical(t, in); got != want {
			t.Errorf("%s: hash %s, want %s", name, got, want)
		}
	}
}

func TestCanonicalChangeOfMeaningChangesHash(t *testing.T) {
	t.Parallel()
	base, want := canonical(t, designYAML)
	edits := map[string]func(w *Workflow){
		"workflow name":       func(w *Workflow) { w.Name = "other" },
		"description":         func(w *Workflow) { w.Description = "d" },
		"param value":         func(w *Workflow) { w.Params = map[string]string{"bizdate": "20240101"} },
		"extra param":         func(w *Workflow) { w.Params = map[string]string{"bizdate": "$[yyyyMMdd-1]", "x": ""} },
		"failure strategy":    func(w *Workflow) { w.FailureStrategy = "continue" },
		"workflow timeout":    func(w *Workflow) { w.Timeout = Duration(time.Hour) },
		"workflow timeout st": func(w *Workflow) { w.TimeoutStrategy = TimeoutStop },
		"workflow priority":   func(w *Workflow) { w.Priority = "low" },
		"workflow group":      func(w *Workflow) { w.WorkerGroup = "gpu" },
		"max active runs":     func(w *Workflow) { n := 2; w.MaxActiveRuns = &n },
		"command":             func(w *Workflow) { w.Tasks[1].Command = "echo load " },
		"dependency removed":  func(w *Workflow) { w.Tasks[1].DependsOn = nil },
		"task order":          func(w *Workflow) { w.Tasks[0], w.Tasks[1] = w.Tasks[1], w.Tasks[0] },
		"retries":             func(w *Workflow) { w.Tasks[0].Retries = 3 },
		"retry interval":      func(w *Workflow) { w.Tasks[0].RetryInterval = Duration(time.Minute) },
		"task timeout":        func(w *Workflow) { w.Tasks[0].Timeout = Duration(11 * time.Minute) },
		"task timeout st":     func(w *Workflow) { w.Tasks[0].TimeoutStrategy = TimeoutWarn },
		"task priority":       func(w *Workflow) { w.Tasks[0].Priority = "highest" },
		"task group":          func(w *Workflow) { w.Tasks[1].WorkerGroup = "default" },
		"task task_group":     func(w *Workflow) { w.Tasks[1].TaskGroup = "db" },
		"task param":          func(w *Workflow) { w.Tasks[1].Params = map[string]string{"a": "b"} },
		"task description":    func(w *Workflow) { w.Tasks[1].Description = "x" },
		"task name":           func(w *Workflow) { w.Tasks[1].Name = "load2" },
	}
	for name, edit := range edits {
		w, err := Parse([]byte(designYAML))
		if err != nil {
			t.Fatal(err)
		}
		edit(w)
		got, hash, err := w.Canonical()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if hash == want || bytes.Equal(got, base) {
			t.Errorf("%s: hash unchanged", name)
		}
	}
}

func TestCanonicalRoundTripAndNoMutation(t *testing.T) {
	t.Parallel()
	w := &Workflow{Name: "w", Tasks: []Task{{Name: "a", Command: "test 1 > 0 && echo '<ok>'", Timeout: Duration(time.Minute)}}}
	out, hash, err := w.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if w.Tasks[0].Type != "" || w.FailureStrategy != "" {
		t.Errorf("Canonical changed its receiver: %+v", w)
	}
	if !bytes.Contains(out, []byte(`"command":"test 1 > 0 && echo '<ok>'"`)) {
		t.Errorf("command escaped: %s", out)
	}
	const want = `{"name":"w","failure_strategy":"end","priority":"medium","worker_group":"default",` +
		`"tasks":[{"name":"a","type":"shell","command":"test 1 > 0 && echo '<ok>'","timeout":"1m0s",` +
		`"timeout_strategy":"fail","priority":"medium"}]}`
	if string(out) != want {
		t.Errorf("canonical\n%s\nwant\n%s", out, want)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	out2, hash2, err := back.Canonical()
	if err != nil || hash2 != hash || !bytes.Equal(out, out2) {
		t.Errorf("round trip: %s %v", out2, err)
	}
	if _, _, err := (&Workflow{}).Canonical(); err == nil {
		t.Error("Canonical of an invalid spec succeeded")
	}
}

func canonical(t *testing.T, in string) ([]byte, string) {
	t.Helper()
	w, err := Parse([]byte(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	out, hash, err := w.Canonical()
	if err != nil {
		t.Fatalf("Canonical: %v", err)
	}
	if len(hash) != 64 {
		t.Fatalf("hash %q", hash)
	}
	return out, hash
}

func TestExampleNightly(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../examples/nightly.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]string, len(w.Tasks))
	var edges [][2]string
	for i, task := range w.Tasks {
		nodes[i] = task.Name
		for _, d := range task.DependsOn {
			edges = append(edges, [2]string{d, task.Name})
		}
		if !strings.Contains(task.Command, "${bizdate}") {
			t.Errorf("task %s does not use ${bizdate}", task.Name)
		}
	}
	g, err := dag.New(nodes, edges)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"extract", "transform_a", "transform_b", "load", "report"}
	if got := g.TopoOrder(); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if got := g.Upstream("load"); !slices.Equal(got, []string{"transform_a", "transform_b"}) {
		t.Errorf("load upstreams %v", got)
	}
	if _, ok := w.Params["bizdate"]; !ok {
		t.Error("no bizdate param")
	}
}

// chainSpec builds t0 <- t1 <- ... <- t(n-1).
func chainSpec(n int) *Workflow {
	w := &Workflow{Name: "chain", Tasks: make([]Task, n)}
	for i := range w.Tasks {
		w.Tasks[i] = Task{Name: fmt.Sprintf("task_%05d", i), Command: "echo hi"}
		if i > 0 {
			w.Tasks[i].DependsOn = []string{w.Tasks[i-1].Name}
		}
	}
	return w
}

// fanOutSpec builds one root that every other task depends on.
func fanOutSpec(n int) *Workflow {
	w := &Workflow{Name: "fan_out", Tasks: make([]Task, n)}
	for i := range w.Tasks {
		w.Tasks[i] = Task{Name: fmt.Sprintf("task_%05d", i), Command: "echo hi"}
		if i > 0 {
			w.Tasks[i].DependsOn = []string{w.Tasks[0].Name}
		}
	}
	return w
}

// fanInSpec builds one sink that depends on every other task.
func fanInSpec(n int) *Workflow {
	w := &Workflow{Name: "fan_in", Tasks: make([]Task, n)}
	for i := range w.Tasks {
		w.Tasks[i] = Task{Name: fmt.Sprintf("task_%05d", i), Command: "echo hi"}
	}
	for i := range n - 1 {
		w.Tasks[n-1].DependsOn = append(w.Tasks[n-1].DependsOn, w.Tasks[i].Name)
	}
	return w
}

var largeSpecs = map[string]func(int) *Workflow{"chain": chainSpec, "fan-out": fanOutSpec, "fan-in": fanInSpec}

func TestLargeSpecsParse(t *testing.T) {
	t.Parallel()
	for name, build := range largeSpecs {
		js, _, err := build(MaxTasks).Canonical()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Defaults make the stored form of 10,000 tasks larger than a request
		// may be: ParseStored reads it back.
		back, err := ParseStored(js)
		if err != nil {
			t.Fatalf("%s: ParseStored: %v", name, err)
		}
		if len(back.Tasks) != MaxTasks {
			t.Fatalf("%s: %d tasks", name, len(back.Tasks))
		}
	}
	if _, err := Parse(chainYAML()); err != nil {
		t.Fatalf("10,000 tasks of YAML: %v", err)
	}
}

// chainYAML is a 10,000-task chain as a user would write it, under MaxSpecBytes.
func chainYAML() []byte {
	var sb strings.Builder
	sb.WriteString("name: chain\ntasks:\n")
	for i := range MaxTasks {
		fmt.Fprintf(&sb, "  - name: task_%05d\n    command: echo hi\n", i)
		if i > 0 {
			fmt.Fprintf(&sb, "    depends_on: [task_%05d]\n", i-1)
		}
	}
	return []byte(sb.String())
}

func BenchmarkValidate(b *testing.B) {
	for _, name := range []string{"chain", "fan-out", "fan-in"} {
		w := largeSpecs[name](MaxTasks)
		b.Run(name+"-10000", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	js, _, err := chainSpec(MaxTasks).Canonical()
	if err != nil {
		b.Fatal(err)
	}
	for name, data := range map[string][]byte{"json": js, "yaml": chainYAML()} {
		b.Run(name+"-chain-10000", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseStored(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzParse: no input makes Parse panic, and whatever it accepts has a
// canonical form that parses back to the same hash.
func FuzzParse(f *testing.F) {
	f.Add([]byte(designYAML))
	f.Add([]byte(designJSON))
	f.Add([]byte(`{"name":"w","tasks":[{"name":"a","command":"x","depends_on":["a"]}]}`))
	f.Add([]byte("name: w\ntasks:\n  - {name: a, command: x, timeout: 1m}\n---\n"))
	f.Add([]byte("name: w\ntasks:\n  - &a {name: a, command: x}\n  - {<<: *a, name: b}\n"))
	f.Add([]byte("name: &n w\ntasks: &t\n  - {name: *n, command: x, depends_on: *t}\n"))
	f.Add(deepBomb())
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Parse(data)
		if err != nil {
			return
		}
		out, hash, err := w.Canonical()
		if err != nil {
			t.Fatalf("accepted spec has no canonical form: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("canonical form rejected: %v\n%s", err, out)
		}
		if _, hash2, _ := back.Canonical(); hash2 != hash {
			t.Fatalf("hash changed on round trip")
		}
	})
}

// max_active_runs is a positive integer or absent; anything else is a
// problem naming the field.
func TestMaxActiveRuns(t *testing.T) {
	t.Parallel()
	const body = "tasks: [{name: a, command: x}]\n"
	w, err := Parse([]byte("name: w\nmax_active_runs: 2\n" + body))
	if err != nil || w.MaxActiveRuns == nil || *w.MaxActiveRuns != 2 {
		t.Fatalf("max_active_runs: 2: %v, %+v", err, w)
	}
	if w, err := Parse([]byte("name: w\n" + body)); err != nil || w.MaxActiveRuns != nil {
		t.Fatalf("absent: %v, %+v", err, w)
	}
	for _, v := range []string{"0", "-1", "two", "1.5", "2000000"} {
		_, err := Parse([]byte("name: w\nmax_active_runs: " + v + "\n" + body))
		if err == nil || !strings.Contains(err.Error(), "max_active_runs") {
			t.Errorf("max_active_runs: %s: want an error naming the field, got %v", v, err)
		}
	}
}
