package master

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/schedule"
)

// refused lists the cron times a calendar dropped or merged: not the ones
// fired nor the ones listed missed.
func TestRefusedCalendarTimes(t *testing.T) {
	t.Parallel()
	raw, err := schedule.Parse("0 9 * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	fri, sat, sun, mon := at("2026-12-04T09:00:00Z"), at("2026-12-05T09:00:00Z"), at("2026-12-06T09:00:00Z"), at("2026-12-07T09:00:00Z")
	for _, tc := range []struct {
		name string
		from time.Time
		now  time.Time
		plan schedule.Plan
		want string
	}{
		{"weekend dropped before monday's fire", fri.Add(time.Nanosecond), mon.Add(time.Second), schedule.Plan{Fire: []time.Time{mon}}, "12-05 12-06"},
		{"a missed time is not refused", fri, mon.Add(time.Second), schedule.Plan{Fire: []time.Time{mon}, Missed: []time.Time{fri}}, "12-05 12-06"},
		{"nothing due yet", sat, sat.Add(-time.Second), schedule.Plan{}, ""},
		{"every time fired", sun, sun.Add(time.Second), schedule.Plan{Fire: []time.Time{sun}}, ""},
	} {
		var got []string
		for _, r := range refused(raw, tc.from, tc.now, tc.plan) {
			got = append(got, r.Format("01-02"))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: refused %v, want %q", tc.name, got, tc.want)
		}
	}
}
