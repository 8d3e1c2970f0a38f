// Package params resolves time expressions in workflow parameter values, so
// a nightly schedule can pass `bizdate: "$[yyyyMMdd-1]"` and each run gets
// the date it is for.
//
// A value may hold any number of $[...] expressions. Each is replaced by a
// date computed from a base time: the run's schedule time, else its creation
// time, in the workflow's zone. Text outside $[...] is kept as is; there is
// no escape, so a value cannot hold a literal "$[".
//
// Grammar of what stands between "$[" and "]":
//
//	expr    = format [offset]
//	        | func "(" format "," int ")"
//	format  = { literal | pattern } pattern       a format ends with a pattern
//	pattern = "yyyy" | "yy" | "MM" | "dd" | "HH" | "mm" | "ss"
//	literal = any character but an ASCII letter, "$", "[" or "]"
//	offset  = ("+" | "-") ( N | N "/24" | N "/24/60" | "7*" N )
//	func    = "add_months" | "month_first_day" | "month_last_day"
//	        | "week_first_day" | "week_last_day" | "bizday"
//	int     = ["+" | "-"] N
//	N       = 1 to 6 decimal digits
//
// Rules that keep it unambiguous:
//   - Pattern letters are ASCII letters; a run of one letter must be exactly
//     one pattern ("yyy", "MMM" and "Q" are errors). Other characters,
//     including digits and non-ASCII text, are copied as literals.
//   - Since a format ends with a pattern letter and an offset has no letters,
//     the offset is whatever follows the last letter: "yyyy-MM-dd-1" is the
//     format "yyyy-MM-dd" and the offset "-1". Text wanted after the date
//     goes outside the brackets: "$[yyyyMMdd]_done".
//   - No spaces inside an offset; spaces around function arguments are ignored.
//
// Offsets: N is days, N/24 hours, N/24/60 minutes, 7*N weeks. Days and weeks
// move the calendar date and keep the wall-clock time (time.AddDate); hours
// and minutes are elapsed time (time.Add), so across a daylight-saving change
// "$[HH-1/24]" may show the same hour twice or skip one, like a clock does.
//
// Functions keep the base's time of day and move only the date, N months or
// weeks away (N may be negative or 0): add_months clamps the day to the
// target month's last day (Jan 31 + 1 month is Feb 28, or 29 in a leap
// year); month_first_day and month_last_day give the first and last day of
// that month; week_first_day and week_last_day its week's Monday and Sunday.
//
// bizday counts business days from the run's business date (the business
// day before the base's date): bizday(yyyyMMdd,0) is that date and
// bizday(yyyyMMdd,-1) the business day before it, under the schedule's
// calendar, or Monday to Friday when the run has none.
package params

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/beluga-scheduler/beluga/common/schedule"
)

// Names of the built-in params a run's tasks get, computed from the base time.
const (
	ScheduleTime = "BELUGA_SCHEDULE_TIME" // RFC 3339 in the base's zone
	BizDate      = "BELUGA_BIZ_DATE"      // yyyyMMdd of the day before the base: the day a nightly batch is for
	CurDate      = "BELUGA_CUR_DATE"      // yyyyMMdd of the base
	DateTime     = "BELUGA_DATETIME"      // yyyyMMddHHmmss of the base
)

var (
	fmtDate     = []piece{{pat: patYear4}, {pat: patMonth}, {pat: patDay}}
	fmtDateTime = []piece{{pat: patYear4}, {pat: patMonth}, {pat: patDay}, {pat: patHour}, {pat: patMinute}, {pat: patSecond}}
)

// Builtins are the built-in params for base, already in the wanted zone.
func Builtins(base time.Time) map[string]string { return BuiltinsIn(base, nil) }

