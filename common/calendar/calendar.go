// Package calendar owns the contents of a business calendar: checking the
// days a user gives, reading them from an ICS or CSV file, and turning a
// stored calendar into the schedule package's business-day arithmetic.
package calendar

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-ical"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
)

// Limits of what one calendar holds: a century of holidays fits, and the
// days_json column (sql/*/0040_calendar.sql) stays small.
const (
	MaxDays        = 5000
	MaxDayName     = 128
	MaxDescription = 1024
	maxEventDays   = 366 // one ICS event's span
	minYear        = 1900
	maxYear        = 2200
)

// DefaultWeekend is the weekend of a calendar that names none.
var DefaultWeekend = []time.Weekday{time.Saturday, time.Sunday}

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseWeekend reads weekday names (sat, sunday, Sat: the first three
// letters count, case aside); none is a calendar with no weekend.
func ParseWeekend(names []string) ([]time.Weekday, error) {
	out := []time.Weekday{}
	for _, n := range names {
		k := strings.ToLower(strings.TrimSpace(n))
		w, ok := weekdays[k]
		if !ok && len(k) > 3 { // the full name: saturday
			w, ok = weekdays[k[:3]]
			ok = ok && k == strings.ToLower(w.String())
		}
		if !ok {
			return nil, fmt.Errorf("weekend: %q is not a weekday: use mon, tue, wed, thu, fri, sat or sun", n)
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b time.Weekday) int { return int(a+6)%7 - int(b+6)%7 }) // Monday first
	return out, nil
}

// WeekendNames is the weekend written as ParseWeekend reads it.
func WeekendNames(ws []time.Weekday) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = strings.ToLower(w.String()[:3])
	}
	return out
}

// Check names every problem with a calendar's days and description: dates
// that are not dates (or outside 1900-2200), a date listed twice, a date
// both a holiday and a working day, names too long or not text, too many
// days. It normalises dates to YYYY-MM-DD and sorts the days.
func Check(c *model.Calendar) []string {
	var bad []string
	if utf8.RuneCountInString(c.Description) > MaxDescription {
		bad = append(bad, fmt.Sprintf("description is longer than %d characters", MaxDescription))
	}
	if n := len(c.Holidays) + len(c.Workdays); n > MaxDays {
		bad = append(bad, fmt.Sprintf("%d days; a calendar holds at most %d", n, MaxDays))
		return bad
	}
	seen := map[string]string{}
	for _, list := range []struct {
		kind string
		days []model.CalendarDay
	}{{"holidays", c.Holidays}, {"workdays", c.Workdays}} {
		for i := range list.days {
			d := &list.days[i]
			day, err := schedule.ParseDay(strings.TrimSpace(d.Date))
			switch {
			case err != nil:
				bad = append(bad, fmt.Sprintf("%s: %v", list.kind, err))
				continue
			case day.Year < minYear || day.Year > maxYear:
				bad = append(bad, fmt.Sprintf("%s: date %q is outside %d-%d", list.kind, d.Date, minYear, maxYear))
				continue
			}
			d.Date = day.String()
			if !utf8.ValidString(d.Name) || utf8.RuneCountInString(d.Name) > MaxDayName || strings.ContainsFunc(d.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				bad = append(bad, fmt.Sprintf("%s: %s: the name must be text of at most %d characters without control characters", list.kind, d.Date, MaxDayName))
			}
			switch prev, dup := seen[d.Date]; {
			case dup && prev == list.kind:
				bad = append(bad, fmt.Sprintf("%s: %s is listed twice", list.kind, d.Date))
			case dup:
				bad = append(bad, fmt.Sprintf("%s is both a holiday and a working day", d.Date))
			}
			seen[d.Date] = list.kind
		}
	}
	byDate := func(a, b model.CalendarDay) int { return strings.Compare(a.Date, b.Date) }
	slices.SortFunc(c.Holidays, byDate)
	slices.SortFunc(c.Workdays, byDate)
	return bad
}

// Business is the business-day arithmetic of a stored calendar (which was
// checked when written; a date that no longer parses is left out).
func Business(c model.Calendar) *schedule.Calendar {
	days := func(ds []model.CalendarDay) []schedule.Day {
		out := make([]schedule.Day, 0, len(ds))
		for _, d := range ds {
			if day, err := schedule.ParseDay(d.Date); err == nil {
				out = append(out, day)
			}
		}
		return out
	}
	weekend := c.Weekend
	if weekend == nil {
		weekend = []time.Weekday{}
	}
	return schedule.NewCalendar(weekend, days(c.Holidays), days(c.Workdays))
}

