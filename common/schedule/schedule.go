// Package schedule reads cron expressions and decides which fire times of a
// schedule are due. It holds no state: the next fire time lives in the
// schedule row, so any master can pick up where another stopped.
package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Catchup policies: what to do with fire times that passed while no master
// was firing (older than the grace period when seen).
const (
	CatchupLatest = "latest" // run the newest missed time only (default)
	CatchupAll    = "all"    // run every missed time, oldest first, up to MaxCatchup
	CatchupNone   = "none"   // run none of them
)

// Grace is how late a fire time may be seen and still count as on time.
// A leader failover takes about a session timeout, well inside it.
const Grace = time.Minute

// MaxCatchup bounds the missed times one pass fires under CatchupAll, so a
// long outage cannot flood the queue; the older ones are skipped and said so.
const MaxCatchup = 100

// maxScan bounds the fire times one pass walks (a per-second cron after a
// long outage); a pass cut short skips what it saw and the next one goes on.
const maxScan = 100_000

// parser accepts five fields, an optional leading seconds field, and the
// @yearly/@daily/@every descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cron is a parsed expression bound to a time zone.
type Cron struct {
	expr  string
	loc   *time.Location
	sched cron.Schedule
	wall  bool        // fields read on loc's wall clock; false for @every (elapsed time)
	cal   *calendared // nil: every day fires (WithCalendar)
}

// Parse reads expr in the zone tz (an IANA name; "" means UTC).
func Parse(expr, tz string) (*Cron, error) {
	e := strings.TrimSpace(expr)
	if e == "" {
		return nil, fmt.Errorf("cron is empty")
	}
	if strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ=") {
		return nil, fmt.Errorf("cron %q: give the zone in timezone, not in the expression", expr)
	}
	loc, err := Location(tz)
	if err != nil {
		return nil, err
	}
	if err := checkEvery(e); err != nil {
		return nil, err
	}
	s, err := parser.Parse(e)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %v", expr, err)
	}
	c := &Cron{expr: e, loc: loc, sched: s}
	if sp, ok := s.(*cron.SpecSchedule); ok {
		// Evaluated on wall-clock values written as UTC (no daylight saving
		// there), then placed in loc by Next.
		sp.Location, c.wall = time.UTC, true
	}
	if c.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("cron %q never fires", expr)
	}
	return c, nil
}

// checkEvery refuses an @every interval the parser would silently change:
// below one second (rounded up to 1 s) or with a fraction of a second
// (truncated).
func checkEvery(e string) error {
	rest, ok := strings.CutPrefix(e, "@every ")
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(rest)
	switch {
	case err != nil:
		return fmt.Errorf("cron %q: @every needs a duration such as 30s or 1h: %q is not one", e, rest)
	case d < time.Second:
		return fmt.Errorf("cron %q: @every %s is below the 1s minimum", e, rest)
	case d%time.Second != 0:
		return fmt.Errorf("cron %q: @every %s is not a whole number of seconds", e, rest)
	}
	return nil
}

// Location resolves a zone name; "" is UTC. "Local" is refused: it would
// mean each master's own zone.
func Location(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if tz == "Local" {
		return nil, fmt.Errorf("timezone %q depends on the host; name an IANA zone such as Europe/Berlin", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("timezone %q is not a known IANA zone", tz)
	}
	return loc, nil
}

// Next is the first fire time strictly after t, in UTC; zero when none.
//
// The fields of a cron are read on the zone's wall clock, and each wall
// time fires once: when clocks go back, a wall time that happens twice
// fires at its first instant only (a nightly batch for a date runs once,
// and its $[...] params would be the same both times); when clocks jump
// forward over a wall time, it fires right after the jump, at the wall
// time plus the jump, instead of being skipped for the day. @every counts
// elapsed time. Under a calendar (WithCalendar) the times are the
// adjusted ones.
func (c *Cron) Next(t time.Time) time.Time {
	if c.cal != nil && c.wall {
		return c.calNext(t)
	}
	return c.rawNext(t)
}

// rawNext is Next without the calendar.
func (c *Cron) rawNext(t time.Time) time.Time {
	n, _ := c.rawNextWall(t)
	return n
}

// rawNextWall is rawNext and the wall-clock time the cron asked for,
// written as UTC (it differs from the fire's when clocks jumped over it);
// for @every it is the fire's wall clock.
func (c *Cron) rawNextWall(t time.Time) (time.Time, time.Time) {
	if !c.wall {
		n := c.sched.Next(t)
		if n.IsZero() {
			return n, n
		}
		return n.UTC(), wallClock(n.In(c.loc))
	}
	w := wallClock(t.In(c.loc))
	for range 1000 { // each step is a later wall time; one of the next two is after t
		if w = c.sched.Next(w); w.IsZero() {
			return w, w
		}
		n := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, c.loc)
		if got := wallClock(n.In(c.loc)); got.Before(w) { // w is in a gap: move past the jump
			n = n.Add(w.Sub(got))
		}
		if n.After(t) {
			return n.UTC(), w
		}
	}
	return time.Time{}, time.Time{}
}

