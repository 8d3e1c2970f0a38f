package wftest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Check compares a run with what its case expects and returns each
// expectation not met, as a sentence naming what was expected and what
// happened. Pure: the table tests feed it runs.
func Check(e Expect, r *RunResult) []string {
	var fails []string
	failf := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }
	if r.Unfinished != "" {
		failf("%s", r.Unfinished)
	}
	if e.State != "" && r.State != e.State {
		why := ""
		if r.Reason != "" {
			why = " (" + r.Reason + ")"
		}
		failf("state: expected %s, got %s%s", e.State, r.State, why)
	}
	if e.Reason != "" && !strings.Contains(r.Reason, e.Reason) {
		failf("reason: expected it to contain %q, got %q", e.Reason, r.Reason)
	}
	for _, n := range e.Ran {
		if t := r.Tasks[n]; t == nil || !t.Ran() {
			failf("ran: expected %s to run, it %s", n, r.fate(n))
		}
	}
	for _, n := range e.Skipped {
		if t := r.Tasks[n]; t == nil || t.Last().State != string(model.TaskSkipped) {
			failf("skipped: expected %s to be skipped, it %s", n, r.fate(n))
		}
	}
	for _, n := range e.NotRun {
		if t := r.Tasks[n]; t != nil && t.Ran() {
			failf("not_run: expected %s not to run, it %s", n, r.fate(n))
		}
	}
	for _, chain := range e.Order {
		for i := 0; i+1 < len(chain); i++ {
			if why := r.before(chain[i], chain[i+1]); why != "" {
				failf("order: expected %s before %s: %s", chain[i], chain[i+1], why)
			}
		}
	}
	for _, n := range sortedKeys(e.Branch) {
		want := slices.Sorted(slices.Values(e.Branch[n]))
		t := r.Tasks[n]
		if t == nil || !t.Ran() {
			failf("branch: expected %s to choose %s, it %s", n, list(want), r.fate(n))
			continue
		}
		next, ok := t.Last().Outputs[tasktype.BranchNext]
		if !ok {
			failf("branch: %s made no choice (state %s)", n, t.Last().State)
			continue
		}
		got := []string{}
		for _, s := range strings.Split(next, ",") {
			if s != "" {
				got = append(got, s)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			failf("branch: expected %s to choose %s, it chose %s", n, list(want), list(got))
		}
	}
	for _, n := range sortedKeys(e.Tasks) {
		te := e.Tasks[n]
		t := r.Tasks[n]
		if t == nil {
			failf("tasks.%s: expected an attempt, it %s", n, r.fate(n))
			continue
		}
		last := t.Last()
		if te.State != "" && last.State != te.State {
			failf("tasks.%s.state: expected %s, got %s", n, te.State, last.State)
		}
		if te.Attempts > 0 && len(t.Attempts) != te.Attempts {
			failf("tasks.%s.attempts: expected %d, got %d", n, te.Attempts, len(t.Attempts))
		}
		fails = append(fails, compare("tasks."+n+".params", "passed", te.Params, last.Params)...)
		fails = append(fails, compare("tasks."+n+".outputs", "exported", te.Outputs, last.Outputs)...)
	}
	return fails
}

// compare checks that got holds every entry of want.
func compare(what, verb string, want, got map[string]string) []string {
	var fails []string
	for _, k := range sortedKeys(want) {
		v, ok := got[k]
		switch {
		case !ok:
			fails = append(fails, fmt.Sprintf("%s.%s: expected %q, not %s (%s: %s)", what, k, want[k], verb, verb, keys(got)))
		case v != want[k]:
			fails = append(fails, fmt.Sprintf("%s.%s: expected %q, got %q", what, k, want[k], v))
		}
	}
	return fails
}

func keys(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// fate says what became of a task, for a failure message.
func (r *RunResult) fate(n string) string {
	t := r.Tasks[n]
	if t == nil {
		return "was never reached"
	}
	last := t.Last()
	if len(t.Attempts) == 1 {
		return "ended " + last.State
	}
	return fmt.Sprintf("ended %s after %d attempts", last.State, len(t.Attempts))
}

// before says why a did not end before b started ("" when it did): a's
// last attempt ended no later than b's first began.
func (r *RunResult) before(a, b string) string {
	ta, tb := r.Tasks[a], r.Tasks[b]
	switch {
	case ta == nil || !ta.Ran():
		return a + " " + r.fate(a)
	case tb == nil || !tb.Ran():
		return b + " " + r.fate(b)
	}
	end, start := ta.Last().End, tb.Attempts[0].Start
	if end == nil || start == nil {
		return "no times recorded"
	}
	if end.After(*start) {
		return fmt.Sprintf("%s started %s before %s ended", b, end.Sub(*start), a)
	}
	return ""
}
