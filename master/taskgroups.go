package master

import (
	"context"
	"time"

	"go.uber.org/zap"
)

const taskGroupRefresh = time.Second

// taskGroups caches task group capacities for the dispatcher; groups are
// created and resized over REST, so the cache is re-read at most once a
// second, and at once for a group it does not know.
type taskGroups struct {
	store  groupStore
	log    *zap.Logger
	caps   map[string]int
	loaded time.Time
}

func newTaskGroups(st groupStore, log *zap.Logger) *taskGroups {
	return &taskGroups{store: st, log: log}
}

// capacity returns a group's capacity and whether the group exists.
func (g *taskGroups) capacity(ctx context.Context, name string) (int, bool) {
	c, ok := g.caps[name]
	if !ok || time.Since(g.loaded) > taskGroupRefresh {
		if time.Since(g.loaded) > taskGroupRefresh/10 { // a missing group does not reload on every pop
			g.reload(ctx)
		}
		c, ok = g.caps[name]
	}
	return c, ok
}

func (g *taskGroups) reload(ctx context.Context) {
	groups, err := g.store.TaskGroupList(ctx)
	g.loaded = time.Now()
	if err != nil {
		g.log.Warn("read task groups; keeping the last known", zap.Error(err))
		return
	}
	caps := make(map[string]int, len(groups))
	for _, tg := range groups {
		caps[tg.Name] = tg.Capacity
	}
	g.caps = caps
}
