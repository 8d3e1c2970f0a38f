package schedule

import (
	"strings"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustParse(t *testing.T, expr, tz string) *Cron {
	t.Helper()
	c, err := Parse(expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ expr, tz, want string }{
		{"", "", "empty"},
		{"   ", "", "empty"},
		{"* * *", "", "expected 5 to 6 fields"},
		{"* * * * * * *", "", "expected 5 to 6 fields"},
		{"61 * * * *", "", "61"},
		{"0 2 * * mon-xyz", "", "xyz"},
		{"@fortnightly", "", "fortnightly"},
		{"CRON_TZ=Asia/Tokyo 0 2 * * *", "", "timezone"},
		{"0 2 * * *", "Mars/Olympus", "Mars/Olympus"},
		{"0 0 30 2 *", "", "never fires"},
	} {
		_, err := Parse(tc.expr, tc.tz)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %q) = %v, want an error naming %q", tc.expr, tc.tz, err, tc.want)
		}
	}
}

func TestNextInZone(t *testing.T) {
	c := mustParse(t, "0 2 * * *", "Asia/Shanghai") // 02:00 in UTC+8 is 18:00 UTC the day before
	if got := c.Next(at("2026-11-29T12:00:00Z")); !got.Equal(at("2026-11-29T18:00:00Z")) || got.Location() != time.UTC {
		t.Fatalf("next = %v", got)
	}
	sec := mustParse(t, "*/5 * * * * *", "")
	if got := sec.Next(at("2026-11-29T12:00:03Z")); !got.Equal(at("2026-11-29T12:00:05Z")) {
		t.Fatalf("seconds field: next = %v", got)
	}
	daily := mustParse(t, "@daily", "")
	if got := daily.Next(at("2026-11-29T12:00:00Z")); !got.Equal(at("2026-11-30T00:00:00Z")) {
		t.Fatalf("@daily: next = %v", got)
	}
}

func TestFirstAndUpcomingKeepToTheWindow(t *testing.T) {
	c := mustParse(t, "0 * * * *", "")
	start, end := at("2026-12-01T00:00:00Z"), at("2026-12-01T02:00:00Z")
	w := Window{Start: &start, End: &end}
	if got := c.First(at("2026-11-29T12:00:00Z"), w); !got.Equal(start) {
		t.Fatalf("first before the window = %v, want its start (a fire time on it counts)", got)
	}
	up := c.Upcoming(at("2026-11-29T12:00:00Z"), w, 10)
	if len(up) != 3 || !up[2].Equal(end) {
		t.Fatalf("upcoming = %v, want 00:00, 01:00, 02:00", up)
	}
	if got := c.First(at("2026-12-01T02:00:01Z"), w); !got.IsZero() {
		t.Fatalf("first after the window = %v, want none", got)
	}
}

func TestDuePolicies(t *testing.T) {
	c := mustParse(t, "0 * * * *", "")
	next := at("2026-11-29T05:00:00Z")
	for _, tc := range []struct {
		name, policy string
		now          time.Time
		fire         []string
		skipped      int
		next         string
		missed       []string // the skipped times, listed for the ledger of fires
	}{
		{"on time", CatchupLatest, at("2026-11-29T05:00:30Z"), []string{"05:00"}, 0, "06:00", nil},
		{"not due", CatchupAll, at("2026-11-29T04:59:59Z"), nil, 0, "05:00", nil},
		{"all after outage", CatchupAll, at("2026-11-29T08:30:00Z"), []string{"05:00", "06:00", "07:00", "08:00"}, 0, "09:00", nil},
		{"latest after outage", CatchupLatest, at("2026-11-29T08:30:00Z"), []string{"08:00"}, 3, "09:00", []string{"05:00", "06:00", "07:00"}},
		{"default is latest", "", at("2026-11-29T08:30:00Z"), []string{"08:00"}, 3, "09:00", []string{"05:00", "06:00", "07:00"}},
		{"none after outage", CatchupNone, at("2026-11-29T08:30:00Z"), nil, 4, "09:00", []string{"05:00", "06:00", "07:00", "08:00"}},
		{"latest with one on time", CatchupLatest, at("2026-11-29T08:00:20Z"), []string{"08:00"}, 3, "09:00", []string{"05:00", "06:00", "07:00"}},
		{"none keeps the on-time one", CatchupNone, at("2026-11-29T08:00:20Z"), []string{"08:00"}, 3, "09:00", []string{"05:00", "06:00", "07:00"}},
	} {
		p := c.Due(next, tc.now, Window{}, tc.policy)
		hm := func(ts []time.Time) string {
			var out []string
			for _, f := range ts {
				out = append(out, f.Format("15:04"))
			}
			return strings.Join(out, ",")
		}
		got, missed := hm(p.Fire), hm(p.Missed)
		if got != strings.Join(tc.fire, ",") || p.Skipped != tc.skipped || p.Next.Format("15:04") != tc.next || missed != strings.Join(tc.missed, ",") {
			t.Errorf("%s: fire %v skipped %d next %s missed %s; want %v %d %s %v", tc.name, got, p.Skipped, p.Next.Format("15:04"), missed,
				tc.fire, tc.skipped, tc.next, tc.missed)
		}
	}
}

