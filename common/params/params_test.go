package params

import (
	"strings"
	"testing"
	"time"
)

// friday is the base of most cases: Friday 2024-03-15 13:45:30 UTC, in a
// leap year.
var friday = time.Date(2024, 3, 15, 13, 45, 30, 0, time.UTC)

func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestResolve(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain text, a]b, $ and [", "plain text, a]b, $ and ["},
		{"$[yyyyMMdd]", "20240315"},
		{"$[yyyyMMdd-1]", "20240314"},
		{"$[yyyy-MM-dd-1]", "2024-03-14"},
		{"$[yyyy-MM-dd+1]", "2024-03-16"},
		{"$[yyyyMMdd+0]", "20240315"},
		{"$[yyyyMMdd-000001]", "20240314"},
		{"$[yy/MM/dd HH:mm:ss]", "24/03/15 13:45:30"},
		{"$[yyyy.MM.dd_HH]", "2024.03.15_13"},
		{"$[yyyyMMddHH-1/24]", "2024031512"},
		{"$[yyyyMMddHH-14/24]", "2024031423"},
		{"$[yyyyMMddHH+36/24]", "2024031701"},
		{"$[HH:mm-30/24/60]", "13:15"},
		{"$[HH:mm+15/24/60]", "14:00"},
		{"$[yyyyMMdd-7*1]", "20240308"},
		{"$[yyyyMMdd+7*2]", "20240329"},
		{"$[yyyyMMdd-15]", "20240229"}, // leap day
		{"$[yyyyMMdd-366]", "20230315"},
		{"dt=$[yyyyMMdd-1]/hr=$[HH]", "dt=20240314/hr=13"},
		{"$[yyyyMMdd-1]$[yyyyMMdd]", "2024031420240315"},
		{"$[yyyyMMdd]_done", "20240315_done"},
		{"$$[yyyy]", "$2024"},
		{"$[yyyy年MM月dd]日", "2024年03月15日"},
		{"$[(yyyy)MM]", "(2024)03"},
		{"$[add_months(yyyyMMdd,1)]", "20240415"},
		{"$[add_months(yyyyMMdd,-3)]", "20231215"},
		{"$[add_months(yyyy-MM,+12)]", "2025-03"},
		{"$[add_months( yyyyMMdd , -1 )]", "20240215"},
		{"$[add_months(yyyyMMdd,0)]", "20240315"},
		{"$[add_months(yyyy,MM,1)]", "2024,04"}, // the last comma separates N
		{"$[month_first_day(yyyyMMdd,0)]", "20240301"},
		{"$[month_last_day(yyyyMMdd,0)]", "20240331"},
		{"$[month_last_day(yyyyMMdd,-1)]", "20240229"},
		{"$[month_first_day(yyyy-MM-dd,-1)]", "2024-02-01"},
		{"$[month_last_day(yyyyMMdd,-13)]", "20230228"},
		{"$[month_last_day(yyyyMMdd,11)]", "20250228"},
		{"$[month_first_day(yyyyMMdd HH:mm,0)]", "20240301 13:45"}, // the time of day stays
		{"$[week_first_day(yyyyMMdd,0)]", "20240311"},
		{"$[week_last_day(yyyyMMdd,0)]", "20240317"},
		{"$[week_first_day(yyyyMMdd,-1)]", "20240304"},
		{"$[week_last_day(yyyyMMdd,-1)]", "20240310"},
		{"$[week_first_day(yyyyMMdd,3)]", "20240401"},
	} {
		got, err := Resolve(c.in, friday)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if err := Check(c.in); err != nil {
			t.Errorf("Check(%q): %v", c.in, err)
		}
	}
}

