package master_test

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// TestScheduleCalendarChecksStoredNext: a schedule's stored next fire time
// fell on a day made a holiday after it was stored. The master does not
// fire it (under skip, nor under next_business_day, where it merges into
// the next day's own fire) and moves the schedule on to the first
// business-day fire; a schedule without a calendar fires as before.
func TestScheduleCalendarChecksStoredNext(t *testing.T) {
	t.Parallel()
	d := time.Now().UTC().Truncate(24 * time.Hour)
	noon := d.Add(12 * time.Hour)
	c := newCell(t, master.Config{Clock: fixedClock{noon.Add(30 * time.Minute)}})
	c.addWorker(4)
	if _, _, err := c.st.CalendarPut(c.ctx, model.Calendar{Name: "ops", Weekend: []time.Weekday{},
		Holidays: []model.CalendarDay{{Date: d.Format("2006-01-02")}}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, wf := range []struct{ name, cal, policy string }{
		{"skip", "ops", schedule.OnHolidaySkip}, {"next", "ops", schedule.OnHolidayNext}, {"plain", "", ""},
	} {
		c.apply("name: wf_" + wf.name + "\ntasks:\n  - {name: t, command: \"true\"}\n")
		c.putSchedule(model.Schedule{Workflow: "wf_" + wf.name, Cron: "0 12 * * *", Catchup: schedule.CatchupAll,
			Calendar: wf.cal, OnHoliday: wf.policy}, noon)
	}
	for _, wf := range []string{"skip", "next", "plain"} {
		wait.Until(t, 30*time.Second, wf+" moved on", func() bool {
			sc, err := c.st.ScheduleGet(c.ctx, "p", "wf_"+wf)
			return err == nil && sc.NextFireTime != nil && sc.NextFireTime.Equal(noon.Add(24*time.Hour))
		})
	}
	if n := len(c.scheduled("wf_plain")); n != 1 {
		t.Fatalf("the schedule without a calendar fired %d runs, want 1", n)
	}
	for _, wf := range []string{"skip", "next"} {
		if insts := c.scheduled("wf_" + wf); len(insts) != 0 {
			t.Fatalf("%s fired on the holiday: %+v", wf, insts)
		}
	}
	// The ledger says so: the holiday's time refused, the plain one fired.
	for wf, want := range map[string]model.FireOutcome{"skip": model.FireRefused, "next": model.FireRefused, "plain": model.FireFired} {
		sc, _ := c.st.ScheduleGet(c.ctx, "p", "wf_"+wf)
		fs, _, err := c.st.ScheduleFires(c.ctx, "p", sc.ID, store.FireFilter{Limit: 10})
		if err != nil || len(fs) != 1 || !fs[0].DueTime.Equal(noon) || fs[0].Outcome != want {
			t.Fatalf("%s: ledger %+v %v, want %s at %v", wf, fs, err, want, noon)
		}
	}
}
