package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

const cnICS = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" +
	"BEGIN:VEVENT\r\nUID:1\r\nSUMMARY:National Day\r\nDTSTART;VALUE=DATE:20301001\r\nDTEND;VALUE=DATE:20301008\r\nEND:VEVENT\r\n" +
	"END:VCALENDAR\r\n"

// TestCalendars: shared and project calendars over REST, imports, who may
// write them, and how schedules name them.
func TestCalendars(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	b.mustProject("q")

	// A shared calendar from JSON; weekend names are read and written back.
	var c Calendar
	r := b.send("PUT", "/api/v1/calendars/cn", `{"description":"China","weekend":["Saturday","sun"],
		"holidays":[{"date":"2030-10-02"},{"date":"20301001","name":"National Day"}],"workdays":[{"date":"2030-10-12","name":"make-up"}]}`)
	r.want(t, http.StatusCreated).json(t, &c)
	if r.header.Get("Location") != "/api/v1/calendars/cn" || c.Project != "" || c.Version != 1 || strings.Join(c.Weekend, ",") != "sat,sun" ||
		len(c.Holidays) != 2 || c.Holidays[0] != (model.CalendarDay{Date: "2030-10-01", Name: "National Day"}) || c.Workdays[0].Date != "2030-10-12" {
		t.Fatalf("created %+v", c)
	}

	// Bad input: each a 400 naming the problem, and nothing changes.
	for _, bad := range []struct {
		ct, path, body, want string
		status               int
	}{
		{"application/json", "/api/v1/calendars/cn", `{"holidays":[{"date":"2026-02-30"}]}`, `date \"2026-02-30\"`, 400},
		{"application/json", "/api/v1/calendars/cn", `{"holidays":[{"date":"2026-10-01"}],"workdays":[{"date":"2026-10-01"}]}`, "both a holiday and a working day", 400},
		{"application/json", "/api/v1/calendars/cn", `{"weekend":["funday"]}`, "funday", 400},
		{"application/json", "/api/v1/calendars/cn", `{"holidays":"2026-10-01"}`, "holidays", 400},
		{"text/calendar", "/api/v1/calendars/cn", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", "no DTSTART", 400},
		{"text/calendar", "/api/v1/calendars/cn", "garbage", "not an iCalendar file", 400},
		{"text/csv", "/api/v1/calendars/cn", "2026-10-01\n2026-13-01\n", "csv line 2", 400},
		{"application/octet-stream", "/api/v1/calendars/cn?format=xml", "x", `format \"xml\"`, 400},
		{"text/plain", "/api/v1/calendars/cn", "2026-10-01\n", "text/plain", 415},
		{"text/plain", "/api/v1/calendars/cn?format=csv", "2026-10-01\n", "text/plain", 415},
		{"text/csv", "/api/v1/calendars/cn?days=sundays", "2026-10-01\n", "days", 400},
		{"application/json", "/api/v1/calendars/bad%20name", `{}`, "not a valid name", 400},
	} {
		got := b.do("PUT", bad.path, bad.ct, strings.NewReader(bad.body))
		if got.status != bad.status || !strings.Contains(string(got.body), bad.want) {
			t.Errorf("PUT %s (%s) %q: %d %s, want %d naming %q", bad.path, bad.ct, bad.body, got.status, got.body, bad.status, bad.want)
		}
	}
	var same Calendar
	b.get("/api/v1/calendars/cn").want(t, http.StatusOK).json(t, &same)
	if same.Version != 1 || len(same.Holidays) != 2 {
		t.Fatalf("a refused PUT changed the calendar: %+v", same)
	}

	// An ICS import replaces the holidays, keeping the weekend and workdays.
	b.do("PUT", "/api/v1/calendars/cn", "text/calendar", strings.NewReader(cnICS)).want(t, http.StatusOK).json(t, &c)
	if c.Version != 2 || len(c.Holidays) != 7 || c.Holidays[6].Date != "2030-10-07" || c.Holidays[0].Name != "National Day" || len(c.Workdays) != 1 {
		t.Fatalf("after ICS import %+v", c)
	}
	// A CSV import into a project's own calendar, with a weekend.
	r = b.do("PUT", "/api/v1/projects/p/calendars/ops?weekend=fri,sat", "text/csv", strings.NewReader("date,name\n2026-12-25,Xmas\n"))
	r.want(t, http.StatusCreated).json(t, &c)
	if c.Project != "p" || strings.Join(c.Weekend, ",") != "fri,sat" || len(c.Holidays) != 1 || c.Holidays[0].Name != "Xmas" ||
		r.header.Get("Location") != "/api/v1/projects/p/calendars/ops" {
		t.Fatalf("project import %+v", c)
	}
	var l List[Calendar]
	b.get("/api/v1/calendars").want(t, http.StatusOK).json(t, &l)
	if len(l.Items) != 1 || l.Items[0].Name != "cn" {
		t.Fatalf("shared list %+v", l)
	}
	b.get("/api/v1/projects/p/calendars").want(t, http.StatusOK).json(t, &l)
	if len(l.Items) != 1 || l.Items[0].Name != "ops" {
		t.Fatalf("p's list %+v", l)
	}
	b.get("/api/v1/projects/nope/calendars/ops").wantError(t, http.StatusNotFound, CodeNotFound)

	// Who may write: a project's editors write its calendars, not shared
	// ones; a viewer only reads.
	ed, viewer := b.tokenOf("ed", model.RoleUser), b.tokenOf("vi", model.RoleUser)
	b.send("PUT", "/api/v1/projects/p/grants/ed", `{"level":"edit"}`).want(t, http.StatusOK)
	b.send("PUT", "/api/v1/projects/p/grants/vi", `{"level":"view"}`).want(t, http.StatusOK)
	b.as(ed, "PUT", "/api/v1/projects/p/calendars/mine", `{}`).want(t, http.StatusCreated)
	b.as(ed, "PUT", "/api/v1/calendars/mine", `{}`).wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ed, "PUT", "/api/v1/projects/q/calendars/mine", `{}`).want(t, http.StatusNotFound)
	b.as(viewer, "GET", "/api/v1/projects/p/calendars/mine", "").want(t, http.StatusOK)
	b.as(viewer, "GET", "/api/v1/calendars/cn", "").want(t, http.StatusOK)
	b.as(viewer, "PUT", "/api/v1/projects/p/calendars/mine", `{}`).wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(viewer, "DELETE", "/api/v1/projects/p/calendars/mine", "").wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ed, "DELETE", "/api/v1/projects/p/calendars/mine", "").want(t, http.StatusNoContent)

	// Schedules: an unknown calendar or policy is a 400 that writes nothing.
	for _, bad := range []struct{ body, want string }{
		{`{"cron":"0 2 * * *","calendar":"nope"}`, `calendar \"nope\" does not exist`},
		{`{"cron":"0 2 * * *","calendar":"cn","on_holiday":"tomorrow"}`, `on_holiday \"tomorrow\" is not valid`},
		{`{"cron":"0 2 * * *","on_holiday":"skip"}`, "on_holiday needs a calendar"},
		{`{"cron":"@every 1h","calendar":"cn"}`, "@every"},
	} {
		got := b.send("PUT", schedPath, bad.body)
		if got.status != http.StatusBadRequest || !strings.Contains(string(got.body), bad.want) {
			t.Errorf("schedule %s: %d %s, want 400 naming %q", bad.body, got.status, got.body, bad.want)
		}
	}
	b.get(schedPath).wantError(t, http.StatusNotFound, CodeNotFound)

	// 02:00 in Shanghai on the shared cn, moved to the next business day:
	// the holiday week's fires merge into the 8th's own. (The window starts
	// before the holidays, years ahead of any clock running this.)
	var sc Schedule
	b.send("PUT", schedPath, `{"cron":"0 2 * * *","timezone":"Asia/Shanghai","calendar":"cn","on_holiday":"next_business_day",
		"start_time":"2030-09-29T00:00:00Z"}`).want(t, http.StatusCreated).json(t, &sc)
	if sc.Calendar != "cn" || sc.OnHoliday != "next_business_day" {
		t.Fatalf("schedule %+v", sc)
	}
	var got []string
	sh, _ := time.LoadLocation("Asia/Shanghai")
	for _, u := range sc.Upcoming {
		got = append(got, u.In(sh).Format("01-02"))
	}
	if strings.Join(got, " ") != "09-30 10-08 10-09 10-10 10-11" {
		t.Fatalf("upcoming on cn: %v", got)
	}
	// A calendar edit moves the stored next fire time, later for a new
	// holiday and back earlier when a day is a business day again.
	nextOf := func() string {
		var cur Schedule
		b.get(schedPath).want(t, http.StatusOK).json(t, &cur)
		return cur.NextFireTime.In(sh).Format("01-02")
	}
	if n := nextOf(); n != "09-30" {
		t.Fatalf("next %s", n)
	}
	b.do("PUT", "/api/v1/calendars/cn", "text/csv", strings.NewReader("2030-09-30\n")).want(t, http.StatusOK)
	if n := nextOf(); n != "10-01" {
		t.Fatalf("next after 09-30 became a holiday: %s", n)
	}
	b.do("PUT", "/api/v1/calendars/cn", "text/csv", strings.NewReader("2030-10-01\n")).want(t, http.StatusOK)
	if n := nextOf(); n != "09-30" {
		t.Fatalf("next after 09-30 became a business day again: %s", n)
	}
	b.do("PUT", "/api/v1/calendars/cn", "text/calendar", strings.NewReader(cnICS)).want(t, http.StatusOK)

	// The preview shows the same.
	var pv SchedulePreview
	b.send("POST", "/api/v1/schedule-preview", `{"cron":"0 2 * * *","timezone":"Asia/Shanghai","calendar":"cn","on_holiday":"skip","count":3,
		"from":"2030-09-29T00:00:00Z"}`).want(t, http.StatusOK).json(t, &pv)
	got = got[:0]
	for _, u := range pv.Times {
		got = append(got, u.In(sh).Format("01-02"))
	}
	if strings.Join(got, " ") != "09-30 10-08 10-09" {
		t.Fatalf("preview on cn: %v", got)
	}
	// It names the calendar and the cron's times it dropped on the way.
	got = got[:0]
	for _, r := range pv.Refused {
		if r.Outcome != "refused_calendar" || r.MovedTo != nil {
			t.Fatalf("refused %+v", r)
		}
		got = append(got, r.Time.In(sh).Format("01-02"))
	}
	if pv.Calendar != "cn" || pv.OnHoliday != "skip" || strings.Join(got, " ") != "10-01 10-02 10-03 10-04 10-05 10-06 10-07" {
		t.Fatalf("preview on cn: calendar %q %q, refused %v", pv.Calendar, pv.OnHoliday, got)
	}
	b.send("POST", "/api/v1/schedule-preview", `{"cron":"0 2 * * *","calendar":"ops"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	b.as(viewer, "POST", "/api/v1/schedule-preview", `{"cron":"0 2 * * *","calendar":"ops","project":"q"}`).want(t, http.StatusNotFound)

	// A calendar in use is not deleted; the 409 names the schedule.
	d := b.send("DELETE", "/api/v1/calendars/cn", "")
	if e := d.wantError(t, http.StatusConflict, CodeConflict); !strings.Contains(e.Message, "p/nightly_etl") {
		t.Fatalf("delete in use: %+v", e)
	}
	b.send("DELETE", schedPath, "").want(t, http.StatusNoContent)
	b.send("DELETE", "/api/v1/calendars/cn", "").want(t, http.StatusNoContent)
	b.get("/api/v1/calendars/cn").wantError(t, http.StatusNotFound, CodeNotFound)
}
