package specdiff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/spec"
)

// stored is a spec's stored form, as the store keeps it.
func stored(t *testing.T, yamlText string) []byte {
	t.Helper()
	w, err := spec.Parse([]byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := w.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompare(t *testing.T) {
	v1 := `name: etl
params: {bizdate: "20261128"}
tasks:
  - {name: extract, command: echo e}
  - {name: load, command: echo l, depends_on: [extract]}
  - {name: report, command: echo r, depends_on: [load]}
`
	cases := []struct {
		name string
		from string
		to   string
		want Diff // Text checked apart
		text []string
	}{
		{name: "same", from: v1, to: v1, want: Diff{}},
		{name: "task added with an edge", from: v1, to: v1 + "  - {name: notify, command: echo n, depends_on: [report]}\n",
			want: Diff{TasksAdded: []string{"notify"}, EdgesAdded: []Edge{{"report", "notify"}}},
			text: []string{"+  - name: notify", "+    command: echo n"}},
		{name: "task removed", from: v1, to: strings.Replace(v1, "  - {name: report, command: echo r, depends_on: [load]}\n", "", 1),
			want: Diff{TasksRemoved: []string{"report"}, EdgesRemoved: []Edge{{"load", "report"}}}},
		{name: "command and retries changed", from: v1, to: strings.Replace(v1, "{name: load, command: echo l,", "{name: load, command: echo L, retries: 2,", 1),
			want: Diff{TasksChanged: []TaskChange{{Name: "load", Changes: []Change{
				{Field: "command", From: json.RawMessage(`"echo l"`), To: json.RawMessage(`"echo L"`)},
				{Field: "retries", From: nil, To: json.RawMessage(`2`)}}}}},
			text: []string{"-    command: echo l", "+    command: echo L", "+    retries: 2"}},
		{name: "edge moved, no task field changed", from: v1, to: strings.Replace(v1, "depends_on: [load]}", "depends_on: [extract]}", 1),
			want: Diff{EdgesAdded: []Edge{{"extract", "report"}}, EdgesRemoved: []Edge{{"load", "report"}}}},
		{name: "workflow fields", from: v1, to: strings.Replace(v1, `params: {bizdate: "20261128"}`, "params: {bizdate: \"20261129\"}\nfailure_strategy: continue", 1),
			want: Diff{WorkflowFields: []Change{
				{Field: "failure_strategy", From: json.RawMessage(`"end"`), To: json.RawMessage(`"continue"`)},
				{Field: "params", From: json.RawMessage(`{"bizdate":"20261128"}`), To: json.RawMessage(`{"bizdate":"20261129"}`)}}},
			// a string of digits stays a string in YAML
			text: []string{`-  bizdate: "20261128"`, `+  bizdate: "20261129"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Compare(stored(t, c.from), stored(t, c.to), "v1", "v2")
			if err != nil {
				t.Fatal(err)
			}
			got := d
			got.Text = ""
			if g, w := norm(got), norm(c.want); g != w {
				t.Errorf("diff\n got %s\nwant %s", g, w)
			}
			if c.want.Same() != d.Same() || (d.Same() && d.Text != "") {
				t.Errorf("same: %v, text %q", d.Same(), d.Text)
			}
			if !d.Same() && !strings.HasPrefix(d.Text, "--- v1\n+++ v2\n@@") {
				t.Errorf("text diff starts %q", d.Text[:min(40, len(d.Text))])
			}
			for _, line := range c.text {
				if !strings.Contains(d.Text, "\n"+line+"\n") {
					t.Errorf("text diff has no line %q:\n%s", line, d.Text)
				}
			}
		})
	}
}

// norm is d as JSON with empty lists as null, for comparison.
func norm(d Diff) string {
	for _, p := range []*[]string{&d.TasksAdded, &d.TasksRemoved} {
		if len(*p) == 0 {
			*p = nil
		}
	}
	if len(d.WorkflowFields) == 0 {
		d.WorkflowFields = nil
	}
	if len(d.TasksChanged) == 0 {
		d.TasksChanged = nil
	}
	if len(d.EdgesAdded) == 0 {
		d.EdgesAdded = nil
	}
	if len(d.EdgesRemoved) == 0 {
		d.EdgesRemoved = nil
	}
	b, _ := json.Marshal(d)
	return string(b)
}

func TestCompareTextOmittedPastTheBound(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("name: big\ntasks:\n")
	for i := range MaxTextLines / 2 {
		a.WriteString("  - {name: t" + itoa(i) + ", command: echo}\n")
	}
	b.WriteString(a.String() + "  - {name: extra, command: echo}\n")
	d, err := Compare(stored(t, a.String()), stored(t, b.String()), "v1", "v2")
	if err != nil {
		t.Fatal(err)
	}
	if d.Text != "" || d.TextOmitted == "" || len(d.TasksAdded) != 1 {
		t.Fatalf("text %d bytes, omitted %q, added %v", len(d.Text), d.TextOmitted, d.TasksAdded)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
