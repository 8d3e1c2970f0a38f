package standalone_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestBackfillCalendarPolicies: a backfill of a schedule on a business
// calendar, over Christmas week 2025 (Wednesday 24 to Friday 26 off, then
// the weekend), runs the times the schedule's own fires would under each
// on_holiday policy, through the real master, and records the cron times
// the calendar refused.
func TestBackfillCalendarPolicies(t *testing.T) {
	e := start(t, "")
	e.do("PUT", "/api/v1/calendars/xmas", `{"holidays":[{"date":"2025-12-24"},{"date":"2025-12-25","name":"Christmas"},{"date":"2025-12-26"}]}`,
		http.StatusCreated, nil)
	// Wednesdays and Fridays: the 24th and 26th are off, the 31st is not.
	const cron = "0 9 * * 3,5"
	for _, tc := range []struct {
		policy, fire, refused string
	}{
		{"skip", "2025-12-31T09:00:00Z", "2025-12-24T09:00:00Z dropped, 2025-12-26T09:00:00Z dropped"},
		// Both move to Monday the 29th: one fire there.
		{"next_business_day", "2025-12-29T09:00:00Z, 2025-12-31T09:00:00Z",
			"2025-12-24T09:00:00Z -> 2025-12-29T09:00:00Z, 2025-12-26T09:00:00Z -> 2025-12-29T09:00:00Z"},
		// Both move back to Tuesday the 23rd.
		{"previous_business_day", "2025-12-23T09:00:00Z, 2025-12-31T09:00:00Z",
			"2025-12-24T09:00:00Z -> 2025-12-23T09:00:00Z, 2025-12-26T09:00:00Z -> 2025-12-23T09:00:00Z"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			wf := "bf_" + strings.TrimSuffix(tc.policy, "_business_day")
			e.apply(fmt.Sprintf("name: %s\ntasks:\n  - {name: a, command: \"true\"}\n", wf))
			// A paused schedule: only the backfill runs.
			e.do("PUT", "/api/v1/projects/demo/workflows/"+wf+"/schedule",
				fmt.Sprintf(`{"cron":%q,"calendar":"xmas","on_holiday":%q,"enabled":false}`, cron, tc.policy), http.StatusCreated, nil)
			body := `{"start":"2025-12-22T00:00:00Z","end":"2025-12-31T23:59:59Z","dry_run":true}`
			type refused struct {
				Time    string `json:"time"`
				Outcome string `json:"outcome"`
				MovedTo string `json:"moved_to"`
			}
			var pv struct {
				Calendar  string    `json:"calendar"`
				OnHoliday string    `json:"on_holiday"`
				Times     []string  `json:"times"`
				Refused   []refused `json:"refused"`
			}
			e.do("POST", "/api/v1/projects/demo/workflows/"+wf+"/backfill/preview", body, http.StatusOK, &pv)
			// The API writes milliseconds; the cases are in seconds.
			norm := func(v string) string {
				at, err := time.Parse(time.RFC3339, v)
				if err != nil {
					t.Fatalf("time %q: %v", v, err)
				}
				return at.UTC().Format(time.RFC3339)
			}
			show := func(rs []refused) string {
				var out []string
				for _, r := range rs {
					if r.Outcome != "refused_calendar" {
						t.Fatalf("outcome %q", r.Outcome)
					}
					if r.MovedTo == "" {
						out = append(out, norm(r.Time)+" dropped")
					} else {
						out = append(out, norm(r.Time)+" -> "+norm(r.MovedTo))
					}
				}
				return strings.Join(out, ", ")
			}
			var times []string
			for _, v := range pv.Times {
				times = append(times, norm(v))
			}
			if pv.Calendar != "xmas" || pv.OnHoliday != tc.policy || strings.Join(times, ", ") != tc.fire || show(pv.Refused) != tc.refused {
				t.Fatalf("preview %+v", pv)
			}

			var bf struct {
				ID      int64     `json:"id"`
				State   string    `json:"state"`
				Refused []refused `json:"refused"`
			}
			e.do("POST", "/api/v1/projects/demo/workflows/"+wf+"/backfill", body, http.StatusCreated, &bf)
			wait.UntilErr(t, 90*time.Second, "the backfill to be done", func() error {
				e.do("GET", fmt.Sprintf("/api/v1/backfills/%d", bf.ID), "", http.StatusOK, &bf)
				if bf.State != "done" {
					return fmt.Errorf("backfill %s", bf.State)
				}
				return nil
			})
			if show(bf.Refused) != tc.refused {
				t.Fatalf("stored refusals %s, want %s", show(bf.Refused), tc.refused)
			}
			var runs struct {
				Items []struct {
					ScheduleTime string `json:"schedule_time"`
					State        string `json:"state"`
				}
			}
			e.do("GET", fmt.Sprintf("/api/v1/instances?backfill=%d", bf.ID), "", http.StatusOK, &runs)
			var got []string
			for _, r := range runs.Items {
				at, err := time.Parse(time.RFC3339, r.ScheduleTime)
				if err != nil || r.State != "succeeded" {
					t.Fatalf("run %+v (%v)", r, err)
				}
				got = append(got, at.UTC().Format(time.RFC3339))
			}
			slices.Sort(got)
			if strings.Join(got, ", ") != tc.fire {
				t.Fatalf("runs for %v, want %s", got, tc.fire)
			}
		})
	}
}

