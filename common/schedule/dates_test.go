package schedule

import (
	"strings"
	"testing"
	"time"
)

// TestDates decides a range across Christmas and New Year's Day (both
// Fridays in 2026/27) under each policy: the fires, and the cron's own
// times refused with where they moved.
func TestDates(t *testing.T) {
	xmas := NewCalendar(nil, days(t, "2026-12-25", "2027-01-01"), nil)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, cron, tz string
		cal            *Calendar
		policy         string
		from, to       string
		limit          int
		fire, refused  string
		more           bool
	}{
		{"no calendar: every time fires", "0 9 * * 5", "", nil, "", "2026-12-18T00:00:00Z", "2027-01-08T23:00:00Z", 10,
			"2026-12-18 09:00 Fri, 2026-12-25 09:00 Fri, 2027-01-01 09:00 Fri, 2027-01-08 09:00 Fri", "", false},
		{"weekly skip: both holidays dropped", "0 9 * * 5", "", xmas, OnHolidaySkip, "2026-12-18T00:00:00Z", "2027-01-08T23:00:00Z", 10,
			"2026-12-18 09:00 Fri, 2027-01-08 09:00 Fri", "2026-12-25 09:00 Fri, 2027-01-01 09:00 Fri", false},
		{"default policy is skip", "0 9 * * 5", "", xmas, "", "2026-12-18T00:00:00Z", "2027-01-08T23:00:00Z", 10,
			"2026-12-18 09:00 Fri, 2027-01-08 09:00 Fri", "2026-12-25 09:00 Fri, 2027-01-01 09:00 Fri", false},
		{"weekly next: moved to Mondays, one into the new year", "0 9 * * 5", "", xmas, OnHolidayNext, "2026-12-18T00:00:00Z", "2027-01-08T23:00:00Z", 10,
			"2026-12-18 09:00 Fri, 2026-12-28 09:00 Mon, 2027-01-04 09:00 Mon, 2027-01-08 09:00 Fri",
			"2026-12-25 09:00 Fri -> 2026-12-28 09:00 Mon, 2027-01-01 09:00 Fri -> 2027-01-04 09:00 Mon", false},
		{"weekly previous: New Year's moves back into the old year", "0 9 * * 5", "", xmas, OnHolidayPrev, "2026-12-18T00:00:00Z", "2027-01-08T23:00:00Z", 10,
			"2026-12-18 09:00 Fri, 2026-12-24 09:00 Thu, 2026-12-31 09:00 Thu, 2027-01-08 09:00 Fri",
			"2026-12-25 09:00 Fri -> 2026-12-24 09:00 Thu, 2027-01-01 09:00 Fri -> 2026-12-31 09:00 Thu", false},
		{"daily next: days off merge into the next day's own fire", "0 2 * * *", "", xmas, OnHolidayNext, "2026-12-24T00:00:00Z", "2026-12-28T23:00:00Z", 10,
			"2026-12-24 02:00 Thu, 2026-12-28 02:00 Mon", "2026-12-25 02:00 Fri, 2026-12-26 02:00 Sat, 2026-12-27 02:00 Sun", false},
		{"moved out of the range: refused, not fired", "0 9 * * 5", "", xmas, OnHolidayNext, "2026-12-18T00:00:00Z", "2026-12-27T00:00:00Z", 10,
			"2026-12-18 09:00 Fri", "2026-12-25 09:00 Fri", false},
		{"a time before the range moved into it fires", "0 9 * * 5", "", xmas, OnHolidayNext, "2026-12-26T00:00:00Z", "2026-12-31T00:00:00Z", 10,
			"2026-12-28 09:00 Mon", "", false},
		{"zone: New Year's in Shanghai", "0 9 * * 5", "Asia/Shanghai", xmas, OnHolidayPrev, "2026-12-30T00:00:00Z", "2027-01-02T00:00:00Z", 10,
			"2026-12-31 09:00 Thu", "2027-01-01 09:00 Fri -> 2026-12-31 09:00 Thu", false},
		{"limit: refused up to the last fire listed", "0 9 * * 5", "", xmas, OnHolidaySkip, "2026-12-18T00:00:00Z", "2027-01-15T23:00:00Z", 2,
			"2026-12-18 09:00 Fri, 2027-01-08 09:00 Fri", "2026-12-25 09:00 Fri, 2027-01-01 09:00 Fri", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.cron, tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			if tc.cal != nil {
				c = c.WithCalendar(tc.cal, tc.policy)
			}
			d := c.Dates(at(tc.from), at(tc.to), tc.limit)
			show := func(v time.Time) string { return v.In(c.loc).Format("2006-01-02 15:04 Mon") }
			var fire, ref []string
			for _, f := range d.Fire {
				fire = append(fire, show(f))
			}
			for _, r := range d.Refused {
				s := show(r.Time)
				if !r.MovedTo.IsZero() {
					s += " -> " + show(r.MovedTo)
				}
				ref = append(ref, s)
			}
			if got := strings.Join(fire, ", "); got != tc.fire {
				t.Errorf("fire:\n got %s\nwant %s", got, tc.fire)
			}
			if got := strings.Join(ref, ", "); got != tc.refused {
				t.Errorf("refused:\n got %s\nwant %s", got, tc.refused)
			}
			if d.More != tc.more {
				t.Errorf("more = %v, want %v", d.More, tc.more)
			}
		})
	}
}
