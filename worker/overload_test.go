package worker

import (
	"strings"
	"testing"
)

func TestOverloadDecision(t *testing.T) {
	for _, c := range []struct {
		name        string
		limits      overloadLimits
		was         bool
		cpu, memory float64
		want        bool
		why         string
	}{
		{"off by default", overloadLimits{}, false, 100, 100, false, ""},
		{"off stays off even if it was on", overloadLimits{}, true, 100, 100, false, ""},
		{"below the CPU limit", overloadLimits{cpu: 90}, false, 89.9, 100, false, ""},
		{"at the CPU limit", overloadLimits{cpu: 90}, false, 90, 0, true, "CPU 90% >= max 90%"},
		{"memory limit", overloadLimits{memory: 80}, false, 100, 85, true, "memory 85% >= max 80%"},
		{"either limit trips", overloadLimits{cpu: 90, memory: 80}, false, 10, 80, true, "memory"},
		{"stays overloaded inside the band", overloadLimits{cpu: 90}, true, 85, 0, true, "not yet below 80%"},
		{"stays overloaded at the band's edge", overloadLimits{cpu: 90}, true, 80, 0, true, "not yet below 80%"},
		{"leaves below limit - 10", overloadLimits{cpu: 90}, true, 79.9, 0, false, ""},
		{"not entered inside the band", overloadLimits{cpu: 90}, false, 85, 0, false, ""},
		{"leaves only when every measure is low", overloadLimits{cpu: 90, memory: 80}, true, 50, 75, true, "memory 75%"},
		{"both low", overloadLimits{cpu: 90, memory: 80}, true, 50, 60, false, ""},
		{"a small limit has a band of half of it", overloadLimits{cpu: 6}, true, 3, 0, true, "not yet below 3%"},
		{"a small limit can be left", overloadLimits{cpu: 6}, true, 2.9, 0, false, ""},
	} {
		got, why := c.limits.decide(c.was, c.cpu, c.memory)
		if got != c.want || !strings.Contains(why, c.why) || (c.why == "" && why != "") {
			t.Errorf("%s: decide(%v, %v, %v) = %v %q, want %v %q", c.name, c.was, c.cpu, c.memory, got, why, c.want, c.why)
		}
	}
}

// TestOverloadDoesNotFlap feeds a CPU hovering around its limit heartbeat
// after heartbeat: the state changes twice, not at every crossing.
func TestOverloadDoesNotFlap(t *testing.T) {
	l := overloadLimits{cpu: 90}
	var was bool
	var changes []int
	for i, cpu := range []float64{50, 91, 89, 92, 85, 90, 81, 79, 88, 89, 90} {
		now, _ := l.decide(was, cpu, 0)
		if now != was {
			changes = append(changes, i)
		}
		was = now
	}
	if len(changes) != 3 || changes[0] != 1 || changes[1] != 7 || changes[2] != 10 {
		t.Fatalf("state changed at heartbeats %v, want [1 7 10] (enter at 91, leave at 79, enter at 90)", changes)
	}
}
