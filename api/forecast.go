package api

import (
	"context"
	"errors"
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
}

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
	p, err := forecast.Of(ctx, h.Store, inst, g, d.wf, now)
	if err != nil {
		return nil, err
	}
	f := &Forecast{End: timeOf(p.End), P90End: timeOf(p.P90End), CriticalPath: nonNilSlice(p.CriticalPath),
		NoHistory: nonNilSlice(p.NoHistory), Slow: nonNilSlice(p.Slow), At: timeOf(now)}
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
