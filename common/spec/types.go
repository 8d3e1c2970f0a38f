// Package spec parses and validates workflow specs written as YAML or JSON.
// A spec that passes Parse is safe to store and to run.
package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Workflow is a workflow spec as a user writes it.
type Workflow struct {
	Name        string            `json:"name" yaml:"name"`
	Description string            `json:"description,omitempty" yaml:"description,omitempty"`
	Params      map[string]string `json:"params,omitempty" yaml:"params,omitempty"`
	// SecretParams names the params (of the workflow, and the same names
	// in its tasks) whose values are secret: sealed at rest, masked in
	// answers and logs (common/secret).
	SecretParams    []string `json:"secret_params,omitempty" yaml:"secret_params,omitempty"`
	FailureStrategy string   `json:"failure_strategy,omitempty" yaml:"failure_strategy,omitempty"`
	Timeout         Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	TimeoutStrategy string   `json:"timeout_strategy,omitempty" yaml:"timeout_strategy,omitempty"`
	Priority        string   `json:"priority,omitempty" yaml:"priority,omitempty"`
	WorkerGroup     string   `json:"worker_group,omitempty" yaml:"worker_group,omitempty"`
	// Tenant is the OS user the workflow's shell and python tasks run as
	// on the worker ("": the user the worker runs as); a task's own wins.
	Tenant string `json:"tenant,omitempty" yaml:"tenant,omitempty"`
	// MaxActiveRuns bounds the started, unfinished runs of the workflow,
	// whatever started them; beyond it new runs wait, queued in order. nil:
	// no bound.
	MaxActiveRuns *int `json:"max_active_runs,omitempty" yaml:"max_active_runs,omitempty"`
	// Alerts names the channels runs alert and on what (alerts.go);
	// Deadline when a run must have succeeded by ("06:00", "2h").
	Alerts   *Alerts `json:"alerts,omitempty" yaml:"alerts,omitempty"`
	Deadline string  `json:"deadline,omitempty" yaml:"deadline,omitempty"`
	// OnDatasets schedules the workflow on datasets (common/dataset): one
	// run per partition once every input's partitions are produced
	// ("orders@daily", "events@hourly"). LateData says what a partition
	// produced again after that run does: ignore (the default) or rerun.
	// RunGrain is the grain of its runs (hourly or daily; default the
	// coarsest input's): a daily run of an hourly input waits for the
	// day's 24 hours.
	OnDatasets []string `json:"on_datasets,omitempty" yaml:"on_datasets,omitempty"`
	LateData   string   `json:"late_data,omitempty" yaml:"late_data,omitempty"`
	RunGrain   string   `json:"run_grain,omitempty" yaml:"run_grain,omitempty"`
	Tasks      []Task   `json:"tasks" yaml:"tasks"`
}

// Task is one node of a workflow spec.
type Task struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	Type        string `json:"type,omitempty" yaml:"type,omitempty"`
	// Command is the text of the process types (shell, python). It is a
	// type field like those in Fields, kept as a struct field because most
	// tasks have one.
	Command         string            `json:"command,omitempty" yaml:"command,omitempty"`
	DependsOn       []string          `json:"depends_on,omitempty" yaml:"depends_on,omitempty"`
	Params          map[string]string `json:"params,omitempty" yaml:"params,omitempty"`
	SecretParams    []string          `json:"secret_params,omitempty" yaml:"secret_params,omitempty"` // of this task's params
	Retries         int               `json:"retries,omitempty" yaml:"retries,omitempty"`
	RetryInterval   Duration          `json:"retry_interval,omitempty" yaml:"retry_interval,omitempty"`
	Timeout         Duration          `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	TimeoutStrategy string            `json:"timeout_strategy,omitempty" yaml:"timeout_strategy,omitempty"`
	Priority        string            `json:"priority,omitempty" yaml:"priority,omitempty"`
	WorkerGroup     string            `json:"worker_group,omitempty" yaml:"worker_group,omitempty"`
	TaskGroup       string            `json:"task_group,omitempty" yaml:"task_group,omitempty"`
	Tenant          string            `json:"tenant,omitempty" yaml:"tenant,omitempty"` // the workflow's when ""
	// Produces names the dataset partitions the task's success produces
	// ("warehouse.orders@${bizdate}"), resolved with its params.
	Produces []string `json:"produces,omitempty" yaml:"produces,omitempty"`
	// Fields holds the task's type fields other than command (an http
	// task's url, ...), as JSON values; its type decodes them
	// (common/tasktype). They are written inline with the fields above.
	Fields map[string]json.RawMessage `json:"-" yaml:"-"`
}

// TypeFields returns the task's type fields, command among them.
func (t *Task) TypeFields() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(t.Fields)+1)
	for k, v := range t.Fields {
		out[k] = v
	}
	if t.Command != "" {
		b, _ := json.Marshal(t.Command) // a string always encodes
		out["command"] = b
	}
	return out
}

// MarshalJSON writes the task's own fields in struct order, then its type
// fields in name order, so a spec's canonical form stays stable.
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false) // the caller's encoder decides on escaping; see Canonical
	if err := e.Encode(plain(t)); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
	if len(t.Fields) == 0 {
		return b, nil
	}
	keys := make([]string, 0, len(t.Fields))
	for k := range t.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf := bytes.NewBuffer(b[:len(b)-1])
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		if err := json.Compact(buf, t.Fields[k]); err != nil {
			return nil, fmt.Errorf("task %s: field %s: %w", t.Name, k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// taskCoreFields are the json names of Task's struct fields.
var taskCoreFields = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[Task]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}()

// Duration is a time.Duration written as a Go duration string ("30s", "2h").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\" or \"2h\", got %s", string(b))
	}
	return d.set(s)
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML accepts a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: duration must be a string such as \"30s\" or \"2h\"", n.Line)
	}
	if err := d.set(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

func (d *Duration) set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: use a number with a unit such as 30s, 10m or 2h", s)
	}
	if v < 0 {
		return fmt.Errorf("bad duration %q: must not be negative", s)
	}
	*d = Duration(v)
	return nil
}
