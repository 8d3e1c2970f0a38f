package schedule

import (
	"slices"
	"time"
)

// Dates is what a cron (with its calendar, if any) makes of a range of
// time: the times that run, and the cron's own times that do not run as
// themselves. A schedule's fires and a backfill of it are decided by the
// same calendared stream, so a backfill honours a calendar as the
// schedule does.
type Dates struct {
	Fire []time.Time // ascending; a moved time at its new time
	// Refused are the cron's own times in the range the calendar did not
	// run as themselves, ascending: what the ledger of fires records as
	// refused_calendar.
	Refused []Refusal
	More    bool // more than limit times fire in the range: Fire holds the first limit
}

// Refusal is a cron time the calendar did not run as itself.
type Refusal struct {
	Time time.Time
	// MovedTo is the time it runs at instead (next or previous business
	// day); zero when it was dropped: skip, or merged into its business
	// day's own fires, or moved out of the range.
	MovedTo time.Time
}

// Dates decides the times of c in [from, to], at most limit fires. With
// no calendar nothing is refused. Refused lists at most limit times, up
// to the last fire listed when More.
func (c *Cron) Dates(from, to time.Time, limit int) Dates {
	var d Dates
	d.Fire, d.More = c.Between(from, to, limit)
	if c.cal == nil || !c.wall {
		return d
	}
	raw := *c
	raw.cal = nil
	end := to
	if d.More && len(d.Fire) > 0 {
		end = d.Fire[len(d.Fire)-1]
	}
	own, _ := raw.Between(from, end, limit+len(d.Fire))
	fired := func(t time.Time) bool {
		_, ok := slices.BinarySearchFunc(d.Fire, t, func(a, b time.Time) int { return a.Compare(b) })
		return ok
	}
	for _, t := range own {
		if len(d.Refused) == limit {
			break
		}
		if fired(t) {
			continue
		}
		r := Refusal{Time: t}
		if m, ok := c.movedTo(t); ok && fired(m) {
			r.MovedTo = m
		}
		d.Refused = append(d.Refused, r)
	}
	return d
}

// movedTo is where the calendar's policy would move the cron time t: the
// same wall-clock time on the next or previous business day; !ok under
// skip, on a business day, when the business day has fires of its own,
// or when the calendar has no business day near.
func (c *Cron) movedTo(t time.Time) (time.Time, bool) {
	cal, policy := c.cal.cal, c.cal.policy
	w := wallClock(t.In(c.loc))
	day := DayOf(w)
	if cal.IsBusinessDay(day) {
		return time.Time{}, false
	}
	var target Day
	ok := false
	switch policy {
	case OnHolidayNext:
		target, ok = cal.AddBusinessDays(day, 1)
	case OnHolidayPrev:
		target, ok = cal.AddBusinessDays(day, -1)
	}
	if !ok {
		return time.Time{}, false
	}
	// A business day with fires of its own takes no moved one (merged).
	if f := c.rawNext(c.dayStart(target).Add(-time.Nanosecond)); !f.IsZero() && f.Before(c.dayStart(target.AddDays(1))) {
		return time.Time{}, false
	}
	return c.onDay(target, w), true
}
