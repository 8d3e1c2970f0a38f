package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// Alert triggers: what makes a workflow's run alert its channels.
const (
	AlertFailure = "failure" // the run failed (or was stopped by its timeout)
	AlertSuccess = "success"
	AlertTimeout = "timeout" // a task or the workflow ran past its timeout (warn)
	AlertRetry   = "retry"   // a task failed and is tried again
)

// AlertTriggers lists the valid values of alerts.on.
var AlertTriggers = []string{AlertFailure, AlertSuccess, AlertTimeout, AlertRetry}

// Alerts says which of a workflow's runs alert, and through which channels
// (alert channels are managed by the API: /api/v1/alert-channels).
type Alerts = model.Alerts

// CheckAlerts validates alerts and deadline settings given outside a spec
// (a schedule's overrides), naming each problem.
func CheckAlerts(a *Alerts, deadline string) []string {
	v := &validator{}
	v.alerts("schedule", a)
	v.deadline("schedule", deadline)
	return v.problems
}

// maxAlertChannels bounds a workflow's channels.
const maxAlertChannels = 16

func (v *validator) alerts(where string, a *Alerts) {
	if a == nil {
		return
	}
	if len(a.On) == 0 {
		v.addf("%s: alerts.on is empty: name at least one of %s", where, strings.Join(AlertTriggers, ", "))
	}
	for _, on := range a.On {
		if !slices.Contains(AlertTriggers, on) {
			v.addf("%s: alerts.on %q: use %s", where, on, strings.Join(AlertTriggers, ", "))
		}
	}
	if len(a.Channels) == 0 || len(a.Channels) > maxAlertChannels {
		v.addf("%s: alerts.channels: name 1 to %d alert channels", where, maxAlertChannels)
	}
	for _, c := range a.Channels {
		if !validName(c) {
			v.addf("%s: alerts.channels %q: %s", where, c, nameRule)
		}
	}
}

// Deadline is when a run must have succeeded by: a wall time of day in the
// run's zone (Clock, e.g. "06:00") or a duration after its schedule time
// (After, e.g. "2h").
type Deadline struct {
	After time.Duration
	Clock time.Duration // time of day from midnight; used when After is 0
}

// ParseDeadline reads "HH:MM" or a Go duration ("2h", "90m"); "" is none.
func ParseDeadline(s string) (Deadline, bool, error) {
	if s == "" {
		return Deadline{}, false, nil
	}
	if h, m, ok := strings.Cut(s, ":"); ok {
		hh, err1 := strconv.Atoi(h)
		mm, err2 := strconv.Atoi(m)
		if err1 != nil || err2 != nil || len(m) != 2 || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
			return Deadline{}, false, fmt.Errorf("deadline %q: a wall time is HH:MM from 00:00 to 23:59", s)
		}
		return Deadline{Clock: time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute}, true, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > 31*24*time.Hour {
		return Deadline{}, false, fmt.Errorf("deadline %q: use a wall time HH:MM or a positive duration of at most 744h, e.g. 2h", s)
	}
	return Deadline{After: d}, true, nil
}

// At is the deadline of a run whose schedule time (else creation) is base,
// in zone loc: base + After, or the first Clock time of day at or after base.
func (d Deadline) At(base time.Time, loc *time.Location) time.Time {
	if d.After > 0 {
		return base.Add(d.After)
	}
	if loc == nil {
		loc = time.UTC
	}
	b := base.In(loc)
	// Wall-clock fields, not midnight plus a duration: a DST change that
	// night must not move 06:00 to 07:00.
	h, m := int(d.Clock/time.Hour), int(d.Clock%time.Hour/time.Minute)
	at := time.Date(b.Year(), b.Month(), b.Day(), h, m, 0, 0, loc)
	if at.Before(b) {
		at = time.Date(b.Year(), b.Month(), b.Day()+1, h, m, 0, 0, loc)
	}
	return at
}

func (v *validator) deadline(where, s string) {
	if _, _, err := ParseDeadline(s); err != nil {
		v.addf("%s: %v", where, err)
	}
}

// InstanceDeadline is when inst must have succeeded by under a deadline
// setting: from its schedule time, else its creation, in its zone. False
// when setting is none (or invalid: settings are checked when written).
func InstanceDeadline(setting string, inst model.WorkflowInstance) (time.Time, bool) {
	d, ok, err := ParseDeadline(setting)
	if err != nil || !ok {
		return time.Time{}, false
	}
	base := inst.CreatedAt
	if inst.ScheduleTime != nil {
		base = *inst.ScheduleTime
	}
	loc := time.UTC
	if inst.Timezone != "" {
		if l, err := time.LoadLocation(inst.Timezone); err == nil {
			loc = l
		}
	}
	return d.At(base, loc), true
}