func TestResolveCalendarEdges(t *testing.T) {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 9, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		base     time.Time
		in, want string
	}{
		// add_months clamps to the last day of the target month.
		{day(2023, 1, 31), "$[add_months(yyyyMMdd,1)]", "20230228"},
		{day(2024, 1, 31), "$[add_months(yyyyMMdd,1)]", "20240229"},
		{day(2024, 3, 31), "$[add_months(yyyyMMdd,-1)]", "20240229"},
		{day(2024, 10, 31), "$[add_months(yyyyMMdd,1)]", "20241130"},
		{day(2024, 12, 31), "$[add_months(yyyyMMdd,2)]", "20250228"},
		{day(2024, 2, 29), "$[add_months(yyyyMMdd,12)]", "20250228"},
		{day(2024, 2, 29), "$[add_months(yyyyMMdd,-48)]", "20200229"},
		{day(2024, 1, 30), "$[add_months(yyyyMMdd,1)]", "20240229"},
		{day(2024, 2, 29), "$[add_months(yyyyMMdd,1)]", "20240329"}, // no memory of "last day"
		// Month ends, leap years and century rules.
		{day(2100, 3, 1), "$[yyyyMMdd-1]", "21000228"},
		{day(2000, 3, 1), "$[yyyyMMdd-1]", "20000229"},
		{day(2000, 3, 15), "$[month_last_day(yyyyMMdd,-1)]", "20000229"},
		{day(1900, 3, 15), "$[month_last_day(yyyyMMdd,-1)]", "19000228"},
		{day(2024, 1, 1), "$[yyyyMMdd-1]", "20231231"},
		{day(2024, 1, 1), "$[yyyyMMddHH-10/24]", "2023123123"},
		// Weeks start on Monday, also when the base is a Sunday or a Monday.
		{day(2024, 3, 17), "$[week_first_day(yyyyMMdd,0)]", "20240311"},
		{day(2024, 3, 17), "$[week_last_day(yyyyMMdd,0)]", "20240317"},
		{day(2024, 3, 11), "$[week_first_day(yyyyMMdd,0)]", "20240311"},
		{day(2024, 3, 11), "$[week_last_day(yyyyMMdd,0)]", "20240317"},
		{day(2024, 1, 3), "$[week_first_day(yyyyMMdd,0)]", "20240101"},
		{day(2023, 1, 1), "$[week_first_day(yyyyMMdd,0)]", "20221226"},
	} {
		got, err := Resolve(c.in, c.base)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) at %s = %q, %v; want %q", c.in, c.base.Format(time.DateOnly), got, err, c.want)
		}
	}
	for _, c := range []struct {
		year int
		want string
	}{{2009, "09 2009"}, {2000, "00 2000"}, {999, "99 0999"}, {10000, "00 10000"}} {
		got, _ := Resolve("$[yy yyyy]", day(c.year, 6, 1))
		if got != c.want {
			t.Errorf("year %d: %q, want %q", c.year, got, c.want)
		}
	}
}

// TestResolveDST: days keep the wall-clock time, hours are elapsed time.
// Berlin went to summer time on 2024-03-31 at 02:00 and back on 2024-10-27
// at 03:00.
func TestResolveDST(t *testing.T) {
	loc := berlin(t)
	for _, c := range []struct {
		base     time.Time
		in, want string
	}{
		// 03:30 CEST is 01:30 UTC; an hour earlier is 01:30 CET: 02:xx never happened.
		{time.Date(2024, 3, 31, 3, 30, 0, 0, loc), "$[yyyyMMdd HH:mm-1/24]", "20240331 01:30"},
		{time.Date(2024, 3, 31, 0, 30, 0, 0, loc), "$[HH:mm+3/24]", "04:30"},
		{time.Date(2024, 3, 31, 0, 30, 0, 0, loc), "$[HH:mm+90/24/60]", "03:00"},
		{time.Date(2024, 3, 30, 12, 0, 0, 0, loc), "$[yyyyMMdd HH:mm+1]", "20240331 12:00"}, // 23 h later
		{time.Date(2024, 4, 1, 0, 30, 0, 0, loc), "$[yyyyMMdd HH:mm-1]", "20240331 00:30"},
		// The second 02:30 of 2024-10-27 (CET, 01:30 UTC): an hour earlier is the first 02:30 (CEST).
		{time.Date(2024, 10, 27, 1, 30, 0, 0, time.UTC).In(loc), "$[HH:mm-1/24]", "02:30"},
		{time.Date(2024, 10, 26, 12, 0, 0, 0, loc), "$[yyyyMMdd HH:mm+1]", "20241027 12:00"}, // 25 h later
		{time.Date(2024, 10, 26, 12, 0, 0, 0, loc), "$[yyyyMMdd HH:mm+24/24]", "20241027 11:00"},
		{time.Date(2024, 10, 26, 12, 0, 0, 0, loc), "$[yyyyMMdd HH:mm+7*1]", "20241102 12:00"},
		// The zone decides the date: 23:30 UTC is already tomorrow in Berlin.
		{time.Date(2024, 3, 14, 23, 30, 0, 0, time.UTC).In(loc), "$[yyyyMMdd]", "20240315"},
	} {
		got, err := Resolve(c.in, c.base)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) at %s = %q, %v; want %q", c.in, c.base, got, err, c.want)
		}
	}
}