// wallClock is t's wall-clock reading written as a UTC time.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// Window limits a schedule to [Start, End]; nil ends are open.
type Window struct {
	Start, End *time.Time
}

// First is the first fire time at or after from within w; zero when none.
// For @every it is from itself (to the second): the interval counts from
// there.
func (c *Cron) First(from time.Time, w Window) time.Time {
	if w.Start != nil && w.Start.After(from) {
		from = *w.Start
	}
	var n time.Time
	if c.wall {
		n = c.Next(from.Add(-time.Nanosecond))
	} else {
		n = from.Add(time.Second - time.Nanosecond).Truncate(time.Second).UTC()
	}
	if n.IsZero() || (w.End != nil && n.After(*w.End)) {
		return time.Time{}
	}
	return n
}

// MaxMissed bounds the missed times one pass lists (Plan.Missed), the
// newest kept: the ledger of fires records at most that many missed fires
// of a schedule per outage.
const MaxMissed = 1000

// Plan is what one pass over a schedule does.
type Plan struct {
	Fire    []time.Time // schedule times to start, oldest first
	Skipped int         // missed times dropped by the policy
	// Missed are the dropped times, oldest first: the newest MaxMissed
	// of them.
	Missed []time.Time
	Next   time.Time // the next fire time after this pass; zero when none is left
}

// keepNewest appends ts to out and keeps its newest MaxMissed.
func keepNewest(out []time.Time, ts ...time.Time) []time.Time {
	out = append(out, ts...)
	if n := len(out) - MaxMissed; n > 0 {
		out = append(out[:0], out[n:]...)
	}
	return out
}

// Due walks the fire times from next (the schedule's next unfired time) up
// to now and applies the catchup policy to those older than Grace.
func (c *Cron) Due(next, now time.Time, w Window, policy string) Plan {
	var on, late, dropped []time.Time
	skipped := 0
	t := next
	for n := 0; !t.IsZero() && !t.After(now); n++ {
		if w.End != nil && t.After(*w.End) {
			t = time.Time{}
			break
		}
		if n == maxScan { // only late times so far: drop them, go on next pass
			return Plan{Skipped: n, Next: t, Missed: keepNewest(dropped, late...)}
		}
		if now.Sub(t) > Grace {
			late = append(late, t)
			if len(late) > MaxCatchup { // keep the newest MaxCatchup
				dropped = keepNewest(dropped, late[0])
				late = late[1:]
				skipped++
			}
		} else {
			on = append(on, t)
		}
		t = c.Next(t)
	}
	if !t.IsZero() && w.End != nil && t.After(*w.End) {
		t = time.Time{}
	}
	p := Plan{Next: t, Skipped: skipped, Missed: dropped}
	switch {
	case policy == CatchupAll:
		p.Fire = append(late, on...)
	case policy == CatchupNone || len(on) > 0:
		p.Fire, p.Skipped, p.Missed = on, skipped+len(late), keepNewest(dropped, late...)
	case len(late) > 0: // latest, nothing on time: the newest missed time
		p.Fire, p.Skipped = late[len(late)-1:], skipped+len(late)-1
		p.Missed = keepNewest(dropped, late[:len(late)-1]...)
	}
	return p
}

// Upcoming lists up to n fire times after now within w.
func (c *Cron) Upcoming(now time.Time, w Window, n int) []time.Time {
	var out []time.Time
	for t := c.First(now, w); !t.IsZero() && len(out) < n; t = c.Next(t) {
		if w.End != nil && t.After(*w.End) {
			break
		}
		out = append(out, t)
	}
	return out
}

// ValidCatchup reports whether p names a policy ("" is the default).
func ValidCatchup(p string) bool {
	return p == "" || p == CatchupLatest || p == CatchupAll || p == CatchupNone
}

// Between lists the fire times in [start, end], oldest first, at most limit
// of them; more says there were more.
func (c *Cron) Between(start, end time.Time, limit int) (times []time.Time, more bool) {
	for t := c.First(start, Window{End: &end}); !t.IsZero() && !t.After(end); t = c.Next(t) {
		if len(times) == limit {
			return times, true
		}
		times = append(times, t)
	}
	return times, false
}
