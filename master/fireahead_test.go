package master

import (
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/store"
)

// splitAhead writes ahead only what every run starts for (overlap allow,
// "" is allow) and has a time to fire; the policies that look at the runs
// unfinished at the second, and a firing with no time (only its cursor
// moved), wait for the second. Order and plans stay paired.
func TestSplitAhead(t *testing.T) {
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	fire := func(id int64, o model.Overlap, times ...time.Time) store.ScheduleFire {
		return store.ScheduleFire{Schedule: model.Schedule{ID: id, Overlap: o}, Firing: store.Firing{Times: times}}
	}
	for _, tc := range []struct {
		name        string
		due         []store.ScheduleFire
		early, rest []int64
	}{
		{"none", nil, nil, nil},
		{"allow and default", []store.ScheduleFire{fire(1, model.OverlapAllow, at), fire(2, "", at)}, []int64{1, 2}, nil},
		{"policies at the second", []store.ScheduleFire{fire(1, model.OverlapSkip, at), fire(2, model.OverlapWait, at), fire(3, model.OverlapReplace, at)}, nil, []int64{1, 2, 3}},
		{"mixed, in order", []store.ScheduleFire{fire(1, model.OverlapSkip, at), fire(2, "", at), fire(3, model.OverlapAllow), fire(4, model.OverlapAllow, at)}, []int64{2, 4}, []int64{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plans := make([]schedule.Plan, len(tc.due))
			for i, f := range tc.due {
				plans[i] = schedule.Plan{Skipped: int(f.Schedule.ID)} // tags each plan with its schedule
			}
			early, rest, restPlans := splitAhead(tc.due, plans)
			ids := func(fs []store.ScheduleFire, ps []schedule.Plan) []int64 {
				var out []int64
				for i, f := range fs {
					if int64(ps[i].Skipped) != f.Schedule.ID {
						t.Fatalf("schedule %d paired with the plan of %d", f.Schedule.ID, ps[i].Skipped)
					}
					out = append(out, f.Schedule.ID)
				}
				return out
			}
			if got := ids(early.fires, early.plans); !slices.Equal(got, tc.early) {
				t.Errorf("ahead %v, want %v", got, tc.early)
			}
			if got := ids(rest, restPlans); !slices.Equal(got, tc.rest) {
				t.Errorf("at the second %v, want %v", got, tc.rest)
			}
		})
	}
}
