package benchkit

import (
	"context"
	"fmt"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// SeedDefinitions applies workflows d<from>..d<to-1> of project (one
// task each) through the store, one in every on a far yearly schedule,
// and returns how many it scheduled. The caller registers the task types
// (tasks/builtin): the specs are parsed here.
func SeedDefinitions(ctx context.Context, st *store.Store, project string, from, to, every int) (int, error) {
	c, err := schedule.Parse("0 0 1 1 *", "UTC")
	if err != nil {
		return 0, err
	}
	next := c.First(time.Now(), schedule.Window{})
	scheduled := 0
	for i := from; i < to; i++ {
		name := fmt.Sprintf("d%06d", i)
		w, err := spec.Parse([]byte(OneTaskSpec(name)))
		if err != nil {
			return 0, err
		}
		if _, _, err := st.WorkflowPut(ctx, project, w); err != nil {
			return 0, fmt.Errorf("seed %s: %w", name, err)
		}
		if i%every == 0 {
			if _, _, err := st.SchedulePut(ctx, model.Schedule{Project: project, Workflow: name, Cron: "0 0 1 1 *",
				Timezone: "UTC", Catchup: schedule.CatchupLatest, Enabled: true, NextFireTime: &next, Overlap: model.OverlapAllow}, nil); err != nil {
				return 0, fmt.Errorf("seed the schedule of %s: %w", name, err)
			}
			scheduled++
		}
	}
	return scheduled, nil
}