func TestDueCapsCatchupAndEndsWithTheWindow(t *testing.T) {
	c := mustParse(t, "* * * * *", "")
	next := at("2026-11-29T00:00:00Z")
	// 601 fire times; 09:59 and 10:00 are within Grace, so on time
	p := c.Due(next, at("2026-11-29T10:00:00Z"), Window{}, CatchupAll)
	if len(p.Fire) != MaxCatchup+2 || p.Skipped != 601-MaxCatchup-2 {
		t.Fatalf("fired %d skipped %d, want the newest %d late + the two on time", len(p.Fire), p.Skipped, MaxCatchup)
	}
	if len(p.Missed) != p.Skipped || !p.Missed[0].Equal(next) || !p.Missed[len(p.Missed)-1].Equal(at("2026-11-29T08:18:00Z")) {
		t.Fatalf("missed %d from %v; want the %d skipped, 00:00 to 08:18", len(p.Missed), p.Missed[0], p.Skipped)
	}
	if !p.Fire[len(p.Fire)-1].Equal(at("2026-11-29T10:00:00Z")) || !p.Fire[0].Equal(at("2026-11-29T08:19:00Z")) {
		t.Fatalf("fired %v .. %v", p.Fire[0], p.Fire[len(p.Fire)-1])
	}
	end := at("2026-11-29T00:02:00Z")
	p = c.Due(next, at("2026-11-29T00:02:10Z"), Window{End: &end}, CatchupAll)
	if len(p.Fire) != 3 || !p.Next.IsZero() {
		t.Fatalf("window end: fired %v next %v, want 3 and none", p.Fire, p.Next)
	}
}

func TestDueWalksLongOutagesInPasses(t *testing.T) {
	c := mustParse(t, "* * * * * *", "") // every second, down for two days
	now := at("2026-11-29T00:00:00Z")
	next := now.Add(-48 * time.Hour)
	passes, skipped := 0, 0
	var fired []time.Time
	for next.Before(now) || next.Equal(now) {
		p := c.Due(next, now, Window{}, CatchupLatest)
		if len(p.Missed) != min(p.Skipped, MaxMissed) || (len(p.Missed) > 0 && !p.Missed[len(p.Missed)-1].Before(p.Next)) {
			t.Fatalf("pass %d: missed %d of %d skipped (the newest, at most %d)", passes, len(p.Missed), p.Skipped, MaxMissed)
		}
		passes++
		skipped += p.Skipped
		fired = append(fired, p.Fire...)
		next = p.Next
		if passes > 10 {
			t.Fatal("does not converge")
		}
	}
	if len(fired) == 0 || !fired[len(fired)-1].Equal(now) || passes < 2 {
		t.Fatalf("passes %d fired %v", passes, fired)
	}
	if skipped+len(fired) != 48*3600+1 {
		t.Fatalf("skipped %d + fired %d != every second of the outage", skipped, len(fired))
	}
}

func TestBetween(t *testing.T) {
	c := mustParse(t, "0 2 * * *", "Asia/Shanghai") // 18:00 UTC the day before
	got, more := c.Between(at("2026-11-01T00:00:00Z"), at("2026-11-03T18:00:00Z"), 10)
	if more || len(got) != 3 || !got[0].Equal(at("2026-11-01T18:00:00Z")) || !got[2].Equal(at("2026-11-03T18:00:00Z")) {
		t.Fatalf("between: %v more %v (both ends count)", got, more)
	}
	got, more = c.Between(at("2026-11-01T00:00:00Z"), at("2026-12-31T00:00:00Z"), 5)
	if !more || len(got) != 5 {
		t.Fatalf("capped: %d more %v", len(got), more)
	}
	if got, _ := c.Between(at("2026-11-01T19:00:00Z"), at("2026-11-01T20:00:00Z"), 5); len(got) != 0 {
		t.Fatalf("empty range: %v", got)
	}
}

