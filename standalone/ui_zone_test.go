package standalone_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestWebUITimeZone: in a browser whose zone is New York, times show in
// New York with the zone named; a person picks Europe/Paris in the header
// (typed at the keyboard) and every page then shows Paris times: the
// instance list, a 02:00 Asia/Shanghai schedule's next fire (with its
// Shanghai wall time beside it) and its calendar of fires, the backfill
// form's range as sent, and Overview's days.
func TestWebUITimeZone(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	e.apply("name: zoned\ntasks:\n  - {name: a, command: \"true\"}\n")
	e.do("PUT", "/api/v1/projects/demo/workflows/zoned/schedule", `{"cron":"0 2 * * *","timezone":"Asia/Shanghai"}`, http.StatusCreated, nil)
	id := e.run("zoned", nil)
	e.wait(id, time.Minute)
	var inst struct {
		StartTime time.Time `json:"start_time"`
		CreatedAt time.Time `json:"created_at"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &inst)

	ny, _ := time.LoadLocation("America/New_York")
	paris, _ := time.LoadLocation("Europe/Paris")
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	const wall = "2006-01-02 15:04:05"
	now := time.Now().In(shanghai)
	next := time.Date(now.Year(), now.Month(), now.Day(), 2, 0, 0, 0, shanghai)
	if !next.After(now) {
		next = next.AddDate(0, 0, 1)
	}

	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 90*time.Second, func(s *session) {
		s.run("the browser in New York", emulation.SetTimezoneOverride("America/New_York"), chromedp.Reload())
		s.open("#/instances")
		row := fmt.Sprintf(`#main tr[data-id="%d"] td:nth-child(6) time`, id)
		s.until("the zone setting at the browser's zone", `document.querySelector('#zone-setting')?.value === 'America/New_York'`)
		want := inst.StartTime.In(ny).Format(wall) + " " + inst.StartTime.In(ny).Format("MST")
		s.until("the start in New York, named "+want, fmt.Sprintf(`document.querySelector(%s)?.textContent === %s`, js(row), js(want)))

		// The zone chosen from the keyboard: focus the select, type its
		// first letters, Enter.
		s.choose(`#zone-setting`, "Europe/Paris")
		s.until("the choice kept", `localStorage.getItem('beluga.zone') === 'Europe/Paris' && document.querySelector('#zone-setting').value === 'Europe/Paris'`)
		want = inst.StartTime.In(paris).Format(wall)
		s.until("the start in Paris "+want, fmt.Sprintf(`(() => { const el = document.querySelector(%s);
			return !!el && el.textContent.startsWith(%s + ' ') && el.title.includes('Europe/Paris'); })()`, js(row), js(want)))

		// The Gantt's axis is in the zone chosen, not the browser's.
		s.open(fmt.Sprintf("#/instances/%d", id))
		s.click(`#tab-gantt`)
		s.until("the Gantt's axis in Paris", `document.querySelector('.gantt svg .axis .zone')?.textContent === 'Europe/Paris'`)

		// The schedule: its next fire in Paris, and 02:00 in Shanghai beside it.
		s.open("#/workflows/demo/zoned")
		fire := next.In(paris).Format(wall)
		other := fmt.Sprintf(" (%s Asia/Shanghai)", next.Format(wall))
		s.until("the next fire "+fire+other, fmt.Sprintf(`(() => {
			const t = document.querySelector('#schedule-panel .next-fire time'), o = document.querySelector('#schedule-panel .next-fire .otherzone');
			return !!t && !!o && t.textContent.startsWith(%s + ' ') && o.textContent === %s; })()`, js(fire), js(other)))
		// The form's calendar marks the fire days as Paris days (the day
		// before in Shanghai's terms: 02:00 there is 19:00 or 20:00 here).
		s.click(`#schedule-edit`)
		s.until("the calendar of fires", fmt.Sprintf(`!!document.querySelector('#schedule-calendar td.fire[data-day=%q]')`, next.In(paris).Format("2006-01-02")))
		var cells int
		s.eval(`document.querySelectorAll('#schedule-calendar td.fire').length`, &cells)
		if cells < 28 {
			t.Fatalf("the calendar marks %d days; a daily cron's 50 fires over two months mark 28 or more", cells)
		}

		// The backfill range is read in Paris: typed segment by segment.
		s.typeDateTime(`#backfill-from`, "2026-12-07T02:00:00")
		s.until("the range sent with Paris' offset", `document.querySelector('#backfill-sent')?.textContent.startsWith('Sent as 2026-12-07T02:00:00+01:00 ')`)

		// Overview's days are Paris days.
		s.open("#/overview/demo")
		day := inst.CreatedAt.In(paris).Format("2006-01-02")
		s.until("Overview's day in Paris", fmt.Sprintf(`(() => {
			const th = document.querySelector('table.overview thead th'), td = document.querySelector('table.overview tbody td');
			return th?.textContent === 'Day (Europe/Paris)' && td?.textContent === %s; })()`, js(day)))
	})
}
