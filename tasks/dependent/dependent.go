// Package dependent is the dependent task type: the task waits until runs
// of other workflows (or one task of them) in a date window have succeeded.
// It runs in the master (master/dependent.go); this package holds its spec
// and the pure decisions: the date windows and the verdict over what the
// master saw.
package dependent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Dep is one awaited dependency.
type Dep struct {
	Project  string `json:"project,omitempty"` // "": the task's own
	Workflow string `json:"workflow"`
	Task     string `json:"task,omitempty"` // "": the whole run must succeed
	Date     string `json:"date"`
}

// Spec is the dependent type's fields.
type Spec struct {
	WaitFor       []Dep  `json:"wait_for"`
	Relation      string `json:"relation,omitempty"`       // all (default) or any
	OnFailed      string `json:"on_failed,omitempty"`      // fail (default) or wait
	CheckInterval string `json:"check_interval,omitempty"` // fallback poll, default 1m
}

// Dates are the date windows, relative to the run's base time.
var Dates = []string{"today", "yesterday", "current_hour", "last_hour", "this_week", "last_week", "this_month", "last_month", "last_7_days"}

// DefaultInterval is the fallback poll when check_interval is not given.
const DefaultInterval = time.Minute

// Type is the dependent task type.
var Type = &tasktype.Def{
	Name:      "dependent",
	Summary:   "waits for runs of other workflows",
	Placement: tasktype.Master,
	Spec:      func() tasktype.Spec { return &Spec{} },
	Check:     func(s tasktype.Spec) []string { return check(s.(*Spec)) },
	Refs: func(s tasktype.Spec) []tasktype.Ref {
		var out []tasktype.Ref
		for _, d := range s.(*Spec).WaitFor {
			out = append(out, tasktype.Ref{Project: d.Project, Workflow: d.Workflow})
		}
		return out
	},
	// The master face: the leader's wait service carries the attempt.
	Start: func(ctx context.Context, h tasktype.Host, a tasktype.Attempt) { h.StartWait(ctx, a) },
	Cancel: func(ctx context.Context, h tasktype.Host, a tasktype.Attempt, why tasktype.CancelReason) {
		h.CancelWait(ctx, a, why)
	},
}

func check(s *Spec) []string {
	var out []string
	if len(s.WaitFor) == 0 {
		out = append(out, "wait_for is required: the runs to wait for ({workflow: name, date: today})")
	}
	for i, d := range s.WaitFor {
		if d.Workflow == "" {
			out = append(out, fmt.Sprintf("wait_for[%d]: workflow is required", i))
		}
		if !slices.Contains(Dates, d.Date) {
			out = append(out, fmt.Sprintf("wait_for[%d]: date %q: want one of %s", i, d.Date, strings.Join(Dates, ", ")))
		}
	}
	if s.Relation != "" && s.Relation != "all" && s.Relation != "any" {
		out = append(out, fmt.Sprintf("relation %q: want all or any", s.Relation))
	}
	if s.OnFailed != "" && s.OnFailed != "fail" && s.OnFailed != "wait" {
		out = append(out, fmt.Sprintf("on_failed %q: want fail or wait", s.OnFailed))
	}
	if s.CheckInterval != "" {
		if d, err := time.ParseDuration(s.CheckInterval); err != nil || d < 100*time.Millisecond {
			out = append(out, fmt.Sprintf("check_interval %q: want a duration of at least 100ms (\"30s\", \"1m\")", s.CheckInterval))
		}
	}
	return out
}

// Interval is the spec's fallback poll.
func (s *Spec) Interval() time.Duration {
	if d, err := time.ParseDuration(s.CheckInterval); err == nil && d > 0 {
		return d
	}
	return DefaultInterval
}

// Base is what a run's windows are read from: its schedule time, else its
// start, else its creation, in its zone (UTC when "" or unknown).
func Base(schedule, start *time.Time, created time.Time, zone string) (time.Time, *time.Location) {
	base := created
	if schedule != nil {
		base = *schedule
	} else if start != nil {
		base = *start
	}
	loc := time.UTC
	if zone != "" {
		if z, err := time.LoadLocation(zone); err == nil {
			loc = z
		}
	}
	return base, loc
}

// Window is the half-open interval [from, to) that date names, relative to
// base read in loc: a run counts when its schedule time (a manual run: its
// start) falls in it. Weeks start on Monday.
func Window(date string, base time.Time, loc *time.Location) (from, to time.Time, err error) {
	if loc == nil {
		loc = time.UTC
	}
	t := base.In(loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	hour := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)
	week := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	month := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
	switch date {
	case "today":
		return day, day.AddDate(0, 0, 1), nil
	case "yesterday":
		return day.AddDate(0, 0, -1), day, nil
	case "current_hour":
		return hour, hour.Add(time.Hour), nil
	case "last_hour":
		return hour.Add(-time.Hour), hour, nil
	case "this_week":
		return week, week.AddDate(0, 0, 7), nil
	case "last_week":
		return week.AddDate(0, 0, -7), week, nil
	case "this_month":
		return month, month.AddDate(0, 1, 0), nil
	case "last_month":
		return month.AddDate(0, -1, 0), month, nil
	case "last_7_days":
		return day.AddDate(0, 0, -7), day, nil
	}
	return time.Time{}, time.Time{}, fmt.Errorf("date %q: want one of %s", date, strings.Join(Dates, ", "))
}

// Seen is what the master found for one dependency in its window: counts of
// runs by outcome (of the run, or of its task when Dep.Task is set).
type Seen struct {
	Succeeded int
	Failed    int // ended failed (or the task did, in a finished run)
	Other     int // still running, waiting, or ended otherwise
}

// Status of one dependency or of the whole task.
type Status int

const (
	Waiting Status = iota
	Succeeded
	Failed
)

// Of is one dependency's status: succeeded when any run in the window did;
// failed when none did and one failed and nothing else may yet succeed
// with on_failed fail; else waiting.
func Of(s Seen, onFailed string) Status {
	switch {
	case s.Succeeded > 0:
		return Succeeded
	case s.Failed > 0 && s.Other == 0 && onFailed != "wait":
		return Failed
	}
	return Waiting
}

// Verdict combines the dependencies' statuses by relation (all or any).
func Verdict(relation string, st []Status) Status {
	succ, fail := 0, 0
	for _, s := range st {
		switch s {
		case Succeeded:
			succ++
		case Failed:
			fail++
		}
	}
	if relation == "any" {
		switch {
		case succ > 0:
			return Succeeded
		case fail == len(st):
			return Failed
		}
		return Waiting
	}
	switch {
	case fail > 0:
		return Failed
	case succ == len(st):
		return Succeeded
	}
	return Waiting
}

// Describe names a dependency for messages.
func (d Dep) Describe(ownProject string) string {
	p := d.Project
	if p == "" {
		p = ownProject
	}
	s := p + "/" + d.Workflow
	if d.Task != "" {
		s += " task " + d.Task
	}
	return s + " (" + d.Date + ")"
}