func TestCheckRejects(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"$[yyyyQQ]", `$[yyyyQQ]: unknown pattern "QQ"`},
		{"$[yyyyMMdd", `$[yyyyMMdd: unterminated`},
		{"ok $[", `$[: unterminated`},
		{"$[yyyy] then $[MM", `$[MM: unterminated`},
		{"$[]", "$[]: empty expression"},
		{"$[yyy]", `unknown pattern "yyy"`},
		{"$[yyyyy]", `unknown pattern "yyyyy"`},
		{"$[MMM]", `unknown pattern "MMM"`},
		{"$[yyyymmDD]", `unknown pattern "DD"`},
		{"$[yyyyMMdd.]", `$[yyyyMMdd.]: "." after the date is not an offset`},
		{"$[yyyyMMdd日]", `"日" after the date is not an offset`},
		{"$[yyyyMMdd - 1]", `" - 1" after the date is not an offset`},
		{"$[yyyyMMdd-]", `offset "-": want 1 to 6 digits`},
		{"$[yyyyMMdd--1]", `offset "--1"`},
		{"$[yyyyMMdd+-1]", `offset "+-1"`},
		{"$[yyyyMMdd-1/12]", `offset "-1/12"`},
		{"$[yyyyMMdd-1/24/24]", `offset "-1/24/24"`},
		{"$[yyyyMMdd-7*]", `offset "-7*"`},
		{"$[yyyyMMdd-1*7]", `offset "-1*7"`},
		{"$[yyyyMMdd-1234567]", `offset "-1234567": want 1 to 6 digits`},
		{"$[yyyyMMdd-1d]", `unknown pattern "d"`},
		{"$[-1]", "$[-1]: no date pattern"},
		{"$[20240101]", "no date pattern"},
		{"$[yyyy$[MM]]", `'$' inside an expression`},
		{"$[[yyyy]", `'[' inside an expression`},
		{"$[add_month(yyyyMMdd,1)]", `unknown function "add_month"`},
		{"$[add_months(yyyyMMdd)]", "add_months: write add_months(FORMAT,N)"},
		{"$[add_months(yyyyMMdd,1]", "add_months: write add_months(FORMAT,N)"},
		{"$[add_months(yyyyMMdd,1) ]", "add_months: write add_months(FORMAT,N)"},
		{"$[add_months(yyyyMMdd-1,1)]", `add_months: format "yyyyMMdd-1" must end with a date pattern`},
		{"$[add_months(,1)]", `add_months: format "" must end with a date pattern`},
		{"$[add_months(yyyyMMdd,x)]", `add_months: N "x": want 1 to 6 digits`},
		{"$[add_months(yyyyMMdd,)]", `add_months: N "": want`},
		{"$[add_months(yyyyMMdd,--1)]", `add_months: N "--1"`},
		{"$[add_months(yyyyMMdd,1 2)]", `add_months: N "1 2"`},
		{"$[week_first_day(yyyyQQ,0)]", `week_first_day: unknown pattern "QQ"`},
		{"$[month_last_day(yyyyMMdd,1000000)]", `N "1000000"`},
		{"good $[yyyy] bad $[xx]", `$[xx]: unknown pattern "xx"`},
	} {
		err := Check(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q) = %v; want it to contain %q", c.in, err, c.want)
			continue
		}
		if _, rerr := Resolve(c.in, friday); rerr == nil || rerr.Error() != err.Error() {
			t.Errorf("Resolve(%q) error %v; want the Check error %v", c.in, rerr, err)
		}
	}
}

func TestCheckControlCharacters(t *testing.T) {
	for _, ok := range []string{"", "a\tb", "line1\nline2\r\n", "caf\u00e9 $[yyyy]"} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"x\x00y", "control character U+0000 at byte 1"},
		{"\x1b[31m", "control character U+001B at byte 0"},
		{"ab\x7f", "control character U+007F at byte 2"},
		{"$[yyyy]\x01", "control character U+0001 at byte 7"},
	} {
		if err := Check(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q) = %v, want it to contain %q", c.in, err, c.want)
		}
	}
	err := CheckAll(map[string]string{"a": "fine", "P": "x\x00"})
	if err == nil || !strings.HasPrefix(err.Error(), `param "P": control character U+0000`) {
		t.Fatalf("CheckAll: %v", err)
	}
}

