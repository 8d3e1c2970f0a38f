package worker

import "fmt"

// overloadHysteresis is how far below its limit a measure must fall for an
// overloaded worker to take tasks again: a host hovering around the limit
// would otherwise flip at every heartbeat.
const overloadHysteresis = 10.0

// overloadLimits are a worker's overload thresholds in percent; 0 turns a
// measure off. With both off (the default) a worker is never overloaded:
// its slots bound its load.
type overloadLimits struct{ cpu, memory float64 }

// decide says whether a worker that was (or was not) overloaded is now,
// given the host's CPU and memory use in percent, and why. It enters the
// overloaded state when a measure reaches its limit, and leaves it once
// every measure is below its limit minus overloadHysteresis (minus half the
// limit for a limit under 20, so that it can be left at all).
func (l overloadLimits) decide(was bool, cpu, memory float64) (bool, string) {
	type measure struct {
		name       string
		use, limit float64
	}
	ms := []measure{{"CPU", cpu, l.cpu}, {"memory", memory, l.memory}}
	for _, m := range ms {
		if m.limit > 0 && m.use >= m.limit {
			return true, fmt.Sprintf("%s %.0f%% >= max %.0f%%", m.name, m.use, m.limit)
		}
	}
	if !was {
		return false, ""
	}
	for _, m := range ms {
		if leave := m.limit - min(overloadHysteresis, m.limit/2); m.limit > 0 && m.use >= leave {
			return true, fmt.Sprintf("%s %.0f%%, not yet below %.0f%% (max %.0f%%)", m.name, m.use, leave, m.limit)
		}
	}
	return false, ""
}
