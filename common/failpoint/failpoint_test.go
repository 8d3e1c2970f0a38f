package failpoint

import (
	"testing"
	"time"
)

func TestParsePoint(t *testing.T) {
	for _, tc := range []struct {
		in    string
		name  string
		at    int64
		act   action
		sleep time.Duration
		bad   bool
	}{
		{in: "before-send-dispatch", name: "before-send-dispatch", at: 1, act: kill},
		{in: "before-send-dispatch@3", name: "before-send-dispatch", at: 3, act: kill},
		{in: "before-begin-term:kill", name: "before-begin-term", at: 1, act: kill},
		{in: "before-begin-term@2:stop", name: "before-begin-term", at: 2, act: stop},
		{in: "before-worker-watch:sleep=3s", name: "before-worker-watch", at: 1, act: sleep, sleep: 3 * time.Second},
		{in: "x@0", bad: true},
		{in: "x@y", bad: true},
		{in: "@2", bad: true},
		{in: "x:pause", bad: true},
		{in: "x:sleep=", bad: true},
		{in: "x:sleep=-1s", bad: true},
	} {
		p, err := parsePoint(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: parsed as %+v, want an error", tc.in, p)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if p.name != tc.name || p.at != tc.at || p.act != tc.act || p.sleep != tc.sleep {
			t.Errorf("%q: got name %q at %d act %d sleep %v, want %q %d %d %v",
				tc.in, p.name, p.at, p.act, p.sleep, tc.name, tc.at, tc.act, tc.sleep)
		}
	}
	if p, err := parsePoint(""); p != nil || err != nil {
		t.Errorf("empty: got %+v, %v; want nothing armed", p, err)
	}
}
