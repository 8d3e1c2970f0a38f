package master

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/forecast"
	"github.com/beluga-scheduler/beluga/common/model"
)

func TestJudge(t *testing.T) {
	dl := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		late bool
		end  time.Time
		want deadlineVerdict
	}{
		{"on track", false, dl.Add(-time.Minute), verdictNone},
		{"on the deadline is on track", false, dl, verdictNone},
		{"projected past it: alert", false, dl.Add(time.Second), verdictRisk},
		{"still late: nothing more", true, dl.Add(time.Hour), verdictNone},
		{"back under it: clear", true, dl.Add(-time.Second), verdictClear},
	} {
		if got := judge(c.late, c.end, dl); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDeadlineRiskText(t *testing.T) {
	dl := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	inst := model.WorkflowInstance{ID: 7, Project: "p", Workflow: "nightly"}
	p := forecast.Projection{End: dl.Add(90 * time.Second), P90End: dl.Add(5 * time.Minute), CriticalPath: []string{"extract", "load"},
		Slow: []string{"extract"}, NoHistory: []string{"load"}}
	h := forecast.History{Tasks: map[string]forecast.Stats{"extract": {P50: 40 * time.Minute, P90: 50 * time.Minute, N: 20}}}
	got := deadlineRiskText(inst, p, dl, h)
	for _, want := range []string{"p/nightly run 7", "1m30s after its deadline 2026-12-07T06:00:00Z", "critical path: extract (p50 40m0s) -> load",
		"slow (past their p90): extract", "no history (counted 1m0s each): load"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
