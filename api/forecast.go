package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/beluga-scheduler/beluga/common/forecast"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Forecast is when a running instance is projected to end, from the
// recent successful runs of its tasks (common/forecast).
type Forecast struct {
	// End: every remaining task at its p50 run time (plus its worker
	// group's p50 queueing) along the critical path; P90End at p90s.
	End    Time `json:"end"`
	P90End Time `json:"p90_end"`
	// CriticalPath names the remaining tasks End waits on, in order.
	CriticalPath []string `json:"critical_path"`
	// NoHistory names remaining tasks with no recent successful run: they
	// count a default (1 minute at p50, 2 at p90).
	NoHistory []string `json:"no_history"`
	// Slow names running tasks past their p90.
	Slow []string `json:"slow"`
	// Deadline is the run's (its schedule's, else its workflow's), if any;
	// Late says End is after it.
	Deadline *Time `json:"deadline,omitempty"`
	Late     bool  `json:"late"`
	// At is when the projection was made.
	At Time `json:"at"`
	// Tasks are the remaining tasks' projected spans (p50), in
	// topological order, for a chart to draw: the first maxForecastTasks
	// of TasksTotal.
	Tasks      []ForecastTask `json:"tasks"`
	TasksTotal int            `json:"tasks_total"`
}

// ForecastTask is a remaining task's projected span: a running one from
// At to its projected end, a pending one from when its upstreams are
// projected to end (queueing included) to its own.
type ForecastTask struct {
	Name    string `json:"name"`
	Start   Time   `json:"start"`
	End     Time   `json:"end"`
	Running bool   `json:"running"`
}

// maxForecastTasks bounds the spans in one answer: a chart shows a few
// thousand rows, and a run of 100,000 tasks would answer megabytes.
const maxForecastTasks = 2000

// instanceForecast is inst's forecast; nil when it is not running or its
// definition cannot be read (a forecast is extra, never a reason to fail
// the instance's read).
func (h *handlers) instanceForecast(ctx context.Context, inst model.WorkflowInstance) (*Forecast, error) {
	if !forecast.Unfinished(inst) {
		return nil, nil
	}
	d := h.defs.get(ctx, h.Store, inst.DefinitionID)
	if d == nil {
		return nil, nil
	}
	g := runGraph(d.graph, inst)
	if g == nil {
		return nil, nil
	}
	now := time.Now()
	hist, ok := h.hists.get(inst.ID, now)
	if !ok {
		samples, err := h.Store.TaskHistory(ctx, inst.Project, inst.Workflow, inst.ID, forecast.RunsFor(g.Len()))
		if err != nil {
			return nil, err
		}
		hist = forecast.Learn(samples, forecast.HistoryRuns)
		h.hists.put(inst.ID, hist, now)
	}
	cur, err := h.Store.InstanceTasksNow(ctx, inst.ID)
	if err != nil {
		return nil, err
	}
	p := forecast.Project(forecast.Input{Graph: g, Tasks: forecast.TasksOf(inst, g, d.wf, cur), History: hist, Now: now})
	f := &Forecast{End: timeOf(p.End), P90End: timeOf(p.P90End), CriticalPath: nonNilSlice(p.CriticalPath),
		NoHistory: nonNilSlice(p.NoHistory), Slow: nonNilSlice(p.Slow), At: timeOf(now),
		Tasks: make([]ForecastTask, 0, min(len(p.Spans), maxForecastTasks)), TasksTotal: len(p.Spans)}
	for _, sp := range p.Spans[:min(len(p.Spans), maxForecastTasks)] {
		f.Tasks = append(f.Tasks, ForecastTask{Name: sp.Name, Start: timeOf(sp.Start), End: timeOf(sp.End), Running: sp.Running})
	}
	setting := d.wf.Deadline
	if inst.ScheduleID != 0 {
		sc, err := h.Store.ScheduleGet(ctx, inst.Project, inst.Workflow)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if err == nil && sc.ID == inst.ScheduleID && sc.Deadline != "" {
			setting = sc.Deadline
		}
	}
	if at, ok := spec.InstanceDeadline(setting, inst); ok {
		dl := timeOf(at)
		f.Deadline, f.Late = &dl, p.End.After(at)
	}
	return f, nil
}

// historyCache keeps what a forecast learned of an instance's past runs for
// a minute: a page that polls a running instance reads its history once a
// minute, not on every poll (the past changes only as older runs end).
type historyCache struct {
	mu sync.Mutex
	m  map[int64]cachedHistory
}

type cachedHistory struct {
	h  forecast.History
	at time.Time
}

const (
	historyTTL       = time.Minute
	maxCachedHistory = 256 // instances; past it the cache is emptied
)

func (c *historyCache) get(id int64, now time.Time) (forecast.History, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || now.Sub(e.at) > historyTTL {
		return forecast.History{}, false
	}
	return e.h, true
}

func (c *historyCache) put(id int64, h forecast.History, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedHistory {
		c.m = map[int64]cachedHistory{}
	}
	c.m[id] = cachedHistory{h: h, at: now}
}
