package schedule

import (
	"fmt"
	"time"
)

// What a schedule with a calendar does with a fire due on a day that is not
// a business day.
const (
	OnHolidaySkip = "skip"                  // drop it (the default)
	OnHolidayNext = "next_business_day"     // fire on the next business day instead
	OnHolidayPrev = "previous_business_day" // fire on the business day before instead
)

// ValidOnHoliday reports whether p names a policy ("" is the default, skip).
func ValidOnHoliday(p string) bool {
	return p == "" || p == OnHolidaySkip || p == OnHolidayNext || p == OnHolidayPrev
}

// Day is a calendar date with no zone: a holiday is a date wherever the
// schedule reading it runs.
type Day struct {
	Year  int
	Month time.Month
	Day   int
}

// ParseDay reads YYYY-MM-DD (or YYYYMMDD) and refuses dates that do not
// exist (2026-02-30).
func ParseDay(s string) (Day, error) {
	layout := "2006-01-02"
	if len(s) == 8 {
		layout = "20060102"
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return Day{}, fmt.Errorf("date %q is not a date such as 2026-10-01", s)
	}
	return DayOf(t), nil
}

// DayOf is the date t shows in its own location.
func DayOf(t time.Time) Day {
	y, m, d := t.Date()
	return Day{y, m, d}
}

func (d Day) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// utc is d's midnight in UTC, for day arithmetic without daylight saving.
func (d Day) utc() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// AddDays is the date n days after d (before for negative n).
func (d Day) AddDays(n int) Day { return DayOf(d.utc().AddDate(0, 0, n)) }

// Before reports whether d is an earlier date than e.
func (d Day) Before(e Day) bool { return d.utc().Before(e.utc()) }

// Weekday is the day of the week d falls on.
func (d Day) Weekday() time.Weekday { return d.utc().Weekday() }

// Calendar says which dates are business days: every date but the weekend
// days and the holidays, plus the extra working days (make-up workdays
// that fall on a weekend). It is read only once built.
type Calendar struct {
	weekend  [7]bool
	holidays map[Day]bool
	workdays map[Day]bool
}

// NewCalendar builds a calendar; a nil weekend means Saturday and Sunday.
// A date that is both a holiday and a working day is the caller's error to
// refuse (CheckDays); here the working day wins.
func NewCalendar(weekend []time.Weekday, holidays, workdays []Day) *Calendar {
	c := &Calendar{holidays: make(map[Day]bool, len(holidays)), workdays: make(map[Day]bool, len(workdays))}
	if weekend == nil {
		weekend = []time.Weekday{time.Saturday, time.Sunday}
	}
	for _, w := range weekend {
		c.weekend[w%7] = true
	}
	for _, d := range holidays {
		c.holidays[d] = true
	}
	for _, d := range workdays {
		c.workdays[d] = true
	}
	return c
}

// Weekdays is the calendar of Monday to Friday with no holidays: what
// business-day arithmetic counts when a schedule names no calendar.
var Weekdays = NewCalendar(nil, nil, nil)

// IsBusinessDay reports whether d is a business day.
func (c *Calendar) IsBusinessDay(d Day) bool {
	if c.workdays[d] {
		return true
	}
	return !c.weekend[d.Weekday()] && !c.holidays[d]
}

// maxRun bounds how far a walk looks for a business day: a calendar of
// only holidays has none, and must not hang whoever asks.
const maxRun = 3660

// AddBusinessDays is the business day n business days after d (before for
// negative n); n == 0 is d itself when it is a business day, else the
// business day before it. ok is false when the calendar has none within
// ten years.
func (c *Calendar) AddBusinessDays(d Day, n int) (Day, bool) {
	if n == 0 {
		if c.IsBusinessDay(d) {
			return d, true
		}
		n = -1
	}
	step := 1
	if n < 0 {
		step, n = -1, -n
	}
	for i := 0; n > 0; i++ {
		if i > maxRun*max(n, 1) {
			return Day{}, false
		}
		d = d.AddDays(step)
		if c.IsBusinessDay(d) {
			n--
		}
	}
	return d, true
}

// BusinessDate is the business date of a run that fires on date d: the
// business day before d (a nightly batch is for the day before, and on a
// Monday that is Friday's business). Without a calendar the business date
// is simply the day before (BELUGA_BIZ_DATE's convention).
func BusinessDate(c *Calendar, d Day) Day {
	if c == nil {
		return d.AddDays(-1)
	}
	if p, ok := c.AddBusinessDays(d, -1); ok {
		return p
	}
	return d.AddDays(-1)
}

// calendared is what WithCalendar adds to a Cron.
type calendared struct {
	cal    *Calendar
	policy string
}

