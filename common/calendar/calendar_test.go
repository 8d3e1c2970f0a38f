package calendar

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
)

func dates(ds []model.CalendarDay) string {
	var out []string
	for _, d := range ds {
		s := d.Date
		if d.Name != "" {
			s += " " + d.Name
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func TestParseICS(t *testing.T) {
	ics := strings.ReplaceAll(`BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:1
DTSTAMP:20260101T000000Z
SUMMARY:New Year
DTSTART;VALUE=DATE:20270101
END:VEVENT
BEGIN:VEVENT
UID:2
DTSTAMP:20260101T000000Z
SUMMARY:National Day
DTSTART;VALUE=DATE:20261001
DTEND;VALUE=DATE:20261004
END:VEVENT
BEGIN:VEVENT
UID:3
DTSTAMP:20260101T000000Z
SUMMARY:Half day
DTSTART;TZID=Asia/Shanghai:20261231T090000
DTEND;TZID=Asia/Shanghai:20261231T120000
END:VEVENT
BEGIN:VEVENT
UID:4
DTSTAMP:20260101T000000Z
SUMMARY:Overlap
DTSTART;VALUE=DATE:20261003
END:VEVENT
END:VCALENDAR
`, "\n", "\r\n")
	got, err := ParseICS(strings.NewReader(ics))
	if err != nil {
		t.Fatal(err)
	}
	want := "2027-01-01 New Year, 2026-10-01 National Day, 2026-10-02 National Day, 2026-10-03 National Day, 2026-12-31 Half day"
	if dates(got) != want {
		t.Fatalf("ics days\n got %s\nwant %s", dates(got), want)
	}
	for _, bad := range []struct{ in, want string }{
		{"not a calendar", "not an iCalendar file"},
		{"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n", "no VEVENT"},
		{"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", "no DTSTART"},
		{"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20261301\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", "DTSTART \"20261301\""},
		{"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20261005\r\nDTEND;VALUE=DATE:20261001\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", "before DTSTART"},
		{"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:Xmas\r\nDTSTART;VALUE=DATE:20261225\r\nRRULE:FREQ=YEARLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", `"Xmas"): recurring events`},
		{"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20260101\r\nDTEND;VALUE=DATE:20280101\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", "spans more than 366 days"},
	} {
		if _, err := ParseICS(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseICS(%q) = %v, want %q", bad.in, err, bad.want)
		}
	}
}

func TestParseCSV(t *testing.T) {
	got, err := ParseCSV(strings.NewReader("\ufeffdate,name\n2026-10-01,National Day\n\n20261002\n 2026-10-03 , \"Golden Week, day 3\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "2026-10-01 National Day, 2026-10-02, 2026-10-03 Golden Week, day 3"; dates(got) != want {
		t.Fatalf("csv days\n got %s\nwant %s", dates(got), want)
	}
	for _, bad := range []struct{ in, want string }{
		{"", "no dates"},
		{"date,name\n", "no dates"},
		{"2026-10-01\n2026-02-30\n", "csv line 2: date \"2026-02-30\""},
		{"2026-10-01,a,b\n", "csv line 1: 3 columns"},
		{"2026-10-01,\"open\n", "csv:"},
		{"yesterday\n", "csv line 1"},
	} {
		if _, err := ParseCSV(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseCSV(%q) = %v, want %q", bad.in, err, bad.want)
		}
	}
}

func TestCheck(t *testing.T) {
	c := model.Calendar{Holidays: []model.CalendarDay{{Date: "20261002"}, {Date: "2026-10-01", Name: "National Day"}},
		Workdays: []model.CalendarDay{{Date: "2026-10-10"}}}
	if bad := Check(&c); len(bad) != 0 || c.Holidays[0].Date != "2026-10-01" || c.Holidays[1].Date != "2026-10-02" {
		t.Fatalf("good calendar: %v %+v", bad, c)
	}
	c = model.Calendar{Holidays: []model.CalendarDay{{Date: "2026-10-01"}, {Date: "2026-10-01"}, {Date: "2026-02-29"}, {Date: "1800-01-01"}, {Date: "2026-10-05", Name: "a\x00b"}},
		Workdays: []model.CalendarDay{{Date: "2026-10-05"}}}
	bad := strings.Join(Check(&c), "; ")
	for _, want := range []string{"2026-10-01 is listed twice", `date "2026-02-29"`, "outside 1900-2200", "control characters", "2026-10-05 is both a holiday and a working day"} {
		if !strings.Contains(bad, want) {
			t.Errorf("problems %q do not name %q", bad, want)
		}
	}
	ws, err := ParseWeekend([]string{"Fri", "saturday", "sat"})
	if err != nil || len(ws) != 2 || ws[0] != time.Friday || ws[1] != time.Saturday || strings.Join(WeekendNames(ws), ",") != "fri,sat" {
		t.Fatalf("weekend: %v %v", ws, err)
	}
	for _, w := range []string{"funday", "satu", "", "s"} {
		if _, err := ParseWeekend([]string{w}); err == nil {
			t.Errorf("weekend %q taken", w)
		}
	}
	cal := Business(model.Calendar{Weekend: []time.Weekday{time.Friday}, Holidays: []model.CalendarDay{{Date: "2026-10-05"}}, Workdays: []model.CalendarDay{{Date: "2026-10-09"}}})
	for d, want := range map[string]bool{"2026-10-03": true, "2026-10-05": false, "2026-10-09": true, "2026-10-16": false} {
		day, _ := time.Parse("2006-01-02", d)
		if got := cal.IsBusinessDay(scheduleDay(day)); got != want {
			t.Errorf("%s business = %v", d, got)
		}
	}
}

func scheduleDay(t time.Time) schedule.Day { return schedule.DayOf(t) }
