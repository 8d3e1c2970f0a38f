package params

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/schedule"
)

func TestBizday(t *testing.T) {
	day := func(s string) schedule.Day {
		d, err := schedule.ParseDay(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// 2026: National Day week off, make-up Saturday 10 October.
	var hol []schedule.Day
	for _, s := range []string{"2026-10-01", "2026-10-02", "2026-10-05", "2026-10-06", "2026-10-07", "2027-01-01"} {
		hol = append(hol, day(s))
	}
	cn := schedule.NewCalendar(nil, hol, []schedule.Day{day("2026-10-10")})
	sh, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		base time.Time
		cal  *schedule.Calendar
		in   string
		want string
	}{
		{"no calendar counts Mon-Fri: Monday's business date is Friday", time.Date(2026, 11, 9, 2, 0, 0, 0, sh), nil, "$[bizday(yyyyMMdd,0)]", "20261106"},
		{"no calendar: the business day before it", time.Date(2026, 11, 9, 2, 0, 0, 0, sh), nil, "$[bizday(yyyyMMdd,-1)]", "20261105"},
		{"no calendar: forward over the weekend", time.Date(2026, 11, 9, 2, 0, 0, 0, sh), nil, "$[bizday(yyyy-MM-dd, +1)]", "2026-11-09"},
		{"after the holiday week", time.Date(2026, 10, 8, 2, 0, 0, 0, sh), cn, "$[bizday(yyyyMMdd,0)]", "20260930"},
		{"before the holiday week", time.Date(2026, 10, 8, 2, 0, 0, 0, sh), cn, "$[bizday(yyyyMMdd,-1)]", "20260929"},
		{"make-up Saturday counts", time.Date(2026, 10, 12, 2, 0, 0, 0, sh), cn, "$[bizday(yyyyMMdd,0)]", "20261010"},
		{"year end", time.Date(2027, 1, 4, 2, 0, 0, 0, sh), cn, "$[bizday(yyyyMMdd,0)]/$[bizday(yyyyMMdd,-1)]", "20261231/20261230"},
		{"keeps the time of day", time.Date(2026, 10, 8, 2, 30, 0, 0, sh), cn, "$[bizday(yyyyMMdd HH:mm,-1)]", "20260929 02:30"},
	} {
		got, err := ResolveIn(c.in, c.base, c.cal)
		if err != nil || got != c.want {
			t.Errorf("%s: %s = %q, %v; want %q", c.name, c.in, got, err, c.want)
		}
	}
	// BELUGA_BIZ_DATE follows the calendar; without one it stays the day before.
	if got := BuiltinsIn(time.Date(2026, 10, 8, 2, 0, 0, 0, sh), cn)[BizDate]; got != "20260930" {
		t.Errorf("BIZ_DATE under the calendar = %s", got)
	}
	if got := BuiltinsIn(time.Date(2026, 10, 8, 2, 0, 0, 0, sh), nil)[BizDate]; got != "20261007" {
		t.Errorf("BIZ_DATE without a calendar = %s", got)
	}
	env := ForTask(TaskInputs{Base: time.Date(2026, 10, 8, 2, 0, 0, 0, sh), Calendar: cn, TaskParams: map[string]string{"D": "$[bizday(yyyyMMdd,-1)]"}})
	if env["D"] != "20260929" || env[BizDate] != "20260930" {
		t.Errorf("ForTask under the calendar: D=%s BIZ_DATE=%s", env["D"], env[BizDate])
	}
	for _, bad := range []struct{ in, want string }{
		{"$[bizday(yyyyMMdd)]", "write bizday(FORMAT,N)"},
		{"$[bizday(yyyyMMdd,x)]", `N "x"`},
		{"$[bizdays(yyyyMMdd,1)]", "unknown function"},
	} {
		if err := Check(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Check(%q) = %v, want %q", bad.in, err, bad.want)
		}
	}
}

// TestBizdayREADME is the README's example.
func TestBizdayREADME(t *testing.T) {
	if got, err := Resolve("$[bizday(yyyyMMdd,-1)]", time.Date(2026, 11, 29, 1, 30, 0, 0, time.UTC)); err != nil || got != "20261126" {
		t.Fatalf("README example: %q %v", got, err)
	}
}
