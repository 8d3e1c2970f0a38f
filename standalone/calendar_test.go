package standalone_test

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// TestCalendarSchedules: the real master fires schedules on a business
// calendar. Its clock is put five days ahead (the test knob the soak uses),
// so the days between are missed fires it catches up under catchup all,
// as adjusted by the calendar: the holiday's fire is skipped, or moved to
// the next or the previous business day, each once. A run's business date
// and $[bizday(...)] follow the calendar.
func TestCalendarSchedules(t *testing.T) {
	now := time.Now().UTC()
	d0 := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	day := func(n int) time.Time { return d0.AddDate(0, 0, n) }
	ymd := func(n int) string { return day(n).Format("2006-01-02") }
	at := func(n int) time.Time { return day(n).Add(12 * time.Hour) }

	// The master's clock reads day 5, 06:00; the API's is the real one.
	offFile := filepath.Join(t.TempDir(), "clock-offset")
	if err := os.WriteFile(offFile, []byte(day(5).Add(6*time.Hour).Sub(now).String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(master.ClockOffsetFileEnv, offFile)
	e := start(t, "")

	// No weekend (so the test reads the same any day of the week) and a
	// holiday on day 2.
	e.do("PUT", "/api/v1/calendars/ops", fmt.Sprintf(`{"weekend":[],"holidays":[{"date":%q,"name":"holiday"}]}`, ymd(2)), http.StatusCreated, nil)
	window := fmt.Sprintf(`"start_time":%q,"end_time":%q,"catchup":"all","calendar":"ops"`,
		day(1).Format(time.RFC3339), day(4).Add(23*time.Hour).Format(time.RFC3339))
	sparse := fmt.Sprintf("0 12 %d,%d * *", day(2).Day(), day(4).Day()) // no fire of its own on days 1 and 3
	for _, wf := range []struct{ name, cron, policy string }{
		{"daily_skip", "0 12 * * *", "skip"},
		{"sparse_next", sparse, "next_business_day"},
		{"sparse_prev", sparse, "previous_business_day"},
	} {
		e.apply(fmt.Sprintf(`name: %s
params: {prev: "$[bizday(yyyyMMdd,-1)]"}
tasks:
  - {name: show, command: "echo biz=${BELUGA_BIZ_DATE} prev=${prev}"}
`, wf.name))
		// An unknown calendar or policy is refused, and writes nothing.
		e.do("PUT", "/api/v1/projects/demo/workflows/"+wf.name+"/schedule", `{"cron":"0 12 * * *","calendar":"nope"}`, http.StatusBadRequest, nil)
		e.do("PUT", "/api/v1/projects/demo/workflows/"+wf.name+"/schedule", `{"cron":"0 12 * * *","calendar":"ops","on_holiday":"later"}`, http.StatusBadRequest, nil)
		e.do("PUT", "/api/v1/projects/demo/workflows/"+wf.name+"/schedule",
			fmt.Sprintf(`{"cron":%q,"on_holiday":%q,%s}`, wf.cron, wf.policy, window), http.StatusCreated, nil)
	}

	want := map[string][]time.Time{
		"daily_skip":  {at(1), at(3), at(4)}, // day 2 skipped
		"sparse_next": {at(3), at(4)},        // day 2's fire on day 3
		"sparse_prev": {at(1), at(4)},        // day 2's fire on day 1
	}
	ctx := context.Background()
	for wf, times := range want {
		var got []time.Time
		wait.UntilErr(t, 60*time.Second, wf+"'s window to go through", func() error {
			insts, _, err := e.store().InstanceList(ctx, store.InstanceFilter{Project: "demo", Workflow: wf})
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for _, in := range insts {
				got = append(got, in.ScheduleTime.UTC())
			}
			slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
			sc, err := e.store().ScheduleGet(ctx, "demo", wf)
			if err != nil {
				t.Fatal(err)
			}
			if sc.NextFireTime == nil && len(got) >= len(times) { // the window is through
				return nil
			}
			return fmt.Errorf("fired %v so far, next %v; want %v", got, sc.NextFireTime, times)
		})
		if !slices.EqualFunc(got, times, time.Time.Equal) {
			t.Fatalf("%s fired for %v, want %v", wf, got, times)
		}
	}

	// The run moved to day 3 is for business date day 1 (day 2 is off),
	// and the business day before that is day 0.
	insts, _, err := e.store().InstanceList(ctx, store.InstanceFilter{Project: "demo", Workflow: "sparse_next"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		if !in.ScheduleTime.Equal(at(3)) {
			continue
		}
		iv := e.wait(in.ID, 60*time.Second)
		if iv.State != "succeeded" {
			t.Fatalf("run for day 3: %+v", iv)
		}
		var log string
		e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("show").ID), "", http.StatusOK, &log)
		if want := fmt.Sprintf("biz=%s prev=%s", day(1).Format("20060102"), day(0).Format("20060102")); !strings.Contains(log, want) {
			t.Fatalf("log %q lacks %q", log, want)
		}
	}

	// The calendar is in use: not deleted, and the refusal names a schedule.
	var refusal string
	e.do("DELETE", "/api/v1/calendars/ops", "", http.StatusConflict, &refusal)
	if !strings.Contains(refusal, "demo/daily_skip") {
		t.Fatalf("refusal %s", refusal)
	}
}
