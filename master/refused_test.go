package master

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
)

// refused lists the cron times the calendar dropped, moved or merged,
// decided as a backfill's are (schedule.Cron.Dates): not the ones that
// fire as themselves, whether run or missed by catch-up.
func TestRefusedCalendarTimes(t *testing.T) {
	t.Parallel()
	daily, err := schedule.Parse("0 9 * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := schedule.Parse("0 9 4 * *", "") // the 4th only: a Friday in December 2026
	if err != nil {
		t.Fatal(err)
	}
	// Friday 4 December 2026 is a holiday; the weekend after it is off.
	cal := schedule.NewCalendar(nil, []schedule.Day{{Year: 2026, Month: time.December, Day: 4}}, nil)
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	thu, fri, mon := at("2026-12-03T09:00:00Z"), at("2026-12-04T09:00:00Z"), at("2026-12-07T09:00:00Z")
	for _, tc := range []struct {
		name string
		c    *schedule.Cron
		from time.Time
		now  time.Time
		want string
	}{
		{"skip: the holiday and the weekend", daily.WithCalendar(cal, schedule.OnHolidaySkip), thu.Add(time.Nanosecond), mon.Add(time.Second), "12-04 12-05 12-06"},
		{"a time that fires (or was missed) is not refused", daily.WithCalendar(cal, schedule.OnHolidaySkip), thu, mon.Add(time.Second), "12-04 12-05 12-06"},
		{"next: merged into monday's own fire", daily.WithCalendar(cal, schedule.OnHolidayNext), fri, mon.Add(time.Second), "12-04 12-05 12-06"},
		{"next: moved to monday, still refused as itself", sparse.WithCalendar(cal, schedule.OnHolidayNext), thu, mon.Add(time.Second), "12-04"},
		{"nothing due yet", daily.WithCalendar(cal, schedule.OnHolidaySkip), fri.Add(time.Hour), fri.Add(2 * time.Hour), ""},
		{"every time fired", daily.WithCalendar(cal, schedule.OnHolidaySkip), mon, mon.Add(time.Second), ""},
	} {
		var got []string
		for _, r := range refused(tc.c, tc.from, tc.now) {
			got = append(got, r.Format("01-02"))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: refused %v, want %q", tc.name, got, tc.want)
		}
	}
}

// refusedFrom: before a schedule's first fire its refused times start when
// it was written, for the stored next fire may be the calendar's move past
// a day off; after a fire, just after it; never before the window.
func TestRefusedFrom(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	p := func(s string) *time.Time { v := at(s); return &v }
	written, moved := at("2026-12-03T12:00:00Z"), p("2026-12-07T09:00:00Z")
	for _, tc := range []struct {
		name string
		sc   model.Schedule
		want time.Time
	}{
		{"never fired: from when it was written", model.Schedule{UpdatedAt: written, NextFireTime: moved}, written},
		{"fired: just after the last fire", model.Schedule{UpdatedAt: written, NextFireTime: moved, LastFireTime: p("2026-12-04T09:00:00Z")},
			at("2026-12-04T09:00:00Z").Add(time.Nanosecond)},
		{"not before the window", model.Schedule{UpdatedAt: written, NextFireTime: moved, StartTime: p("2026-12-04T00:00:00Z")}, at("2026-12-04T00:00:00Z")},
		{"written after its next fire (a zero or odd stamp): the next fire", model.Schedule{UpdatedAt: at("2026-12-08T00:00:00Z"), NextFireTime: moved}, *moved},
	} {
		if got := refusedFrom(tc.sc); !got.Equal(tc.want) {
			t.Errorf("%s: from %v, want %v", tc.name, got, tc.want)
		}
	}

	// The case that lost a row: the 4th (a holiday) is the first cron time
	// after the schedule was written on the 3rd, moved to Monday the 7th,
	// which the API stored as the next fire. Monday's pass lists the 4th.
	sparse, err := schedule.Parse("0 9 4 * *", "")
	if err != nil {
		t.Fatal(err)
	}
	cal := schedule.NewCalendar(nil, []schedule.Day{{Year: 2026, Month: time.December, Day: 4}}, nil)
	c := sparse.WithCalendar(cal, schedule.OnHolidayNext)
	got := refused(c, refusedFrom(model.Schedule{UpdatedAt: written, NextFireTime: moved}), moved.Add(time.Second))
	if len(got) != 1 || !got[0].Equal(at("2026-12-04T09:00:00Z")) {
		t.Fatalf("refused %v, want the 4th", got)
	}
}
