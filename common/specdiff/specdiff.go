// Package specdiff compares two stored versions of a workflow spec: what
// changed in the workflow's own fields, which tasks were added, removed or
// changed (field by field), which dependencies came and went, and the
// unified diff of the two as YAML.
package specdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"gopkg.in/yaml.v3"
)

// Change is one field that differs; From or To is absent (null) when the
// field is set on one side only. Values are as the stored spec holds them.
type Change struct {
	Field string          `json:"field"`
	From  json.RawMessage `json:"from"`
	To    json.RawMessage `json:"to"`
}

// TaskChange is a task of both versions whose fields differ (its
// dependencies are Edges, not fields).
type TaskChange struct {
	Name    string   `json:"name"`
	Changes []Change `json:"changes"`
}

// Edge is a dependency: To depends on From.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Diff is what changed from one version to another.
type Diff struct {
	WorkflowFields []Change     `json:"workflow_fields"` // the workflow's own fields, tasks aside
	TasksAdded     []string     `json:"tasks_added"`
	TasksRemoved   []string     `json:"tasks_removed"`
	TasksChanged   []TaskChange `json:"tasks_changed"`
	EdgesAdded     []Edge       `json:"edges_added"`
	EdgesRemoved   []Edge       `json:"edges_removed"`
	// Text is the unified diff of the two specs as YAML; empty when they
	// are the same, or when TextOmitted says why it was not made.
	Text        string `json:"text"`
	TextOmitted string `json:"text_omitted,omitempty"`
}

// Same reports whether the two versions had no difference.
func (d Diff) Same() bool {
	return len(d.WorkflowFields) == 0 && len(d.TasksAdded) == 0 && len(d.TasksRemoved) == 0 &&
		len(d.TasksChanged) == 0 && len(d.EdgesAdded) == 0 && len(d.EdgesRemoved) == 0
}

// MaxTextLines bounds the YAML lines of a side the text diff is made for:
// the line matcher's cost grows faster than the lines, and a diff of tens
// of thousands of lines is read through the structured part anyway.
const MaxTextLines = 20000

// Compare diffs two stored specs (canonical JSON, secrets masked), labelled
// fromName and toName in the text diff.
func Compare(from, to []byte, fromName, toName string) (Diff, error) {
	a, err := parse(from)
	if err != nil {
		return Diff{}, fmt.Errorf("%s: %w", fromName, err)
	}
	b, err := parse(to)
	if err != nil {
		return Diff{}, fmt.Errorf("%s: %w", toName, err)
	}
	d := Diff{WorkflowFields: changes(a.fields, b.fields, "tasks"), TasksAdded: []string{}, TasksRemoved: []string{},
		TasksChanged: []TaskChange{}, EdgesAdded: []Edge{}, EdgesRemoved: []Edge{}}
	for _, name := range a.order {
		if _, ok := b.tasks[name]; !ok {
			d.TasksRemoved = append(d.TasksRemoved, name)
		}
	}
	for _, name := range b.order {
		old, ok := a.tasks[name]
		if !ok {
			d.TasksAdded = append(d.TasksAdded, name)
			continue
		}
		if cs := changes(old, b.tasks[name], "name", "depends_on"); len(cs) > 0 {
			d.TasksChanged = append(d.TasksChanged, TaskChange{Name: name, Changes: cs})
		}
	}
	d.EdgesAdded, d.EdgesRemoved = minus(b.edges, a.edges), minus(a.edges, b.edges)
	if d.Same() {
		return d, nil
	}
	// A stored task is 4 lines of YAML or more (name, type, command,
	// priority): past the bound in tasks, the YAML is not even made.
	if n := max(len(a.order), len(b.order)); 4*n > MaxTextLines {
		d.TextOmitted = fmt.Sprintf("a spec has %d tasks, more than the %d lines of YAML the text diff is made for", n, MaxTextLines)
		return d, nil
	}
	ya, err := toYAML(from)
	if err != nil {
		return Diff{}, fmt.Errorf("%s: %w", fromName, err)
	}
	yb, err := toYAML(to)
	if err != nil {
		return Diff{}, fmt.Errorf("%s: %w", toName, err)
	}
	la, lb := difflib.SplitLines(ya), difflib.SplitLines(yb)
	if n := max(len(la), len(lb)); n > MaxTextLines {
		d.TextOmitted = fmt.Sprintf("a spec is %d lines of YAML, more than the %d the text diff is made for", n, MaxTextLines)
		return d, nil
	}
	d.Text, err = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: la, B: lb, FromFile: fromName, ToFile: toName, Context: 3})
	if err != nil {
		return Diff{}, fmt.Errorf("text diff: %w", err)
	}
	return d, nil
}

// side is one spec, its fields as stored.
type side struct {
	fields map[string]json.RawMessage
	tasks  map[string]map[string]json.RawMessage
	order  []string // task names in spec order
	edges  []Edge
}

func parse(raw []byte) (side, error) {
	var s side
	if err := json.Unmarshal(raw, &s.fields); err != nil {
		return s, fmt.Errorf("stored spec: %w", err)
	}
	var tasks []map[string]json.RawMessage
	if t, ok := s.fields["tasks"]; ok {
		if err := json.Unmarshal(t, &tasks); err != nil {
			return s, fmt.Errorf("stored spec tasks: %w", err)
		}
	}
	s.tasks = make(map[string]map[string]json.RawMessage, len(tasks))
	for _, t := range tasks {
		var name string
		var deps []string
		if err := json.Unmarshal(t["name"], &name); err != nil {
			return s, fmt.Errorf("stored spec: task name: %w", err)
		}
		if d, ok := t["depends_on"]; ok {
			if err := json.Unmarshal(d, &deps); err != nil {
				return s, fmt.Errorf("stored spec: task %s: depends_on: %w", name, err)
			}
		}
		s.tasks[name] = t
		s.order = append(s.order, name)
		for _, dep := range deps {
			s.edges = append(s.edges, Edge{From: dep, To: name})
		}
	}
	return s, nil
}

// changes lists the fields of a and b that differ, by name, skipping skip.
func changes(a, b map[string]json.RawMessage, skip ...string) []Change {
	names := map[string]bool{}
	for k := range a {
		names[k] = true
	}
	for k := range b {
		names[k] = true
	}
	out := []Change{}
	for _, k := range slices.Sorted(maps.Keys(names)) {
		if slices.Contains(skip, k) {
			continue
		}
		va, vb := compact(a[k]), compact(b[k])
		if !bytes.Equal(va, vb) {
			out = append(out, Change{Field: k, From: va, To: vb})
		}
	}
	return out
}

// compact is v without insignificant space; nil (JSON null) when absent.
func compact(v json.RawMessage) json.RawMessage {
	if v == nil {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return v
	}
	return buf.Bytes()
}

// minus is the edges of a not in b, in a's order.
func minus(a, b []Edge) []Edge {
	in := make(map[Edge]bool, len(b))
	for _, e := range b {
		in[e] = true
	}
	out := []Edge{}
	for _, e := range a {
		if !in[e] {
			out = append(out, e)
		}
	}
	return out
}

// toYAML writes a stored spec as block YAML in its stored key order (the
// spec's field order): JSON is YAML, so its node tree keeps the order, and
// clearing the styles makes the encoder write blocks and plain scalars.
func toYAML(raw []byte) (string, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("stored spec as YAML: %w", err)
	}
	var plain func(*yaml.Node)
	plain = func(n *yaml.Node) {
		n.Style = 0
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(&n)
	var buf strings.Builder
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return "", fmt.Errorf("encode YAML: %w", err)
	}
	return buf.String(), nil
}
