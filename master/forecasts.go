package master

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/forecast"
	"github.com/beluga-scheduler/beluga/common/model"
)

// Forecast alert kinds: a run with a deadline projected to end after it
// (before the miss), and back on track after such an alert.
const (
	AlertDeadlineRisk = "deadline_risk"
	AlertDeadlineOK   = "deadline_ok"
)

// forecastsPerTick bounds the runs re-projected a tick (two indexed reads
// each, the history once per run and term): more watched runs share the
// ticks in turn.
const forecastsPerTick = 16

// watched is a run with a deadline the alerter projects the end of.
type watched struct {
	id       int64
	deadline time.Time
	hist     *forecast.History // read once per run and term: the past does not change while it runs
	late     bool              // a risk alert was planned this term (a clear follows only one)
}

// deadlineVerdict is what a projection means for a run's deadline alerts.
type deadlineVerdict int

const (
	verdictNone  deadlineVerdict = iota
	verdictRisk                  // projected after its deadline: alert
	verdictClear                 // back under it after a risk alert: clear
)

// judge decides a watched run's alert from its projected end. Pure.
func judge(late bool, end, deadline time.Time) deadlineVerdict {
	switch after := end.After(deadline); {
	case after && !late:
		return verdictRisk
	case !after && late:
		return verdictClear
	}
	return verdictNone
}

// forecastTick re-projects up to forecastsPerTick of the watched runs from
// *next on (round robin), alerting a run projected past its deadline and
// clearing it when back on track; a run finished or past its deadline (the
// miss alert is then the deadline timer's) stops being watched. False when
// the term is over.
func (a *alerter) forecastTick(ctx context.Context, watch map[int64]*watched, order *[]int64, next *int) bool {
	if len(*order) == 0 {
		return true
	}
	now := time.Now()
	n := min(forecastsPerTick, len(*order))
	var drop []int64
	for range n {
		*next %= len(*order)
		w := watch[(*order)[*next]]
		*next++
		keep, ok := a.forecastOne(ctx, w, now)
		if !ok {
			return false
		}
		if !keep {
			drop = append(drop, w.id)
		}
	}
	for _, id := range drop {
		delete(watch, id)
	}
	if len(drop) > 0 {
		kept := (*order)[:0]
		for _, id := range *order {
			if watch[id] != nil {
				kept = append(kept, id)
			}
		}
		*order = kept
	}
	return true
}

// forecastOne projects one watched run: keep false once it is no longer
// to be watched (finished, past its deadline, or of a workflow with no
// history); ok false when the term is over.
func (a *alerter) forecastOne(ctx context.Context, w *watched, now time.Time) (keep, ok bool) {
	if !now.Before(w.deadline) {
		return false, true
	}
	cfg, _, inst, err := a.workflowAlerts(ctx, w.id)
	if err != nil {
		return true, a.checkErr(ctx, "read a run to forecast", err)
	}
	if !forecast.Unfinished(inst) {
		return false, true
	}
	d, err := a.def(ctx, inst.DefinitionID)
	if err != nil {
		return true, a.checkErr(ctx, "read a run's definition to forecast", err)
	}
	g := d.graph
	if len(inst.StartNodes) > 0 {
		scope, err := dag.ParseScope(inst.Scope)
		if err == nil {
			g, err = g.SubGraph(inst.StartNodes, scope)
		}
		if err != nil {
			return false, true // the runner fails such a run
		}
	}
	if w.hist == nil {
		samples, err := a.store.TaskHistory(ctx, inst.Project, inst.Workflow, inst.ID, forecast.RunsFor(g.Len()))
		if err != nil {
			return true, a.checkErr(ctx, "read task history to forecast", err)
		}
		h := forecast.Learn(samples, forecast.HistoryRuns)
		w.hist = &h
	}
	if len(w.hist.Tasks) == 0 {
		// No run of the workflow succeeded a task yet: a projection would
		// be defaults only, a guess not worth an alert (the miss alert
		// still comes at the deadline).
		return false, true
	}
	cur, err := a.store.InstanceTasksNow(ctx, inst.ID)
	if err != nil {
		return true, a.checkErr(ctx, "read a run's tasks to forecast", err)
	}
	p := forecast.Project(forecast.Input{Graph: g, Tasks: forecast.TasksOf(inst, g, d.wf, cur), History: *w.hist, Now: now})
	v := judge(w.late, p.End, w.deadline)
	if v == verdictNone {
		return true, true
	}
	w.late = v == verdictRisk
	kind, text := AlertDeadlineOK, deadlineOKText(inst, p, w.deadline)
	if w.late {
		kind, text = AlertDeadlineRisk, deadlineRiskText(inst, p, w.deadline, *w.hist)
		a.log.Warn("run projected to miss its deadline", zap.Int64("instance_id", inst.ID), zap.String("project", inst.Project),
			zap.String("workflow", inst.Workflow), zap.Time("projected_end", p.End), zap.Time("deadline", w.deadline),
			zap.Strings("critical_path", p.CriticalPath), zap.Strings("slow", p.Slow))
	}
	if cfg == nil {
		return true, true
	}
	var plan []model.Alert
	for _, ch := range cfg.Channels {
		// Keyed by run: once per run however often the projection swings,
		// and a new leader's plan of the same alert is a no-op.
		plan = append(plan, model.Alert{Key: fmt.Sprintf("%s:%d:%d:%s", kind, inst.ID, inst.RunTimes, ch), Channel: ch, Kind: kind,
			Project: inst.Project, Workflow: inst.Workflow, InstanceID: inst.ID, Message: text})
	}
	_, err = a.store.AlertAdd(ctx, plan, 0)
	a.Wake()
	return true, a.checkErr(ctx, "add deadline forecast alerts", err)
}

func deadlineRiskText(inst model.WorkflowInstance, p forecast.Projection, deadline time.Time, h forecast.History) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s run %d is projected to end at %s (p90 %s), %s after its deadline %s; critical path: %s",
		inst.Project, inst.Workflow, inst.ID, p.End.UTC().Format(time.RFC3339), p.P90End.UTC().Format(time.RFC3339),
		p.End.Sub(deadline).Round(time.Second), deadline.UTC().Format(time.RFC3339), pathText(p.CriticalPath, h))
	if len(p.Slow) > 0 {
		fmt.Fprintf(&b, "; slow (past their p90): %s", strings.Join(p.Slow, ", "))
	}
	if len(p.NoHistory) > 0 {
		fmt.Fprintf(&b, "; no history (counted %v each): %s", forecast.DefaultP50, strings.Join(p.NoHistory, ", "))
	}
	return b.String()
}

// pathText names the critical path's tasks with their p50.
func pathText(path []string, h forecast.History) string {
	parts := make([]string, len(path))
	for i, n := range path {
		parts[i] = n
		if st, ok := h.Tasks[n]; ok {
			parts[i] += fmt.Sprintf(" (p50 %v)", st.P50.Round(100*time.Millisecond))
		}
	}
	return strings.Join(parts, " -> ")
}

func deadlineOKText(inst model.WorkflowInstance, p forecast.Projection, deadline time.Time) string {
	return fmt.Sprintf("%s/%s run %d is back on track: projected to end at %s, before its deadline %s",
		inst.Project, inst.Workflow, inst.ID, p.End.UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339))
}
