package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// calendarCase is one schedule of TestCalendarScheduleCrashPoints: its
// cron and holiday policy, and what each due time of its window must
// become (day n at 12:00 UTC: fired or refused_calendar).
type calendarCase struct {
	wf, cron, policy string
	fired, refused   []int // days
}

// TestCalendarScheduleCrashPoints: schedules on a business calendar whose
// holidays fall among their due times are fired across a leader killed -9
// at the schedule crash points. The masters' clocks (the test knob
// master.ClockOffsetFileEnv, one file for both) read day 3 18:00 at the
// start, so the first pass catches up days 1 to 3 and master-1 dies inside
// it: before anything is written, or after the runs are written and before
// they start. The standby takes over; then the clock steps to day 7 and it
// fires the rest of the window (days 1 to 6). Under skip,
// next_business_day and previous_business_day every cron time has exactly
// one ledger row (refused_calendar on a holiday, fired otherwise), each
// moved fire one fired row at its new time (or none of its own when it
// merges into that day's fire), and each fired time one run that ran once
// (the workers' marker file), with nothing stuck.
func TestCalendarScheduleCrashPoints(t *testing.T) {
	for _, point := range []string{failpoint.BeforeFireSchedule, failpoint.AfterFireSchedule} {
		t.Run(point, func(t *testing.T) { calendarCrash(t, point) })
	}
}