// firesOn lists the fire times whose wall date in loc is day, walking from
// two days before.
func firesOn(t *testing.T, c *Cron, loc *time.Location, day string) []time.Time {
	t.Helper()
	d, err := time.ParseInLocation("2006-01-02", day, loc)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for n := c.Next(d.AddDate(0, 0, -2)); n.In(loc).Before(d.AddDate(0, 0, 2)); n = c.Next(n) {
		if n.In(loc).Format("2006-01-02") == day {
			out = append(out, n)
		}
	}
	return out
}

func TestDaylightSaving(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	// 2026-03-08: 02:00 EST jumps to 03:00 EDT; 2026-11-01: 02:00 EDT falls back to 01:00 EST.
	spring := firesOn(t, mustParse(t, "30 2 * * *", "America/New_York"), ny, "2026-03-08")
	if len(spring) != 1 || !spring[0].Equal(at("2026-03-08T07:30:00Z")) { // 03:30 EDT: right after the jump
		t.Fatalf("02:30 on the day it does not exist: %v", spring)
	}
	fall := firesOn(t, mustParse(t, "30 1 * * *", "America/New_York"), ny, "2026-11-01")
	if len(fall) != 1 {
		t.Fatalf("01:30 on the day it happens twice fired %d times: %v", len(fall), fall)
	}
	hourly := firesOn(t, mustParse(t, "0 * * * *", "America/New_York"), ny, "2026-11-01")
	walls := map[string]bool{}
	for _, f := range hourly {
		w := f.In(ny).Format("15:04")
		if walls[w] {
			t.Fatalf("wall time %s fired twice on the fall-back day", w)
		}
		walls[w] = true
	}
	if len(hourly) != 24 {
		t.Fatalf("hourly on a 25-hour day: %d fires, want one per wall hour (24)", len(hourly))
	}
	if n := len(firesOn(t, mustParse(t, "0 * * * *", "America/New_York"), ny, "2026-03-08")); n != 23 {
		t.Fatalf("hourly on a 23-hour day: %d fires, want 23", n)
	}
	// Midnight does not exist in Santiago on 2026-09-06 (00:00 jumps to 01:00).
	scl, _ := time.LoadLocation("America/Santiago")
	if got := firesOn(t, mustParse(t, "@daily", "America/Santiago"), scl, "2026-09-06"); len(got) != 1 {
		t.Fatalf("@daily in Santiago on the day midnight is skipped: %v", got)
	}
}

func TestEveryCountsFromTheStart(t *testing.T) {
	c := mustParse(t, "@every 1h", "")
	got, _ := c.Between(at("2026-11-01T00:00:00Z"), at("2026-11-01T04:00:00Z"), 10)
	if len(got) != 5 || !got[0].Equal(at("2026-11-01T00:00:00Z")) || !got[4].Equal(at("2026-11-01T04:00:00Z")) {
		t.Fatalf("@every 1h over four hours, both ends included: %v", got)
	}
	if f := c.First(at("2026-11-01T00:00:00.2Z"), Window{}); !f.Equal(at("2026-11-01T00:00:01Z")) {
		t.Fatalf("first from a fraction of a second: %v", f)
	}
}

// @every below a second (robfig rounds it up to 1 s, silently) or not in
// whole seconds (truncated, silently) is refused, naming the interval.
func TestEveryNeedsWholeSecondsOfAtLeastOne(t *testing.T) {
	for _, expr := range []string{"@every 0s", "@every 1ns", "@every -1s", "@every 999ms", "@every 1500ms", "@every x"} {
		_, err := Parse(expr, "")
		if err == nil {
			t.Errorf("%q accepted", expr)
			continue
		}
		if !strings.Contains(err.Error(), strings.TrimPrefix(expr, "@every ")) || !strings.Contains(err.Error(), "@every") {
			t.Errorf("%q: error does not name the interval: %v", expr, err)
		}
	}
	for _, expr := range []string{"@every 1s", "@every 90s", "@every 1h30m"} {
		if _, err := Parse(expr, ""); err != nil {
			t.Errorf("%q refused: %v", expr, err)
		}
	}
}
