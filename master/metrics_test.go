package master

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
)

func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Histogram != nil {
		return float64(m.Histogram.GetSampleCount())
	}
	return m.GetCounter().GetValue()
}

// TestCountFired: of a firing that asked three times (two written, one
// skipped by the overlap policy) after the catch-up policy skipped two,
// the latest counts fired, the earlier caught up, three skipped, and each
// written time's lag is observed.
func TestCountFired(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	t1, t2 := now.Add(-2*time.Minute), now.Add(-30*time.Second)
	lag := metrics.CronLag.(prometheus.Metric)
	f0, c0, s0, l0 := value(t, metrics.ScheduleFired), value(t, metrics.ScheduleCaught), value(t, metrics.ScheduleSkipped), value(t, lag)
	countFired(schedule.Plan{Skipped: 2}, 3, []model.WorkflowInstance{{ScheduleTime: &t1}, {ScheduleTime: &t2}}, now)
	if d := value(t, metrics.ScheduleFired) - f0; d != 1 {
		t.Errorf("fired +%v, want 1", d)
	}
	if d := value(t, metrics.ScheduleCaught) - c0; d != 1 {
		t.Errorf("caught up +%v, want 1", d)
	}
	if d := value(t, metrics.ScheduleSkipped) - s0; d != 3 {
		t.Errorf("skipped +%v, want 3", d)
	}
	if d := value(t, lag) - l0; d != 2 {
		t.Errorf("lag observations +%v, want 2", d)
	}
}
