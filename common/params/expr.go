package params

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/schedule"
)

// pattern is one date field of a format; patLit marks literal text.
type pattern uint8

const (
	patLit pattern = iota
	patYear4
	patYear2
	patMonth
	patDay
	patHour
	patMinute
	patSecond
)

var patterns = map[string]pattern{
	"yyyy": patYear4, "yy": patYear2, "MM": patMonth, "dd": patDay,
	"HH": patHour, "mm": patMinute, "ss": patSecond,
}

const patternRule = "use yyyy, yy, MM, dd, HH, mm or ss"

// piece is a part of a format: a pattern, or literal text.
type piece struct {
	pat pattern
	lit string
}

// unit is what the N of a plain expression's offset counts.
type unit uint8

const (
	days unit = iota
	hours
	minutes
	weeks
)

// function is the function form of an expression; none is the plain form.
type function uint8

const (
	none function = iota
	addMonths
	monthFirstDay
	monthLastDay
	weekFirstDay
	weekLastDay
	bizDay
)

var functions = map[string]function{
	"add_months": addMonths, "month_first_day": monthFirstDay, "month_last_day": monthLastDay,
	"week_first_day": weekFirstDay, "week_last_day": weekLastDay, "bizday": bizDay,
}

const functionRule = "use add_months, month_first_day, month_last_day, week_first_day, week_last_day or bizday"

// maxDigits bounds N: 999999 days or months is far beyond any real use and
// keeps every date well inside what time.Time represents.
const maxDigits = 6

// expr is a parsed expression.
type expr struct {
	format []piece
	fn     function
	unit   unit // of n, for the plain form
	n      int  // offset, or the function's N
}

// parse reads what stands between "$[" and "]".
func parse(s string) (expr, error) {
	if s == "" {
		return expr{}, errors.New("empty expression: " + patternRule)
	}
	if i := strings.IndexByte(s, '('); i > 0 && isIdent(s[:i]) {
		return parseFunc(s[:i], s[i+1:])
	}
	last := -1
	for i := 0; i < len(s); i++ {
		if isLetter(s[i]) {
			last = i
		}
	}
	if last < 0 {
		return expr{}, errors.New("no date pattern: " + patternRule)
	}
	format, err := parseFormat(s[:last+1])
	if err != nil {
		return expr{}, err
	}
	e := expr{format: format}
	if tail := s[last+1:]; tail != "" {
		if e.unit, e.n, err = parseOffset(tail); err != nil {
			return expr{}, err
		}
	}
	return e, nil
}

// parseFunc reads NAME(FORMAT,N); rest is what follows the "(".
func parseFunc(name, rest string) (expr, error) {
	fn, ok := functions[name]
	if !ok {
		return expr{}, fmt.Errorf("unknown function %q: %s", name, functionRule)
	}
	args, ok := strings.CutSuffix(rest, ")")
	c := strings.LastIndexByte(args, ',')
	if !ok || c < 0 {
		return expr{}, fmt.Errorf("%s: write %s(FORMAT,N)", name, name)
	}
	format, err := parseFormat(strings.TrimSpace(args[:c]))
	if err != nil {
		return expr{}, fmt.Errorf("%s: %w", name, err)
	}
	arg := strings.TrimSpace(args[c+1:])
	digits, sign := arg, 1
	if arg != "" && (arg[0] == '+' || arg[0] == '-') {
		digits = arg[1:]
		if arg[0] == '-' {
			sign = -1
		}
	}
	n, err := number(digits)
	if err != nil {
		return expr{}, fmt.Errorf("%s: N %q: %w, optionally signed", name, arg, err)
	}
	return expr{format: format, fn: fn, n: sign * n}, nil
}

// parseFormat splits a format into patterns and literals. A format ends
// with a pattern, which is what lets a plain expression's offset start
// right after its last letter.
func parseFormat(s string) ([]piece, error) {
	var ps []piece
	for i := 0; i < len(s); {
		c := s[i]
		j := i + 1
		switch {
		case c == '$' || c == '[':
			return nil, fmt.Errorf("%q inside an expression: expressions do not nest", c)
		case isLetter(c):
			for j < len(s) && s[j] == c {
				j++
			}
			p, ok := patterns[s[i:j]]
			if !ok {
				return nil, fmt.Errorf("unknown pattern %q: %s", s[i:j], patternRule)
			}
			ps = append(ps, piece{pat: p})
		default:
			for j < len(s) && !isLetter(s[j]) && s[j] != '$' && s[j] != '[' {
				j++
			}
			ps = append(ps, piece{lit: s[i:j]})
		}
		i = j
	}
	if len(ps) == 0 || ps[len(ps)-1].pat == patLit {
		return nil, fmt.Errorf("format %q must end with a date pattern (text after the date goes outside $[...])", s)
	}
	return ps, nil
}

