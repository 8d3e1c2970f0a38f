package master

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/forecast"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

func TestJudge(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestForecastTickIsBounded: a tick re-projects forecastsPerTick watched
// runs at most, in turn (each here one read: the runs do not exist), and
// drops a run past its deadline without reading it.
func TestForecastTickIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "b.db"), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	a := newAlerter(st, zap.NewNop(), EventsConfig{}.withDefaults(), nil)
	watch, order, next := map[int64]*watched{}, []int64(nil), 0
	later := time.Now().Add(time.Hour)
	for id := int64(1000); id < 1020; id++ {
		watch[id] = &watched{id: id, deadline: later}
		order = append(order, id)
	}
	for _, want := range []struct{ reads, next int }{{forecastsPerTick, 16}, {forecastsPerTick, 12}} {
		rctx, reads := store.CountReads(ctx)
		if !a.forecastTick(rctx, watch, &order, &next) {
			t.Fatal("the tick ended the term")
		}
		if got := reads.Statements.Load(); got != int64(want.reads) || next != want.next {
			t.Fatalf("tick read %d statements, next %d; want %d, %d", got, next, want.reads, want.next)
		}
	}
	watch[1005].deadline = time.Now().Add(-time.Second)
	rctx, reads := store.CountReads(ctx)
	if !a.forecastTick(rctx, watch, &order, &next) {
		t.Fatal("the tick ended the term")
	}
	if watch[1005] != nil || len(order) != 19 || reads.Statements.Load() != forecastsPerTick-1 {
		t.Fatalf("past its deadline: watched %v, order %v, %d reads", watch[1005] != nil, order, reads.Statements.Load())
	}
}
