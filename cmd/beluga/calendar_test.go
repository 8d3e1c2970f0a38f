package main

import (
	"strings"
	"testing"
)

func TestCLICalendar(t *testing.T) {
	e := newEnv(t)
	yml := e.file("cn.yaml", `description: China exchange days
weekend: [sat, sun]
holidays:
  - {date: 2030-10-01, name: National Day}
  - {date: 2030-10-02}
workdays:
  - {date: 2030-10-12, name: make-up}
`)
	e.want(0, []string{"calendar", "set", "cn", "-f", yml}, "calendar cn set (2 holidays, 1 workdays, weekend sat,sun)")
	e.want(0, []string{"calendar", "show", "cn"}, "China exchange days", "2030-10-01", "National Day", "2030-10-12", "workday")
	e.want(0, []string{"calendar", "import", "cn", e.file("h.ics", cnICSFile), "--weekend", "none"}, "calendar cn imported (7 holidays, 1 workdays, weekend none)")
	e.want(0, []string{"calendar", "import", "cn", e.file("w.csv", "date,name\n2030-10-12,make-up\n2030-09-29\n"), "--workdays"}, "(7 holidays, 2 workdays")
	e.want(0, []string{"calendar", "list"}, "cn", "none", "7", "2")

	// Bad input: a clear error, and the calendar stays as it was.
	e.want(2, []string{"calendar", "import", "cn", e.file("h.txt", "x")}, "--format")
	e.want(2, []string{"calendar", "import", "cn", e.file("bad.csv", "2030-02-30\n")}, `csv line 1: date "2030-02-30"`)
	e.want(2, []string{"calendar", "import", "cn", e.file("bad.ics", "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n")}, "no VEVENT")
	e.want(2, []string{"calendar", "set", "cn", "-f", e.file("typo.yaml", "holidayz: []\n")}, "holidayz")
	e.want(2, []string{"calendar", "set", "cn", "--holiday", "2030-13-01"}, `date "2030-13-01"`)
	e.want(2, []string{"calendar", "set", "cn", "--weekend", "sat,funday"}, "funday")
	e.want(2, []string{"calendar", "set", "cn", "-f", yml, "--holiday", "2030-01-01"}, "not both")
	e.want(0, []string{"calendar", "show", "cn"}, "2030-10-07", "2030-09-29")

	// A project's own, from flags.
	e.want(0, []string{"project", "create", "p"})
	e.want(0, []string{"calendar", "set", "ops", "-p", "p", "--holiday", "2030-12-25=Xmas", "--workday", "2030-12-28", "--weekend", "fri,sat"},
		"calendar p/ops set (1 holidays, 1 workdays, weekend fri,sat)")
	e.want(0, []string{"calendar", "list", "-p", "p"}, "p/ops")
	// --weekend none is no weekend, not the default one (the body says []).
	e.want(0, []string{"calendar", "set", "allweek", "-p", "p", "--holiday", "2030-12-25", "--weekend", "none"},
		"calendar p/allweek set (1 holidays, 0 workdays, weekend none)")

	// A schedule on it; the calendar is then not deleted.
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl.yaml", etl)})
	e.want(2, []string{"schedule", "set", "nightly_etl", "-p", "p", "--cron", "0 2 * * *", "--calendar", "nope"}, `calendar "nope" does not exist`)
	e.want(2, []string{"schedule", "set", "nightly_etl", "-p", "p", "--cron", "0 2 * * *", "--calendar", "ops", "--on-holiday", "never"}, "on_holiday")
	e.want(0, []string{"schedule", "set", "nightly_etl", "-p", "p", "--cron", "0 2 * * *", "--calendar", "ops", "--on-holiday", "next_business_day"}, "created")
	e.want(0, []string{"schedule", "show", "nightly_etl", "-p", "p"}, "calendar", "ops (on holiday: next_business_day)")
	e.want(1, []string{"calendar", "delete", "ops", "-p", "p"}, "p/nightly_etl")
	e.want(0, []string{"schedule", "delete", "nightly_etl", "-p", "p"})
	e.want(0, []string{"calendar", "delete", "ops", "-p", "p"}, "calendar p/ops deleted")
	if out := e.want(0, []string{"calendar", "list", "-p", "p"}); strings.Contains(out, "ops") {
		t.Fatalf("deleted calendar listed:\n%s", out)
	}
}

const cnICSFile = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" +
	"BEGIN:VEVENT\r\nUID:1\r\nSUMMARY:National Day\r\nDTSTART;VALUE=DATE:20301001\r\nDTEND;VALUE=DATE:20301008\r\nEND:VEVENT\r\n" +
	"END:VCALENDAR\r\n"