// parseOffset reads +N or -N days, N/24 hours, N/24/60 minutes or 7*N weeks.
func parseOffset(s string) (unit, int, error) {
	sign := 1
	switch s[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return 0, 0, fmt.Errorf("%q after the date is not an offset (+N, -N, -N/24, -N/24/60, -7*N); text after the date goes outside $[...]", s)
	}
	body, u := s[1:], days
	if b, ok := strings.CutPrefix(body, "7*"); ok {
		body, u = b, weeks
	} else if b, ok := strings.CutSuffix(body, "/24/60"); ok {
		body, u = b, minutes
	} else if b, ok := strings.CutSuffix(body, "/24"); ok {
		body, u = b, hours
	}
	n, err := number(body)
	if err != nil {
		return 0, 0, fmt.Errorf("offset %q: %w: use +N or -N days, N/24 hours, N/24/60 minutes or 7*N weeks, with no spaces", s, err)
	}
	return u, sign * n, nil
}

// number reads N: 1 to maxDigits decimal digits, no sign.
func number(s string) (int, error) {
	if s == "" || len(s) > maxDigits {
		return 0, fmt.Errorf("want 1 to %d digits", maxDigits)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, fmt.Errorf("want 1 to %d digits", maxDigits)
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, nil
}

// at is the time the expression shows for base; cal is the business
// calendar of bizday (nil: Monday to Friday).
func (e expr) at(base time.Time, cal *schedule.Calendar) time.Time {
	switch e.fn {
	case bizDay:
		if cal == nil {
			cal = schedule.Weekdays
		}
		d, ok := cal.AddBusinessDays(schedule.BusinessDate(cal, schedule.DayOf(base)), e.n)
		if !ok { // a calendar without business days: the plain date offset
			return base.AddDate(0, 0, e.n-1)
		}
		hh, mm, ss := base.Clock()
		return time.Date(d.Year, d.Month, d.Day, hh, mm, ss, base.Nanosecond(), base.Location())
	case addMonths, monthFirstDay, monthLastDay:
		y, m, d := base.Date()
		ty, tm, _ := time.Date(y, m+time.Month(e.n), 1, 0, 0, 0, 0, time.UTC).Date()
		last := time.Date(ty, tm+1, 0, 0, 0, 0, 0, time.UTC).Day()
		switch e.fn {
		case addMonths:
			d = min(d, last) // Jan 31 + 1 month is the end of February
		case monthFirstDay:
			d = 1
		default:
			d = last
		}
		hh, mm, ss := base.Clock()
		return time.Date(ty, tm, d, hh, mm, ss, base.Nanosecond(), base.Location())
	case weekFirstDay, weekLastDay:
		monday := -((int(base.Weekday()) + 6) % 7) // weeks start on Monday
		if e.fn == weekLastDay {
			monday += 6
		}
		return base.AddDate(0, 0, monday+7*e.n)
	}
	switch e.unit {
	case hours:
		return base.Add(time.Duration(e.n) * time.Hour)
	case minutes:
		return base.Add(time.Duration(e.n) * time.Minute)
	case weeks:
		return base.AddDate(0, 0, 7*e.n)
	}
	return base.AddDate(0, 0, e.n)
}

// render appends t written in format to b.
func render(b []byte, format []piece, t time.Time) []byte {
	y, mo, d := t.Date()
	hh, mm, ss := t.Clock()
	for _, p := range format {
		switch p.pat {
		case patLit:
			b = append(b, p.lit...)
		case patYear4:
			b = pad(b, y, 4)
		case patYear2:
			b = pad(b, (y%100+100)%100, 2)
		case patMonth:
			b = pad(b, int(mo), 2)
		case patDay:
			b = pad(b, d, 2)
		case patHour:
			b = pad(b, hh, 2)
		case patMinute:
			b = pad(b, mm, 2)
		case patSecond:
			b = pad(b, ss, 2)
		}
	}
	return b
}

// pad appends v with at least width digits.
func pad(b []byte, v, width int) []byte {
	if v < 0 { // years before 1 BC; never from a real schedule
		b = append(b, '-')
		v = -v
	}
	for n, p := 1, 10; n < width; n, p = n+1, p*10 {
		if v < p {
			b = append(b, '0')
		}
	}
	return strconv.AppendInt(b, int64(v), 10)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// isIdent: a function name is lower-case letters and '_'.
func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= 'a' && s[i] <= 'z' || s[i] == '_') {
			return false
		}
	}
	return true
}
