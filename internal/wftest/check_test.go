package wftest

import (
	"strings"
	"testing"
	"time"
)

func at(ms int) *time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
	return &t
}

// run: extract (2 attempts) -> gate (switch, chose a) -> a; b skipped.
func sampleRun() *RunResult {
	return &RunResult{State: "succeeded", Names: []string{"extract", "gate", "a", "b"}, Tasks: map[string]*TaskRun{
		"extract": {Name: "extract", Type: "shell", Attempts: []Attempt{
			{Number: 1, State: "failed", Start: at(0), End: at(1)},
			{Number: 2, State: "succeeded", Start: at(2), End: at(3), Outputs: map[string]string{"n": "1"}}}},
		"gate": {Name: "gate", Type: "switch", Attempts: []Attempt{{State: "succeeded", Start: at(4), End: at(4),
			Outputs: map[string]string{"next": "a"}, Params: map[string]string{"n": "1"}}}},
		"a": {Name: "a", Type: "shell", Attempts: []Attempt{{State: "succeeded", Start: at(5), End: at(6), Params: map[string]string{"n": "1", "day": "x"}}}},
		"b": {Name: "b", Type: "shell", Attempts: []Attempt{{State: "skipped", Start: at(4), End: at(4)}}},
	}}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Expect
		want []string // substrings of each failure, in order; none: passes
	}{
		{"all met", Expect{State: "succeeded", Ran: []string{"extract", "gate", "a"}, Skipped: []string{"b"}, NotRun: []string{"b"},
			Order: [][]string{{"extract", "gate", "a"}}, Branch: map[string][]string{"gate": {"a"}},
			Tasks: map[string]TaskExpect{"extract": {State: "succeeded", Attempts: 2, Outputs: map[string]string{"n": "1"}},
				"a": {Params: map[string]string{"n": "1"}}}}, nil},
		{"state", Expect{State: "failed"}, []string{"state: expected failed, got succeeded"}},
		{"ran", Expect{Ran: []string{"b"}}, []string{"ran: expected b to run, it ended skipped"}},
		{"skipped", Expect{Skipped: []string{"a"}}, []string{"skipped: expected a to be skipped, it ended succeeded"}},
		{"not run", Expect{NotRun: []string{"extract"}}, []string{"not_run: expected extract not to run, it ended succeeded after 2 attempts"}},
		{"order", Expect{Order: [][]string{{"a", "gate"}}}, []string{"order: expected a before gate: gate started 2ms before a ended"}},
		{"order with a skipped task", Expect{Order: [][]string{{"gate", "b"}}}, []string{"order: expected gate before b: b ended skipped"}},
		{"branch", Expect{Branch: map[string][]string{"gate": {"b"}}}, []string{"branch: expected gate to choose b, it chose a"}},
		{"attempts", Expect{Tasks: map[string]TaskExpect{"extract": {Attempts: 3}}}, []string{"tasks.extract.attempts: expected 3, got 2"}},
		{"params", Expect{Tasks: map[string]TaskExpect{"a": {Params: map[string]string{"n": "2", "zz": "1"}}}},
			[]string{`tasks.a.params.n: expected "2", got "1"`, `tasks.a.params.zz: expected "1", not passed (passed: day, n)`}},
		{"reason", Expect{Reason: "boom"}, []string{`reason: expected it to contain "boom", got ""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.e, sampleRun())
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %d failures", got, len(tc.want))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("failure %d: %q, want it to contain %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestCheckUnreached(t *testing.T) {
	r := &RunResult{State: "failed", Reason: "task x failed", Tasks: map[string]*TaskRun{}, Unfinished: "the run did not end"}
	got := Check(Expect{State: "succeeded", Ran: []string{"y"}, Branch: map[string][]string{"g": {}}}, r)
	want := []string{"the run did not end", "state: expected succeeded, got failed (task x failed)",
		"ran: expected y to run, it was never reached", "branch: expected g to choose none, it was never reached"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
