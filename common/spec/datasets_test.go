package spec

import (
	"strings"
	"testing"
)

// TestDatasetFields: produces, on_datasets, late_data and run_grain are
// checked at apply, each bad one named.
func TestDatasetFields(t *testing.T) {
	good := "name: w\non_datasets: [orders@daily, events@hourly]\nlate_data: rerun\nrun_grain: daily\n" +
		"tasks:\n  - {name: a, command: x, produces: [\"warehouse.orders@${bizdate}\", \"o@2026-12-07T01\"]}\n"
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("good spec: %v", err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"on_datasets: [orders]\n", `on_datasets entry "orders": write dataset@grain`},
		{"on_datasets: [orders@weekly]\n", `partition grain "weekly": use hourly or daily`},
		{"on_datasets: [o@daily, o@hourly]\n", `on_datasets names dataset "o" twice`},
		{"on_datasets: [o@daily]\nlate_data: redo\n", `late_data "redo": use ignore or rerun`},
		{"late_data: rerun\n", "late_data applies to on_datasets"},
		{"on_datasets: [o@daily]\nrun_grain: hourly\n", "an hourly run cannot wait for a daily input"},
		{"on_datasets: [o@daily]\nrun_grain: monthly\n", `run_grain: partition grain "monthly"`},
		{"run_grain: daily\n", "run_grain applies to on_datasets"},
	} {
		_, err := Parse([]byte("name: w\n" + c.yaml + "tasks:\n  - {name: a, command: x}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
	for _, c := range []struct{ produces, want string }{
		{`[orders]`, `produces entry "orders": write dataset@partition`},
		{`["o@2026-13-01"]`, "use a day"},
		{`["9o@2026-12-01"]`, "starting with a letter"},
		{`["o@${d}", "o@${d}"]`, `produces lists "o@${d}" twice`},
	} {
		_, err := Parse([]byte("name: w\ntasks:\n  - {name: a, command: x, produces: " + c.produces + "}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("produces %s: %v, want %q", c.produces, err, c.want)
		}
	}
}
