package master

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/schedule"
)

// Metrics of the leader's services (common/metrics). Kept off the hot
// path's critical sections: counters are pre-resolved children (atomic
// adds), and what needs a scan of the queue runs at most once a second.

// gaugeEvery bounds how often the dispatcher scans its queue for the oldest
// task and its places for the task groups in use.
const gaugeEvery = time.Second

// dispatchGauges is what the dispatcher's slow gauges keep between scans.
type dispatchGauges struct {
	at     time.Time       // the last scan
	groups map[string]bool // task groups whose in-use gauge is not 0
}

// stampQueued marks when items entered the queue (a retried send keeps its
// first time: the latency is queued -> dispatched, however many tries).
func stampQueued(items []*taskItem) {
	if len(items) == 0 {
		return
	}
	now := time.Now()
	for _, it := range items {
		if it.queued.IsZero() {
			it.queued = now
		}
	}
}

// countDispatched records a dispatch written to the DB at now.
func countDispatched(it *taskItem, now time.Time) {
	metrics.DispatchLatency.Observe(now.Sub(it.queued).Seconds())
	metrics.Task(it.Dispatch.TaskType, model.TaskDispatched)
}

// observeAck records a report's arrival -> DB-ack latency.
func observeAck(at time.Time) {
	if !at.IsZero() {
		metrics.ReportAckLatency.Observe(metrics.Since(at))
	}
}

// gauges sets the queue depth (cheap: lengths) on every pass, and the
// oldest queued age and task groups in use at most once per gaugeEvery. It
// runs on the dispatcher goroutine, which owns what it reads.
func (d *dispatcher) gauges() {
	depth := d.queue.Len()
	for _, q := range d.parked {
		depth += q.Len()
	}
	metrics.QueueDepth.Set(float64(depth))
	now := time.Now()
	g := &d.gauge
	if now.Sub(g.at) < gaugeEvery {
		return
	}
	g.at = now
	if g.groups == nil {
		g.groups = map[string]bool{}
	}
	var oldest time.Time
	scan := func(q *taskQueue) {
		q.all(func(it *taskItem) {
			if !it.queued.IsZero() && (oldest.IsZero() || it.queued.Before(oldest)) {
				oldest = it.queued
			}
		})
	}
	scan(&d.queue)
	for _, q := range d.parked {
		scan(q)
	}
	if oldest.IsZero() {
		metrics.QueueOldest.Set(0)
	} else {
		metrics.QueueOldest.Set(now.Sub(oldest).Seconds())
	}
	for name := range g.groups {
		if d.places.group[name] == 0 {
			metrics.TaskGroupInUse.WithLabelValues(name).Set(0)
			delete(g.groups, name)
		}
	}
	for name, n := range d.places.group {
		metrics.TaskGroupInUse.WithLabelValues(name).Set(float64(n))
		g.groups[name] = true
	}
}

// countFired records a schedule's firing: how late each time was written,
// the latest time fired on time and earlier ones caught up, and the times
// skipped: by the catch-up policy, and of the asked times those the
// overlap policy skipped (asked but not written).
func countFired(plan schedule.Plan, asked int, written []model.WorkflowInstance, now time.Time) {
	var latest time.Time
	for _, inst := range written {
		if inst.ScheduleTime != nil && inst.ScheduleTime.After(latest) {
			latest = *inst.ScheduleTime
		}
	}
	for _, inst := range written {
		if inst.ScheduleTime == nil {
			continue
		}
		// A fire written ahead of its time is claimable at it: no lag.
		metrics.CronLag.Observe(max(now.Sub(*inst.ScheduleTime), 0).Seconds())
		if inst.ScheduleTime.Equal(latest) {
			metrics.ScheduleFired.Inc()
		} else {
			metrics.ScheduleCaught.Inc()
		}
	}
	if skipped := plan.Skipped + max(asked-len(written), 0); skipped > 0 {
		metrics.ScheduleSkipped.Add(float64(skipped))
	}
}

// taskRef is the log field naming a queued task: instance, task, workflow
// and project (common/logging), the names from its dispatch's built-in
// params.
func taskRef(it *taskItem) zap.Field {
	return logging.Task(it.WorkflowInstanceID, it.TaskInstanceID, it.Dispatch.Env[params.Project], it.Dispatch.Env[params.Workflow])
}

// taskRef names a task of an instance this term runs (its runner has the
// names); one it does not run gets its ids alone.
func (t *term) taskRef(workflowID, taskID int64) zap.Field {
	t.mu.Lock()
	r := t.runners[workflowID]
	t.mu.Unlock()
	if r == nil {
		return zap.Inline(idsOnly{workflowID, taskID})
	}
	return logging.Task(workflowID, taskID, r.inst.Project, r.inst.Workflow)
}

type idsOnly struct{ instance, task int64 }

func (i idsOnly) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddInt64(logging.FieldInstance, i.instance)
	enc.AddInt64(logging.FieldTask, i.task)
	return nil
}
