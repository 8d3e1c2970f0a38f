package dataset

import (
	"strings"
	"testing"
)

func TestNormalizePartition(t *testing.T) {
	for _, c := range []struct {
		in, key string
		g       Grain
		bad     string
	}{
		{in: "2026-12-07", key: "2026-12-07", g: Daily},
		{in: "20261207", key: "2026-12-07", g: Daily},
		{in: "2026-12-07T13", key: "2026-12-07T13", g: Hourly},
		{in: "2026120713", key: "2026-12-07T13", g: Hourly},
		{in: "2026-02-30", bad: "use a day"},
		{in: "2026-12-07T24", bad: "use a day"},
		{in: "", bad: "use a day"},
		{in: "yesterday", bad: `partition "yesterday"`},
	} {
		key, g, err := NormalizePartition(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%q: %v, want an error with %q", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || key != c.key || g != c.g {
			t.Errorf("%q: %q %q %v, want %q %q", c.in, key, g, err, c.key, c.g)
		}
	}
}

func TestParseInputsAndRefs(t *testing.T) {
	for _, c := range []struct{ in, bad string }{
		{"orders@daily", ""}, {"warehouse.orders@hourly", ""},
		{"orders", "write dataset@grain"}, {"orders@weekly", `use hourly or daily`},
		{"1orders@daily", "starting with a letter"}, {"or ders@daily", "dataset name"},
	} {
		_, err := ParseInput(c.in)
		if (c.bad == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.bad) {
			t.Errorf("ParseInput(%q): %v, want %q", c.in, err, c.bad)
		}
	}
	refs, err := ParseRefs("a@20261207, b.c@2026-12-07T01,")
	if err != nil || len(refs) != 2 || refs[0].String() != "a@2026-12-07" || refs[1].String() != "b.c@2026-12-07T01" {
		t.Fatalf("ParseRefs: %v %v", refs, err)
	}
	if _, err := ParseRefs("a@x"); err == nil {
		t.Fatal("a bad partition parsed")
	}
	for _, c := range []struct{ in, bad string }{
		{"warehouse.orders@${bizdate}", ""}, {"o@2026-12-07", ""}, {"o@", "write dataset@partition"},
		{"o@2026-99-01", "use a day"}, {"@x", "dataset name"},
	} {
		err := CheckProduces(c.in)
		if (c.bad == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.bad) {
			t.Errorf("CheckProduces(%q): %v, want %q", c.in, err, c.bad)
		}
	}
}

func TestRunPartitions(t *testing.T) {
	hourly, daily := Input{"e", Hourly}, Input{"o", Daily}
	if g := RunGrain([]Input{hourly}, ""); g != Hourly {
		t.Errorf("hourly alone: %s", g)
	}
	if g := RunGrain([]Input{hourly, daily}, ""); g != Daily {
		t.Errorf("hourly and daily: %s", g)
	}
	if g := RunGrain([]Input{hourly}, Daily); g != Daily {
		t.Errorf("named daily: %s", g)
	}
	for _, c := range []struct {
		key  string
		g    Grain
		want string
		ok   bool
	}{
		{"2026-12-07T13", Daily, "2026-12-07", true},
		{"2026-12-07T13", Hourly, "2026-12-07T13", true},
		{"2026-12-07", Daily, "2026-12-07", true},
		{"2026-12-07", Hourly, "", false},
	} {
		if got, ok := RunPartition(c.key, c.g); got != c.want || ok != c.ok {
			t.Errorf("RunPartition(%s, %s) = %q %v", c.key, c.g, got, ok)
		}
	}
	need := Needed(hourly, "2026-12-07")
	if len(need) != 24 || need[0] != "2026-12-07T00" || need[23] != "2026-12-07T23" {
		t.Errorf("hours of a day: %v", need)
	}
	if need := Needed(daily, "2026-12-07"); len(need) != 1 || need[0] != "2026-12-07" {
		t.Errorf("a daily input of a daily run: %v", need)
	}
	ps := RunParams("2026-12-07T05")
	if ps["bizdate"] != "20261207" || ps["bizhour"] != "05" || ps["partition"] != "2026-12-07T05" {
		t.Errorf("hourly run params: %v", ps)
	}
	if ps := RunParams("2026-12-07"); ps["bizdate"] != "20261207" || ps["bizhour"] != "" {
		t.Errorf("daily run params: %v", ps)
	}
}
