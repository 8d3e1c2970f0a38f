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
		want admission
	}{
		{"idle: a full batch", load{}, lim, admission{claim: 64}},
		{"room for fewer than a batch", load{running: 490}, lim, admission{claim: 10}},
		{"room for one", load{running: 499}, lim, admission{claim: 1}},
		{"a smaller batch", load{running: 10}, limits{500, 1000, 5}, admission{claim: 5}},
		{"events below the limit", load{running: 10, pendingEvents: 999}, lim, admission{claim: 64}},
		{"at the running limit: children only", load{running: 500}, lim, admission{claim: 64, childrenOnly: true,
			limit: model.SettingMaxRunningInstances, reason: "waiting: master at 500 running instances (master.max_running_instances)"}},
		{"past it (recovered runs, a lowered limit)", load{running: 700}, lim, admission{claim: 64, childrenOnly: true,
			limit: model.SettingMaxRunningInstances, reason: "waiting: master at 500 running instances (master.max_running_instances)"}},
		{"at the events limit", load{running: 3, pendingEvents: 1000}, lim, admission{claim: 64, childrenOnly: true,
			limit: model.SettingMaxPendingEvents, reason: "waiting: master has 1000 events not yet published (master.max_pending_events)"}},
		{"both: the events are named (the publisher is behind whatever runs)", load{running: 500, pendingEvents: 1000}, lim,
			admission{claim: 64, childrenOnly: true, limit: model.SettingMaxPendingEvents,
				reason: "waiting: master has 1000 events not yet published (master.max_pending_events)"}},
	} {
		if got := admit(c.load, c.lim); got != c.want {
			t.Errorf("%s: admit(%+v, %+v) = %+v, want %+v", c.name, c.load, c.lim, got, c.want)
		}
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	lim := limits{maxRunning: 500, maxPendingEvents: 1000, claimBatch: 64}
	atLimit := admission{claim: 10, childrenOnly: true, limit: model.SettingMaxRunningInstances,
		reason: "waiting: master at 500 running instances (master.max_running_instances)"}
	events := admit(load{pendingEvents: 1000}, lim)
	for _, c := range []struct {
		name    string
		a       admission
		claimed int
		want    admission
	}{
		{"a full batch taken: busy, not held", admission{claim: 64}, 64, admission{claim: 64}},
		{"fewer found than a batch: nothing waits", admission{claim: 64}, 3, admission{claim: 64}},
		{"room for 10, 10 taken: at the limit, runs may wait", admission{claim: 10}, 10, atLimit},
		{"room for 10, 4 taken: nothing waits", admission{claim: 10}, 4, admission{claim: 10}},
		{"held stays held", events, 0, events},
	} {
		if got := settle(c.a, c.claimed, lim); got != c.want {
			t.Errorf("%s: settle(%+v, %d) = %+v, want %+v", c.name, c.a, c.claimed, got, c.want)
		}
	}
}