func TestCheckAll(t *testing.T) {
	if err := CheckAll(nil); err != nil {
		t.Fatal(err)
	}
	if err := CheckAll(map[string]string{"a": "x", "b": "$[yyyyMMdd-1]"}); err != nil {
		t.Fatal(err)
	}
	err := CheckAll(map[string]string{"ok": "$[yyyy]", "zz": "$[QQ]", "bizdate": "$[yyyyMMdd"})
	if err == nil || !strings.HasPrefix(err.Error(), `param "bizdate": $[yyyyMMdd: unterminated`) {
		t.Fatalf("CheckAll: %v", err)
	}
}

func TestBuiltins(t *testing.T) {
	loc := berlin(t)
	got := Builtins(time.Date(2024, 3, 1, 0, 5, 9, 0, loc))
	want := map[string]string{
		ScheduleTime: "2024-03-01T00:05:09+01:00",
		BizDate:      "20240229",
		CurDate:      "20240301",
		DateTime:     "20240301000509",
	}
	if len(got) != len(want) {
		t.Fatalf("Builtins: %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if s := Builtins(friday)[ScheduleTime]; s != "2024-03-15T13:45:30Z" {
		t.Errorf("UTC schedule time %q", s)
	}
}

func TestBaseIn(t *testing.T) {
	at := time.Date(2024, 3, 14, 23, 30, 0, 0, time.UTC)
	for _, c := range []struct{ tz, want string }{
		{"", "2024-03-14T23:30:00Z"},
		{"Europe/Berlin", "2024-03-15T00:30:00+01:00"},
		{"Europe/Berlin", "2024-03-15T00:30:00+01:00"}, // cached
		{"Asia/Shanghai", "2024-03-15T07:30:00+08:00"},
		{"Not/AZone", "2024-03-14T23:30:00Z"},
	} {
		if got := BaseIn(at, c.tz).Format(time.RFC3339); got != c.want {
			t.Errorf("BaseIn(%q) = %s, want %s", c.tz, got, c.want)
		}
	}
}

// TestResolveWithoutExpressionDoesNotAllocate: most values hold no
// expression, and every task of every run resolves its params.
func TestResolveWithoutExpressionDoesNotAllocate(t *testing.T) {
	v := strings.Repeat("plain value ", 10)
	if n := testing.AllocsPerRun(100, func() {
		if got, _ := Resolve(v, friday); got != v {
			t.Fatal("changed")
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"", "x", "$[yyyyMMdd-1]", "$[yyyy-MM-dd-7*1]", "$[HH-1/24/60]", "$[yyyyQQ]",
		"$[add_months(yyyyMMdd,-1)]", "$[week_last_day( yy ,+3)]", "$[", "a$[b]c$[", "$[yyyy$[MM]]", "$[(x,1)]"} {
		f.Add(s, int64(1710510330))
	}
	loc := berlin(f)
	f.Fuzz(func(t *testing.T, v string, sec int64) {
		base := time.Unix(sec%(1<<36), 0).In(loc) // about +-2000 years around 1970
		cerr := Check(v)
		got, rerr := Resolve(v, base)
		if checkControl(v) != nil {
			// Characters are judged where values come in (Check), not
			// when a stored value is resolved.
			if cerr == nil || cerr.Error() != checkControl(v).Error() {
				t.Fatalf("Check(%q) = %v, want the control character refused", v, cerr)
			}
			return
		}
		switch {
		case (cerr == nil) != (rerr == nil):
			t.Fatalf("Check(%q) = %v but Resolve = %v", v, cerr, rerr)
		case rerr != nil && cerr.Error() != rerr.Error():
			t.Fatalf("Check(%q) = %v, Resolve = %v", v, cerr, rerr)
		case !strings.Contains(v, "$[") && got != v:
			t.Fatalf("Resolve(%q) = %q without an expression", v, got)
		case rerr == nil && strings.Contains(got, "$["):
			// Every "$[" was an expression, and no output holds '$' or '['.
			t.Fatalf("Resolve(%q) = %q left a \"$[\"", v, got)
		}
	})
}
