package master

import (
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

func TestAdmit(t *testing.T) {
	t.Parallel()
	lim := limits{maxRunning: 500, maxPendingEvents: 1000, claimBatch: 64}
	for _, c := range []struct {
		name string
		load load
		lim  limits
		want verdict
	}{
		{"idle: a full batch", load{}, lim, verdict{claim: 64}},
		{"room for fewer than a batch", load{running: 490}, lim, verdict{claim: 10}},
		{"room for one", load{running: 499}, lim, verdict{claim: 1}},
		{"a smaller batch", load{running: 10}, limits{500, 1000, 5}, verdict{claim: 5}},
		{"events below the limit", load{running: 10, pendingEvents: 999}, lim, verdict{claim: 64}},
		{"at the running limit: children only", load{running: 500}, lim, verdict{claim: 64, childrenOnly: true,
			limit: model.SettingMaxRunningInstances, reason: "waiting: master at 500 running instances (admission.max_running_instances)"}},
		{"past it (recovered runs, a lowered limit)", load{running: 700}, lim, verdict{claim: 64, childrenOnly: true,
			limit: model.SettingMaxRunningInstances, reason: "waiting: master at 500 running instances (admission.max_running_instances)"}},
		{"at the events limit", load{running: 3, pendingEvents: 1000}, lim, verdict{claim: 64, childrenOnly: true,
			limit: model.SettingMaxPendingEvents, reason: "waiting: master has 1000 events not yet published (admission.max_pending_events)"}},
		{"both: the events are named (the publisher is behind whatever runs)", load{running: 500, pendingEvents: 1000}, lim,
			verdict{claim: 64, childrenOnly: true, limit: model.SettingMaxPendingEvents,
				reason: "waiting: master has 1000 events not yet published (admission.max_pending_events)"}},
	} {
		if got := admit(c.load, c.lim); got != c.want {
			t.Errorf("%s: admit(%+v, %+v) = %+v, want %+v", c.name, c.load, c.lim, got, c.want)
		}
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	lim := limits{maxRunning: 500, maxPendingEvents: 1000, claimBatch: 64}
	atLimit := verdict{claim: 10, childrenOnly: true, limit: model.SettingMaxRunningInstances,
		reason: "waiting: master at 500 running instances (admission.max_running_instances)"}
	events := admit(load{pendingEvents: 1000}, lim)
	for _, c := range []struct {
		name    string
		a       verdict
		claimed int
		want    verdict
	}{
		{"a full batch taken: busy, not held", verdict{claim: 64}, 64, verdict{claim: 64}},
		{"fewer found than a batch: nothing waits", verdict{claim: 64}, 3, verdict{claim: 64}},
		{"room for 10, 10 taken: at the limit, runs may wait", verdict{claim: 10}, 10, atLimit},
		{"room for 10, 4 taken: nothing waits", verdict{claim: 10}, 4, verdict{claim: 10}},
		{"held stays held", events, 0, events},
	} {
		if got := settle(c.a, c.claimed, lim); got != c.want {
			t.Errorf("%s: settle(%+v, %d) = %+v, want %+v", c.name, c.a, c.claimed, got, c.want)
		}
	}
}
