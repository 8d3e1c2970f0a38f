package spec

import (
	"strings"
	"testing"
	"time"
)

func TestAlertsAndDeadlineSpec(t *testing.T) {
	ok := "name: w\nalerts: {on: [failure, retry], channels: [ops]}\ndeadline: \"06:30\"\ntasks: [{name: a, command: \"true\"}]\n"
	w, err := Parse([]byte(ok))
	if err != nil || !w.Alerts.Wants(AlertFailure) || w.Alerts.Wants(AlertSuccess) || w.Deadline != "06:30" {
		t.Fatalf("parse: %+v %v", w, err)
	}
	for _, c := range []struct{ spec, want string }{
		{"alerts: {on: [explode], channels: [ops]}", `alerts.on "explode"`},
		{"alerts: {on: [], channels: [ops]}", "alerts.on is empty"},
		{"alerts: {on: [success]}", "alerts.channels"},
		{"alerts: {on: [success], channels: [\"a b\"]}", `alerts.channels "a b"`},
		{"alerts: {on: [success], channels: [ops], colour: red}", "colour"},
		{"deadline: \"25:00\"", "wall time"},
		{"deadline: soon", "positive duration"},
		{"deadline: -2h", "positive duration"},
	} {
		_, err := Parse([]byte("name: w\n" + c.spec + "\ntasks: [{name: a, command: \"true\"}]\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %q", c.spec, err, c.want)
		}
	}
}

func TestDeadlineAt(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	base := time.Date(2026, 3, 7, 23, 0, 0, 0, ny) // the night before DST begins
	for _, c := range []struct {
		spec string
		want time.Time
	}{
		{"2h", base.Add(2 * time.Hour)},
		{"06:00", time.Date(2026, 3, 8, 6, 0, 0, 0, ny)},
		{"23:30", time.Date(2026, 3, 7, 23, 30, 0, 0, ny)},
		{"23:00", base},
	} {
		d, _, err := ParseDeadline(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.At(base, ny); !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.spec, got, c.want)
		}
	}
}
