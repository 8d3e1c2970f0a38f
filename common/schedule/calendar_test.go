package schedule

import (
	"strings"
	"testing"
	"time"
)

func days(t *testing.T, ss ...string) []Day {
	t.Helper()
	var out []Day
	for _, s := range ss {
		d, err := ParseDay(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// china2026 is National Day week 2026 with its make-up working days
// (Sunday 27 September and Saturday 10 October), and New Year's Day 2027.
func china2026(t *testing.T) *Calendar {
	return NewCalendar(nil,
		days(t, "2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04", "2026-10-05", "2026-10-06", "2026-10-07", "2027-01-01"),
		days(t, "2026-09-27", "2026-10-10"))
}

// fires lists n adjusted fires from from on, written in the cron's zone.
func fires(c *Cron, from time.Time, n int) string {
	var out []string
	for _, f := range c.Upcoming(from, Window{}, n) {
		out = append(out, f.In(c.loc).Format("2006-01-02 15:04 Mon"))
	}
	return strings.Join(out, ", ")
}

func TestCalendarFires(t *testing.T) {
	cn := china2026(t)
	noWeekend := func(hol ...string) *Calendar { return NewCalendar([]time.Weekday{}, days(t, hol...), nil) }
	for _, tc := range []struct {
		name, cron, tz string
		cal            *Calendar
		policy         string
		from           string
		n              int
		want           string
	}{
		{"daily skip: weekend, holidays and make-up workdays", "0 2 * * *", "Asia/Shanghai", cn, OnHolidaySkip, "2026-09-24T18:00:00Z", 9,
			"2026-09-25 02:00 Fri, 2026-09-27 02:00 Sun, 2026-09-28 02:00 Mon, 2026-09-29 02:00 Tue, 2026-09-30 02:00 Wed, " +
				"2026-10-08 02:00 Thu, 2026-10-09 02:00 Fri, 2026-10-10 02:00 Sat, 2026-10-12 02:00 Mon"},
		{"daily next: every moved fire merges into the day's own", "0 2 * * *", "Asia/Shanghai", cn, OnHolidayNext, "2026-09-24T18:00:00Z", 9,
			"2026-09-25 02:00 Fri, 2026-09-27 02:00 Sun, 2026-09-28 02:00 Mon, 2026-09-29 02:00 Tue, 2026-09-30 02:00 Wed, " +
				"2026-10-08 02:00 Thu, 2026-10-09 02:00 Fri, 2026-10-10 02:00 Sat, 2026-10-12 02:00 Mon"},
		{"daily previous: merged too", "0 2 * * *", "Asia/Shanghai", cn, OnHolidayPrev, "2026-09-29T00:00:00Z", 3,
			"2026-09-30 02:00 Wed, 2026-10-08 02:00 Thu, 2026-10-09 02:00 Fri"},
		{"weekly skip", "0 18 * * 4", "Asia/Shanghai", cn, OnHolidaySkip, "2026-09-20T00:00:00Z", 3,
			"2026-09-24 18:00 Thu, 2026-10-08 18:00 Thu, 2026-10-15 18:00 Thu"},
		{"weekly next: lands on a day with its own fire, merges", "0 18 * * 4", "Asia/Shanghai", cn, OnHolidayNext, "2026-09-20T00:00:00Z", 3,
			"2026-09-24 18:00 Thu, 2026-10-08 18:00 Thu, 2026-10-15 18:00 Thu"},
		{"weekly previous: moves back over the make-up-free days", "0 18 * * 4", "Asia/Shanghai", cn, OnHolidayPrev, "2026-09-20T00:00:00Z", 3,
			"2026-09-24 18:00 Thu, 2026-09-30 18:00 Wed, 2026-10-08 18:00 Thu"},
		{"monthly next over a holiday week", "0 9 1 * *", "Asia/Shanghai", cn, OnHolidayNext, "2026-09-02T00:00:00Z", 2,
			"2026-10-08 09:00 Thu, 2026-11-02 09:00 Mon"},
		{"monthly previous", "0 9 1 * *", "Asia/Shanghai", cn, OnHolidayPrev, "2026-09-02T00:00:00Z", 2,
			"2026-09-30 09:00 Wed, 2026-10-30 09:00 Fri"},
		{"year end next: New Year's Day to the Monday", "0 9 1 * *", "Asia/Shanghai", cn, OnHolidayNext, "2026-12-02T00:00:00Z", 2,
			"2027-01-04 09:00 Mon, 2027-02-01 09:00 Mon"},
		{"year end previous: New Year's Day back to 31 December", "0 9 1 * *", "Asia/Shanghai", cn, OnHolidayPrev, "2026-12-02T00:00:00Z", 2,
			"2026-12-31 09:00 Thu, 2027-02-01 09:00 Mon"},
		{"weekend fires next: Saturday's and Sunday's merge into one Monday fire", "0 9 * * 6,0", "", Weekdays, OnHolidayNext, "2026-11-01T12:00:00Z", 3,
			"2026-11-02 09:00 Mon, 2026-11-09 09:00 Mon, 2026-11-16 09:00 Mon"},
		{"weekend fires previous: one Friday fire", "0 9 * * 6,0", "", Weekdays, OnHolidayPrev, "2026-11-01T12:00:00Z", 2,
			"2026-11-06 09:00 Fri, 2026-11-13 09:00 Fri"},
		{"weekend fires next from inside the weekend", "0 9 * * 6,0", "", Weekdays, OnHolidayNext, "2026-11-07T10:00:00Z", 1,
			"2026-11-09 09:00 Mon"},
		{"weekend fires skip: none at all", "0 9 * * 6,0", "", Weekdays, OnHolidaySkip, "2026-11-01T12:00:00Z", 2, ""},
		{"DST spring: Sunday's 02:30 falls in the gap, moved to Monday's 02:30", "30 2 * * 0", "America/New_York", Weekdays, OnHolidayNext, "2026-03-01T00:00:00Z", 3,
			"2026-03-02 02:30 Mon, 2026-03-09 02:30 Mon, 2026-03-16 02:30 Mon"},
		{"DST spring: moved onto the gap day fires right after the jump", "30 2 * * 6", "America/New_York", noWeekend("2026-03-07"), OnHolidayNext, "2026-03-01T00:00:00Z", 2,
			"2026-03-08 03:30 Sun, 2026-03-14 02:30 Sat"},
		{"DST autumn: moved onto the repeated hour fires once", "30 1 * * 6", "America/New_York", noWeekend("2026-10-31"), OnHolidayNext, "2026-10-25T00:00:00Z", 2,
			"2026-11-01 01:30 Sun, 2026-11-07 01:30 Sat"},
		{"DST autumn previous across the change", "30 1 * * 0", "America/New_York", noWeekend("2026-11-01"), OnHolidayPrev, "2026-10-25T12:00:00Z", 2,
			"2026-10-31 01:30 Sat, 2026-11-08 01:30 Sun"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.cron, tc.tz).WithCalendar(tc.cal, tc.policy)
			if got := fires(c, at(tc.from), tc.n); got != tc.want {
				t.Fatalf("fires\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestCalendarFiresExact checks the DST cases in UTC, where a wrong offset
// would show.
func TestCalendarFiresExact(t *testing.T) {
	c := mustParse(t, "30 2 * * 6", "America/New_York").WithCalendar(NewCalendar([]time.Weekday{}, days(t, "2026-03-07"), nil), OnHolidayNext)
	if got := c.Next(at("2026-03-07T00:00:00Z")); !got.Equal(at("2026-03-08T07:30:00Z")) {
		t.Fatalf("moved onto the gap: %v, want 07:30Z (03:30 EDT)", got)
	}
	c = mustParse(t, "30 1 * * 6", "America/New_York").WithCalendar(NewCalendar([]time.Weekday{}, days(t, "2026-10-31"), nil), OnHolidayNext)
	got, more := c.Between(at("2026-11-01T00:00:00Z"), at("2026-11-02T00:00:00Z"), 10)
	if len(got) != 1 || more || !got[0].Equal(at("2026-11-01T05:30:00Z")) {
		t.Fatalf("moved onto the repeated hour: %v, want one fire at 05:30Z (01:30 EDT)", got)
	}
}

// TestCalendarDue: the master's walk fires each adjusted time once, also
// across a holiday week missed in an outage under catchup all.
func TestCalendarDue(t *testing.T) {
	c := mustParse(t, "0 2 * * *", "Asia/Shanghai").WithCalendar(china2026(t), OnHolidayNext)
	p := c.Due(at("2026-09-29T18:00:00Z"), at("2026-10-09T18:00:00Z"), Window{}, CatchupAll)
	var got []string
	for _, f := range p.Fire {
		got = append(got, f.Format(time.RFC3339))
	}
	want := "2026-09-29T18:00:00Z 2026-10-07T18:00:00Z 2026-10-08T18:00:00Z 2026-10-09T18:00:00Z"
	if strings.Join(got, " ") != want || !p.Next.Equal(at("2026-10-11T18:00:00Z")) {
		t.Fatalf("due %v next %v, want %s next 2026-10-11T18:00:00Z", got, p.Next, want)
	}
}

func TestBusinessDays(t *testing.T) {
	cn := china2026(t)
	d := func(s string) Day { return days(t, s)[0] }
	for _, tc := range []struct {
		name string
		cal  *Calendar
		day  string
		n    int
		want string
	}{
		{"after a holiday week", cn, "2026-10-08", -1, "2026-09-30"},
		{"over a make-up Saturday", cn, "2026-10-12", -1, "2026-10-10"},
		{"make-up Sunday", cn, "2026-09-28", -1, "2026-09-27"},
		{"forward into the next year", cn, "2026-12-31", 1, "2027-01-04"},
		{"back over the year end", cn, "2027-01-04", -1, "2026-12-31"},
		{"zero on a business day", cn, "2026-09-30", 0, "2026-09-30"},
		{"zero on a holiday is the day before", cn, "2026-10-03", 0, "2026-09-30"},
		{"Mon-Fri: Monday back to Friday", Weekdays, "2026-10-05", -1, "2026-10-02"},
		{"Mon-Fri: five back", Weekdays, "2026-10-09", -5, "2026-10-02"},
	} {
		got, ok := tc.cal.AddBusinessDays(d(tc.day), tc.n)
		if !ok || got.String() != tc.want {
			t.Errorf("%s: AddBusinessDays(%s, %d) = %s %v, want %s", tc.name, tc.day, tc.n, got, ok, tc.want)
		}
	}
	if got := BusinessDate(cn, d("2026-10-08")); got.String() != "2026-09-30" {
		t.Errorf("business date after the holidays = %s", got)
	}
	if got := BusinessDate(nil, d("2026-10-05")); got.String() != "2026-10-04" {
		t.Errorf("business date without a calendar is the day before: %s", got)
	}
	if _, ok := NewCalendar([]time.Weekday{0, 1, 2, 3, 4, 5, 6}, nil, nil).AddBusinessDays(d("2026-10-05"), -1); ok {
		t.Error("a calendar with no business day found one")
	}
	for _, s := range []string{"2026-02-30", "2026-13-01", "26-10-01", "yesterday", ""} {
		if _, err := ParseDay(s); err == nil {
			t.Errorf("ParseDay(%q) took it", s)
		}
	}
}

// TestCalendarFrequentMoved: a per-minute cron that fires only on the
// weekend, moved to Monday, fires each minute once there, each found
// without walking the whole weekend (a few hours of Monday: under -race a
// day takes seconds).
func TestCalendarFrequentMoved(t *testing.T) {
	c := mustParse(t, "* * * * 6,0", "").WithCalendar(Weekdays, OnHolidayNext)
	got, more := c.Between(at("2026-11-09T20:00:00Z"), at("2026-11-09T23:59:59Z"), 2000)
	if len(got) != 240 || more || !got[0].Equal(at("2026-11-09T20:00:00Z")) || !got[239].Equal(at("2026-11-09T23:59:00Z")) {
		t.Fatalf("%d moved fires on Monday (more %v), from %v", len(got), more, got[:min(len(got), 2)])
	}
	for i := 1; i < len(got); i++ {
		if got[i].Sub(got[i-1]) != time.Minute {
			t.Fatalf("fires %v and %v", got[i-1], got[i])
		}
	}
}

// TestCalendarStreamFromAnyPoint: the adjusted fires are the same however
// the walk starts (from each fire, just before it, or anywhere between
// two), which is what lets a new leader, starting from the stored next
// fire time, plan exactly the times the old one would have.
func TestCalendarStreamFromAnyPoint(t *testing.T) {
	cn := china2026(t)
	for _, tc := range []struct{ cron, tz string }{
		{"0 2 * * *", "Asia/Shanghai"}, {"0 9 1 * *", "Asia/Shanghai"}, {"0 18 * * 4", "Asia/Shanghai"},
		{"30 2 * * 0,6", "America/New_York"}, {"15 */6 * * *", "Europe/Berlin"},
	} {
		for _, policy := range []string{OnHolidaySkip, OnHolidayNext, OnHolidayPrev} {
			c := mustParse(t, tc.cron, tc.tz).WithCalendar(cn, policy)
			fs := c.Upcoming(at("2026-09-01T00:00:00Z"), Window{}, 60)
			for i := 1; i < len(fs); i++ {
				if !fs[i].After(fs[i-1]) {
					t.Fatalf("%s %s: fires out of order: %v then %v", tc.cron, policy, fs[i-1], fs[i])
				}
				mid := fs[i-1].Add(fs[i].Sub(fs[i-1]) / 3)
				for _, from := range []time.Time{fs[i].Add(-time.Nanosecond), mid, fs[i-1]} {
					if got := c.Next(from); !got.Equal(fs[i]) {
						t.Fatalf("%s %s: Next(%v) = %v, want %v", tc.cron, policy, from, got, fs[i])
					}
				}
			}
		}
	}
}