// ParseCSV reads one date per line (YYYY-MM-DD or YYYYMMDD), optionally
// followed by a name column; a first line whose first field is "date" is
// a header; blank lines are skipped. A bad line is named by its number.
func ParseCSV(r io.Reader) ([]model.CalendarDay, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var out []model.CalendarDay
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 0 || (len(rec) == 1 && strings.TrimSpace(rec[0]) == "") {
			continue
		}
		if len(rec) > 2 {
			return nil, fmt.Errorf("csv line %d: %d columns; write a date and an optional name", line, len(rec))
		}
		date := strings.TrimSpace(strings.TrimPrefix(rec[0], "\ufeff"))
		if len(out) == 0 && strings.EqualFold(date, "date") {
			continue
		}
		day, err := schedule.ParseDay(date)
		if err != nil {
			return nil, fmt.Errorf("csv line %d: %w", line, err)
		}
		d := model.CalendarDay{Date: day.String()}
		if len(rec) == 2 {
			d.Name = strings.TrimSpace(rec[1])
		}
		out = append(out, d)
		if len(out) > MaxDays {
			return nil, fmt.Errorf("csv: more than %d dates", MaxDays)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("csv: no dates; write one date (YYYY-MM-DD) per line, optionally followed by a name")
	}
	return out, nil
}

// ParseICS reads the days of every VEVENT of an iCalendar file: an all-day
// event covers its DTSTART date up to, not including, its DTEND (one day
// without one); a timed event covers the dates from its start to its end in
// its own zone. A recurring event (RRULE) is refused: list each date.
// Days named twice (overlapping events) are one day.
func ParseICS(r io.Reader) ([]model.CalendarDay, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("ics: %w", err)
	}
	cal, err := ical.NewDecoder(bytes.NewReader(b)).Decode()
	if err != nil {
		return nil, fmt.Errorf("ics: not an iCalendar file: %w", err)
	}
	seen := map[string]bool{}
	var out []model.CalendarDay
	for i, ev := range cal.Events() {
		name, _ := ev.Props.Text(ical.PropSummary)
		what := fmt.Sprintf("ics event %d", i+1)
		if name != "" {
			what += fmt.Sprintf(" (%q)", name)
		}
		if ev.Props.Get(ical.PropRecurrenceRule) != nil {
			return nil, fmt.Errorf("%s: recurring events (RRULE) are not read; list each date as its own event", what)
		}
		sp := ev.Props.Get(ical.PropDateTimeStart)
		if sp == nil {
			return nil, fmt.Errorf("%s: no DTSTART", what)
		}
		start, err := sp.DateTime(time.UTC)
		if err != nil {
			return nil, fmt.Errorf("%s: DTSTART %q: %v", what, sp.Value, err)
		}
		allDay := sp.ValueType() == ical.ValueDate || len(sp.Value) == len("20060102")
		end := start
		if ep := ev.Props.Get(ical.PropDateTimeEnd); ep != nil {
			if end, err = ep.DateTime(start.Location()); err != nil {
				return nil, fmt.Errorf("%s: DTEND %q: %v", what, ep.Value, err)
			}
			if end.Before(start) {
				return nil, fmt.Errorf("%s: DTEND %s is before DTSTART %s", what, ep.Value, sp.Value)
			}
		}
		first, last := schedule.DayOf(start), schedule.DayOf(end)
		// DTEND is exclusive: an all-day event ends the day before it, and
		// so does a timed one ending at midnight.
		if end.After(start) && (allDay || end.Equal(time.Date(end.Year(), end.Month(), end.Day(), 0, 0, 0, 0, end.Location()))) {
			last = last.AddDays(-1)
		}
		n := 0
		for d := first; !last.Before(d); d = d.AddDays(1) {
			if n++; n > maxEventDays {
				return nil, fmt.Errorf("%s spans more than %d days", what, maxEventDays)
			}
			if !seen[d.String()] {
				seen[d.String()] = true
				out = append(out, model.CalendarDay{Date: d.String(), Name: name})
			}
		}
		if len(out) > MaxDays {
			return nil, fmt.Errorf("ics: more than %d dates", MaxDays)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("ics: no VEVENT with a DTSTART")
	}
	return out, nil
}