func calendarCrash(t *testing.T, point string) {
	now := time.Now().UTC()
	d0 := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	day := func(n int) time.Time { return d0.AddDate(0, 0, n) }
	at := func(n int) time.Time { return day(n).Add(12 * time.Hour) }
	// The masters' clock reads `to`; the API's is the real one.
	offFile := filepath.Join(t.TempDir(), "clock-offset")
	setClock := func(to time.Time) {
		t.Helper()
		if err := os.WriteFile(offFile, []byte(time.Until(to).String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setClock(day(3).Add(18 * time.Hour))
	clock := master.ClockOffsetFileEnv + "=" + offFile
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout,
		Env: map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + point, clock}, "master-2": {clock}}})
	marks := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The weekend is day 0's weekday only (days 0 and 7, outside the
	// window), so the test reads the same any day of the week; days 2 and
	// 5 are holidays. (An empty weekend cannot be sent by the Go client:
	// CalendarRequest.Weekend is omitempty, and nil means Saturday and
	// Sunday.)
	weekend := []string{strings.ToLower(day(0).Weekday().String()[:3])}
	if _, err := c.Client.PutCalendar(ctx, c.Project, "ops", api.CalendarRequest{Weekend: weekend,
		Holidays: []model.CalendarDay{{Date: day(2).Format(time.DateOnly)}, {Date: day(5).Format(time.DateOnly), Name: "holiday"}}}); err != nil {
		t.Fatal(err)
	}
	// The sparse crons have no fire of their own on the days their
	// holidays' fires move to, but for merge, whose day 5 moves onto day
	// 6's own fire: one run there. first_off's first cron time is a
	// holiday, moved before the schedule ever fired (the API stored the
	// moved time as its next fire): its row is there too.
	days := func(ns ...int) string {
		var s []string
		for _, n := range ns {
			s = append(s, fmt.Sprint(day(n).Day()))
		}
		return "0 12 " + strings.Join(s, ",") + " * *"
	}
	cases := []calendarCase{
		{wf: "daily_skip", cron: "0 12 * * *", policy: "skip", fired: []int{1, 3, 4, 6}, refused: []int{2, 5}},
		{wf: "sparse_next", cron: days(1, 2, 4, 5), policy: "next_business_day", fired: []int{1, 3, 4, 6}, refused: []int{2, 5}},
		{wf: "sparse_prev", cron: days(2, 5, 6), policy: "previous_business_day", fired: []int{1, 4, 6}, refused: []int{2, 5}},
		{wf: "merge_next", cron: days(1, 2, 5, 6), policy: "next_business_day", fired: []int{1, 3, 6}, refused: []int{2, 5}},
		{wf: "first_off", cron: days(2, 4, 5), policy: "next_business_day", fired: []int{3, 4, 6}, refused: []int{2, 5}},
	}
	on := true
	ids := map[string]int64{}
	for _, cs := range cases {
		c.Apply(t, spec.Workflow{Name: cs.wf, Tasks: []spec.Task{task(marks, "t", "")}})
		sc, _, err := c.Client.PutSchedule(ctx, c.Project, cs.wf, api.ScheduleRequest{Cron: cs.cron, Catchup: "all", Enabled: &on,
			StartTime: day(1).Format(time.RFC3339), EndTime: day(6).Add(23 * time.Hour).Format(time.RFC3339),
			Calendar: "ops", OnHoliday: cs.policy})
		if err != nil {
			t.Fatal(err)
		}
		ids[cs.wf] = sc.ID
	}

	crashed := c.Masters[0]
	if err := crashed.Wait(failoverWithin); err == nil || !strings.Contains(crashed.Log(), "failpoint "+point+": killing") {
		t.Fatalf("%s did not die at %s (%v):\n%s", crashed.Name, point, err, crashed.LogTail(30))
	}
	lead := c.WaitLeader(t, failoverWithin, crashed)
	runs := func(wf string) []model.WorkflowInstance {
		insts, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Workflow: wf, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return insts
	}
	// Days 1 to 3 fired by the new leader (or started by it, written by
	// the dead one) before the clock moves on.
	c.Eventually(t, finishWithin, "days 1 to 3 fired after the crash", func() bool {
		for _, cs := range cases {
			want := 0
			for _, d := range cs.fired {
				if d <= 3 {
					want++
				}
			}
			if len(runs(cs.wf)) < want {
				return false
			}
		}
		return true
	})
	t.Logf("%s leads after %s died at %s; stepping its clock to day 7", lead.Name, crashed.Name, point)
	setClock(day(7).Add(6 * time.Hour))
	c.Eventually(t, 2*finishWithin, "every window through", func() bool {
		for _, cs := range cases {
			sc, err := c.Store.ScheduleGet(ctx, c.Project, cs.wf)
			if err != nil {
				t.Fatal(err)
			}
			if sc.NextFireTime != nil || len(runs(cs.wf)) < len(cs.fired) {
				return false
			}
		}
		return true
	})

	for _, cs := range cases {
		all := runs(cs.wf)
		byRun := map[int64]time.Time{}
		var times []time.Time
		for _, in := range all {
			if in = c.WaitFinished(t, in.ID, finishWithin); in.State != model.WorkflowSucceeded || in.ScheduleTime == nil {
				t.Fatalf("%s: run %d ended %s (schedule time %v)", cs.wf, in.ID, in.State, in.ScheduleTime)
			}
			c.AssertRanOnce(t, in.ID, marks)
			times = append(times, in.ScheduleTime.UTC())
			byRun[in.ID] = in.ScheduleTime.UTC()
		}
		slices.SortFunc(times, time.Time.Compare)
		var want []time.Time
		for _, d := range cs.fired {
			want = append(want, at(d))
		}
		if !slices.EqualFunc(times, want, time.Time.Equal) {
			t.Fatalf("%s (%s) ran for %v, want %v", cs.wf, cs.policy, times, want)
		}
		// The ledger: one row per due time, the holidays' cron times
		// refused, each fired time (a moved one at its new time) naming
		// its one run.
		outcome := map[time.Time]model.FireOutcome{}
		for _, d := range cs.fired {
			outcome[at(d)] = model.FireFired
		}
		for _, d := range cs.refused {
			outcome[at(d)] = model.FireRefused
		}
		rows := ledger(t, c, ids[cs.wf])
		if len(rows) != len(outcome) {
			t.Fatalf("%s: %d ledger rows for %d due times: %+v", cs.wf, len(rows), len(outcome), rows)
		}
		seen := map[time.Time]bool{}
		for _, f := range rows {
			due := f.DueTime.UTC()
			if o, ok := outcome[due]; !ok || o != f.Outcome || seen[due] {
				t.Fatalf("%s: ledger row %+v; want one %q row at %v", cs.wf, f, o, due)
			}
			seen[due] = true
			switch {
			case f.Outcome == model.FireFired && (f.InstanceID == nil || !byRun[*f.InstanceID].Equal(due)):
				t.Fatalf("%s: fired row %+v names no run of its time", cs.wf, f)
			case f.Outcome == model.FireRefused && f.InstanceID != nil:
				t.Fatalf("%s: refused row %+v names a run", cs.wf, f)
			}
		}
		t.Logf("%s (%s): runs %v, refused %v", cs.wf, cs.policy, cs.fired, cs.refused)
	}
	c.AssertNoStuckRows(t)
}