// BuiltinsIn are the built-in params for base under the business calendar
// cal: BELUGA_BIZ_DATE is the business day before base's date (with no
// calendar, the day before).
func BuiltinsIn(base time.Time, cal *schedule.Calendar) map[string]string {
	bd := schedule.BusinessDate(cal, schedule.DayOf(base))
	return map[string]string{
		ScheduleTime: base.Format(time.RFC3339),
		BizDate:      fmt.Sprintf("%04d%02d%02d", bd.Year, int(bd.Month), bd.Day),
		CurDate:      string(render(nil, fmtDate, base)),
		DateTime:     string(render(nil, fmtDateTime, base)),
	}
}

// Check validates every $[...] expression in value; the error names the
// expression and what is wrong with it. Control characters other than tab,
// newline and carriage return are refused: params reach tasks as
// environment variables, which cannot hold a NUL, and an escape sequence in
// a value is never what a user meant.
func Check(value string) error {
	if err := checkControl(value); err != nil {
		return err
	}
	if !strings.Contains(value, "$[") {
		return nil
	}
	_, err := expand(value, time.Time{}, nil, false)
	return err
}

func checkControl(value string) error {
	for i := 0; i < len(value); i++ {
		c := value[i]
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			return fmt.Errorf("control character U+%04X at byte %d (only tab, newline and carriage return are allowed)", c, i)
		}
	}
	return nil
}

// CheckAll checks the names (CheckName) and values of a param map, as a
// spec or a run request carries them; the error names the first bad param
// in name order.
func CheckAll(ps map[string]string) error {
	if err := CheckNames(ps); err != nil {
		return err
	}
	var bad []string
	for k, v := range ps {
		if Check(v) != nil {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad) // map order would make the message change between calls
	return fmt.Errorf("param %q: %w", bad[0], Check(ps[bad[0]]))
}

// Resolve replaces each $[...] expression in value with its value computed
// from base, which must already be in the wanted zone. A value without "$["
// comes back as is.
func Resolve(value string, base time.Time) (string, error) {
	return ResolveIn(value, base, nil)
}

// ResolveIn is Resolve with the business calendar bizday counts by (nil:
// Monday to Friday).
func ResolveIn(value string, base time.Time, cal *schedule.Calendar) (string, error) {
	if !strings.Contains(value, "$[") {
		return value, nil
	}
	return expand(value, base, cal, true)
}

// expand walks the expressions of value, rendering them when out is set and
// only parsing them otherwise.
func expand(value string, base time.Time, cal *schedule.Calendar, out bool) (string, error) {
	var b []byte
	if out {
		b = make([]byte, 0, len(value)+8)
	}
	rest := value
	for {
		i := strings.Index(rest, "$[")
		if i < 0 {
			break
		}
		b = append(b, rest[:i]...)
		body := rest[i+2:]
		j := strings.IndexByte(body, ']')
		if j < 0 {
			return "", fmt.Errorf("%s: unterminated, add the closing \"]\"", clip(rest[i:]))
		}
		e, err := parse(body[:j])
		if err != nil {
			return "", fmt.Errorf("$[%s]: %w", body[:j], err)
		}
		if out {
			b = render(b, e.format, e.at(base, cal))
		}
		rest = body[j+1:]
	}
	if !out {
		return "", nil
	}
	return string(append(b, rest...)), nil
}

// clip shortens an unterminated expression for an error message.
func clip(s string) string {
	const maxLen = 40
	if len(s) > maxLen {
		return s[:maxLen] + "..."
	}
	return s
}

// BaseIn is t in the IANA zone tz; "" or an unknown zone is UTC. Zones are
// loaded once: a run's every task asks for the same one.
func BaseIn(t time.Time, tz string) time.Time {
	if tz == "" {
		return t.UTC()
	}
	if loc, ok := zones.Load(tz); ok {
		return t.In(loc.(*time.Location))
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return t.UTC()
	}
	zones.Store(tz, loc) // bounded by the zone database: only known names get here
	return t.In(loc)
}

var zones sync.Map // zone name -> *time.Location