// WithCalendar is c whose fires honour cal: a fire due on a day that is
// not a business day is dropped (skip) or moved to the next or previous
// business day at the same wall-clock time. A moved fire never adds a
// second fire to a day: it is dropped when its business day has fires of
// its own, and moved fires landing on the same wall-clock time of one day
// are one fire. The moved stream is a pure function of the cron, zone,
// calendar and policy, so any master computes the same fire times. Only a
// cron with fields takes a calendar (Wall).
func (c *Cron) WithCalendar(cal *Calendar, policy string) *Cron {
	out := *c
	if policy == "" {
		policy = OnHolidaySkip
	}
	out.cal = &calendared{cal: cal, policy: policy}
	return &out
}

// Wall reports whether c's fields are read on a wall clock (false for
// @every, which counts elapsed time and cannot follow a calendar).
func (c *Cron) Wall() bool { return c.wall }

// calNext is Next under a calendar: the first adjusted fire strictly after
// t. It walks the raw fires from the first day whose fires can land after
// t (the day after the last business day before t's date: a fire on a
// non-business day moved forward lands on the next business day) and
// keeps the earliest adjusted time after t; the walk stops once a raw
// fire's business day starts after the best found, since adjusted times
// only grow with that day.
func (c *Cron) calNext(t time.Time) time.Time {
	cal, policy := c.cal.cal, c.cal.policy
	tday := DayOf(t.In(c.loc))
	start, ok := cal.AddBusinessDays(tday, -1)
	if !ok {
		return time.Time{}
	}
	start = start.AddDays(1)
	own := map[Day]bool{} // business day -> it has raw fires of its own
	hasOwn := func(d Day) bool {
		v, ok := own[d]
		if !ok {
			f := c.rawNext(c.dayStart(d).Add(-time.Nanosecond))
			v = !f.IsZero() && f.Before(c.dayStart(d.AddDays(1)))
			own[d] = v
		}
		return v
	}
	var best time.Time
	jumped := map[Day]bool{}
	limit := tday.AddDays(maxRun) // a calendar under which the cron never fires ends here
	r, w := c.rawNextWall(c.dayStart(start).Add(-time.Nanosecond))
	for n := 0; !r.IsZero() && n < maxScan; n++ {
		rday := DayOf(w) // the date the cron asked for, even if a jump moved it
		if limit.Before(rday) {
			break
		}
		if cal.IsBusinessDay(rday) {
			if !best.IsZero() && c.dayStart(rday).After(best) {
				break
			}
			if r.After(t) {
				if best.IsZero() || r.Before(best) {
					best = r
				}
				break // own fires ascend, and every later raw fire lands on this day or after
			}
			r, w = c.rawNextWall(t) // the first own fire after t; earlier days were done
			continue
		}
		next := c.dayStart(rday.AddDays(1)).Add(-time.Nanosecond) // the rest of a dropped day
		var target Day
		switch policy {
		case OnHolidayNext:
			target, ok = cal.AddBusinessDays(rday, 1)
		case OnHolidayPrev:
			target, ok = cal.AddBusinessDays(rday, -1)
		default:
			ok = false
		}
		if !ok {
			if policy == OnHolidaySkip && !best.IsZero() && c.dayStart(rday).After(best) {
				break
			}
			r, w = c.rawNextWall(next)
			continue
		}
		if !best.IsZero() && c.dayStart(target).After(best) {
			break
		}
		if hasOwn(target) { // merged into the day's own fires
			r, w = c.rawNextWall(next)
			continue
		}
		if target == tday && !jumped[rday] {
			// Fires of rday at wall times well before t's land before t on
			// t's day: start near t's wall time (2 h early covers a clock
			// change) rather than walk a whole day of a frequent cron.
			jumped[rday] = true
			lt := t.In(c.loc)
			if to := time.Date(rday.Year, rday.Month, rday.Day, lt.Hour()-2, lt.Minute(), lt.Second(), 0, c.loc); to.After(r) {
				r, w = c.rawNextWall(to.Add(-time.Nanosecond))
				continue
			}
		}
		if m := c.onDay(target, w); m.After(t) && (best.IsZero() || m.Before(best)) {
			best = m
			r, w = c.rawNextWall(next) // later fires of this day land later on target
			continue
		}
		r, w = c.rawNextWall(r)
	}
	return best
}

// dayStart is the first instant of d in c's zone.
func (c *Cron) dayStart(d Day) time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, c.loc)
}

// onDay is the wall-clock time of wall (written as UTC) on date d in c's
// zone; a wall time that d's clocks jump over is taken right after the
// jump, as Next does.
func (c *Cron) onDay(d Day, wall time.Time) time.Time {
	w := time.Date(d.Year, d.Month, d.Day, wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
	n := time.Date(d.Year, d.Month, d.Day, wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), c.loc)
	if got := wallClock(n.In(c.loc)); got.Before(w) {
		n = n.Add(w.Sub(got))
	}
	return n.UTC()
}