// TestWebUICalendarPreviews: the backfill form's preview and the schedule
// form's next fires name the schedule's calendar and the cron times it
// moved, typed and clicked as a person does.
func TestWebUICalendarPreviews(t *testing.T) {
	e := start(t, "")
	e.apply("name: weekly\ntasks:\n  - {name: a, command: \"true\"}\n")
	// A Wednesday off soon (for the schedule's next fires) and Christmas
	// week 2025 (for the backfill).
	wed := time.Now().UTC().AddDate(0, 0, 2)
	for wed.Weekday() != time.Wednesday {
		wed = wed.AddDate(0, 0, 1)
	}
	e.do("PUT", "/api/v1/projects/demo/calendars/xmas", fmt.Sprintf(`{"holidays":[{"date":"2025-12-24"},{"date":"2025-12-26"},{"date":%q}]}`,
		wed.Format("2006-01-02")), http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/demo/workflows/weekly/schedule",
		`{"cron":"0 9 * * 3,5","calendar":"xmas","on_holiday":"next_business_day","enabled":false}`, http.StatusCreated, nil)
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 120*time.Second, func(s *session) {
		s.open("#/workflows/demo/weekly")
		// The panels above it have loaded (the page no longer moves): the
		// form knows the schedule, and the schedule panel shows it.
		s.until("the backfill form, told of the schedule", `document.querySelector('#backfill-cron')?.placeholder.includes("the schedule's") &&
			!!document.querySelector('#schedule-edit')`)
		s.typeDateTime(`#backfill-from`, "2025-12-22T00:00:00")
		s.typeDateTime(`#backfill-to`, "2025-12-31T23:00:00")
		s.click(`#backfill-preview`)
		// The 24th moves to Thursday the 25th, the 26th to Monday the 29th.
		s.until("the preview with the calendar's moves", `(() => {
			const p = document.querySelector('#backfill-preview-list');
			if (!p) return false;
			const moved = [...p.querySelectorAll('li[data-refused]')].map((li) => li.dataset.refused.slice(0, 10) + '>' + li.dataset.moved.slice(0, 10));
			return p.querySelectorAll('ol li').length === 3 && moved.join(' ') === '2025-12-24>2025-12-25 2025-12-26>2025-12-29' &&
				p.querySelector('#backfill-preview-calendar').textContent.includes('calendar xmas: times on days off are moved to the next business day; 2 moved, 0 dropped');
		})()`)

		// Started, its page shows the calendar and the moves it kept.
		s.click(`#backfill-submit`)
		s.until("the backfill page", `/^#\/backfills\/\d+$/.test(location.hash)`)
		s.until("its calendar and refusals", `(() => {
			const c = document.querySelector('#backfill-calendar');
			return !!c && c.textContent.includes('calendar xmas') && c.querySelectorAll('li[data-refused][data-moved^="2025-12-2"]').length === 2 &&
				document.querySelectorAll('table.times tbody tr[data-time]').length === 3;
		})()`)
		s.open("#/workflows/demo/weekly")
		s.until("the schedule panel", `!!document.querySelector('#schedule-edit')`)
		s.click(`#schedule-edit`)
		s.until("the schedule's next fires with the calendar's move", fmt.Sprintf(`(() => {
			const c = document.querySelector('#schedule-preview-calendar');
			const li = c ? [...c.querySelectorAll('li[data-refused]')] : [];
			return li.length === 1 && li[0].dataset.refused.startsWith(%q) && li[0].dataset.moved.startsWith(%q) &&
				c.textContent.includes('calendar xmas');
		})()`, wed.Format("2006-01-02"), wed.AddDate(0, 0, 1).Format("2006-01-02")))
	})
}
