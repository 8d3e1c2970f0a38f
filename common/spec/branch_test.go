package spec_test

import (
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/spec"
)

// TestBranchSpecs: conditions and switch parse in YAML and JSON; the tasks
// they name must exist and depend on them; a bad expression is refused
// with its case and position.
func TestBranchSpecs(t *testing.T) {
	t.Parallel()
	ok := `name: w
tasks:
  - {name: a, command: "true"}
  - {name: check, type: conditions, depends_on: [a], on_success: [b], on_failure: [c]}
  - {name: b, command: "true", depends_on: [check]}
  - {name: c, command: "true", depends_on: [check]}
  - name: route
    type: switch
    depends_on: [b]
    cases:
      - {when: 'env == "prod" && int(rows) > 1000', next: [d]}
    default: [e]
  - {name: d, command: "true", depends_on: [route]}
  - {name: e, command: "true", depends_on: [route]}
`
	w, err := spec.Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := w.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spec.ParseStored(raw); err != nil {
		t.Fatalf("stored form: %v\n%s", err, raw)
	}
	for _, c := range []struct{ edit, old, want string }{
		{"a non-downstream", "on_failure: [c]", `task "check": branch names task "a", which is not a direct downstream`},
		{"an unknown task", "on_failure: [c]", `task "check": branch names unknown task "zz"`},
		{"a bad expression", "int(rows) > 1000", `task "route": case 1: when "env == \"prod\" && int(rows) > (": unexpected token EOF at line 1, column`},
		{"no branch", "on_success: [b], on_failure: [c]", `task "check": conditions needs on_success or on_failure`},
		{"an unknown field", "default: [e]", `unknown field "defualt" in a task (tasks[4]); did you mean "default"?`},
		{"an unnamed downstream", "default: [e]", `task "route": task "e" depends on it but no branch names it (it would always be skipped)`},
		{"no upstream", "depends_on: [a], on_success", `task "check": a conditions task branches on its upstreams' outcome; it needs depends_on`},
	} {
		repl := map[string]string{"a non-downstream": "on_failure: [a]", "an unknown task": "on_failure: [zz]",
			"a bad expression": "int(rows) > (", "no branch": "", "an unknown field": "defualt: [e]",
			"an unnamed downstream": "default: []", "no upstream": "on_success"}[c.edit]
		_, err := spec.Parse([]byte(strings.Replace(ok, c.old, repl, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v\nwant it to contain %s", c.edit, err, c.want)
		}
	}
}
