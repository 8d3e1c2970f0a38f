package master

import (
	"testing"
	"time"
)

// TestSweepDue: a period of 0 never sweeps; a sweep is due once the period
// has passed since the last began; otherwise the wait is the rest of the
// period, at most the check interval.
func TestSweepDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	check := time.Minute
	for _, c := range []struct {
		name  string
		every time.Duration
		last  time.Time
		due   bool
		wait  time.Duration
	}{
		{"off", 0, time.Unix(0, 0), false, check},
		{"never swept", 24 * time.Hour, time.Unix(0, 0), true, 0},
		{"period passed", 24 * time.Hour, now.Add(-25 * time.Hour), true, 0},
		{"exactly due", 24 * time.Hour, now.Add(-24 * time.Hour), true, 0},
		{"hours to go", 24 * time.Hour, now.Add(-time.Hour), false, check},
		{"seconds to go", time.Hour, now.Add(-time.Hour + 10*time.Second), false, 10 * time.Second},
	} {
		due, wait := sweepDue(c.every, c.last, now, check)
		if due != c.due || wait != c.wait {
			t.Errorf("%s: due %v wait %v, want %v %v", c.name, due, wait, c.due, c.wait)
		}
	}
}
