// Package metrics holds Beluga's Prometheus families, one registry per
// process: a master, worker or API process moves its own families, and a
// standalone (all three in one process) serves them all from the one
// registry. The families are package values so that a hot path adds to a
// pre-resolved child (an atomic add) without plumbing or map lookups.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/beluga-scheduler/beluga/common/model"
)

// Registry holds every family below plus the Go runtime and process ones.
var Registry = prometheus.NewRegistry()

const ns = "beluga"

// Latency buckets from 1 ms to ~65 s: a dispatch is milliseconds on an idle
// cluster and seconds to minutes behind a full queue.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

var (
	// TaskTransitions counts task instance state changes, by state and task type.
	TaskTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "task_transitions_total",
		Help: "Task instance state changes, by the state entered and the task type."}, []string{"state", "type"})
	// InstanceTransitions counts workflow instance state changes.
	InstanceTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "instance_transitions_total",
		Help: "Workflow instance state changes, by the state entered."}, []string{"state"})

	// QueueDepth is the tasks in the leader's priority queue, waiting
	// (parked) for a worker or a limit included.
	QueueDepth = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "queue_depth",
		Help: "Tasks in the leader's priority queue (waiting for a worker or a limit included)."})
	// QueueOldest is the age of the oldest task in the queue.
	QueueOldest = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "queue_oldest_seconds",
		Help: "Age of the task that has waited longest in the leader's queue (0 when empty)."})
	// DispatchLatency is queued -> dispatched (recorded in the DB).
	DispatchLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "dispatch_latency_seconds",
		Help: "From a task entering the leader's queue to its dispatch being recorded.", Buckets: latencyBuckets})
	// ReportAckLatency is a worker report's arrival -> its DB-ack sent.
	ReportAckLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "report_ack_latency_seconds",
		Help: "From a worker report reaching the leader to its DB-ack being sent.", Buckets: latencyBuckets})
	// TaskGroupInUse is the places taken in each task group.
	TaskGroupInUse = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "task_group_in_use",
		Help: "Tasks in flight per task group (leader)."}, []string{"task_group"})
	// Leader is 1 on the leading master.
	Leader = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "leader",
		Help: "1 while this master leads, else 0."})
	// Epoch is the term this master leads (or last led).
	Epoch = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "epoch",
		Help: "The epoch of the term this master leads or last led."})

	// ZKSession is 1 while the ZooKeeper session is connected.
	ZKSession = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "zookeeper_session_connected",
		Help: "1 while the ZooKeeper session is connected, else 0."})
	// ZKReconnects counts connections back within a session and new sessions after one was lost.
	ZKReconnects = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "zookeeper_reconnects_total",
		Help: "ZooKeeper reconnects: within the session, or with a new session after it expired."}, []string{"kind"})

	// DBTx is the latency of the store's transactions.
	DBTx = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "db_transaction_seconds",
		Help: "Latency of database transactions.", Buckets: latencyBuckets})
	// DBTxErrors counts failed transactions: fenced (a newer term) or error.
	DBTxErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "db_transaction_errors_total",
		Help: "Failed database transactions, by kind (fenced: refused for a newer term; error)."}, []string{"kind"})

	// CronLag is how late a schedule fired after its fire time.
	CronLag = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "cron_fire_lag_seconds",
		Help: "From a schedule's fire time to its run being written.", Buckets: latencyBuckets})
	// ScheduleTimes counts schedule times by what became of them.
	ScheduleTimes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "schedule_times_total",
		Help: "Schedule fire times: fired on time, caught up (missed, then fired) or skipped."}, []string{"outcome"})

	// AdmissionQueue is the leader's bounded queues as its command consumer
	// last measured them, AdmissionLimit their limits (the settings).
	AdmissionQueue = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "admission_queue",
		Help: "The leader's admission queues: running_instances, pending_events (outbox rows not yet published), claimed (commands taken in the last pass)."},
		[]string{"queue"})
	AdmissionLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "admission_limit",
		Help: "The limit of each admission queue (settings admission.max_running_instances, admission.max_pending_events, admission.claim_batch)."},
		[]string{"queue"})
	// AdmissionSaturated is 1 while the leader claims no new runs.
	AdmissionSaturated = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "admission_saturated",
		Help: "1 while the leader claims no new runs because an admission limit is reached."})
	// AdmissionWaits counts the times the leader began to hold new runs, by the limit reached.
	AdmissionWaits = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "admission_waits_total",
		Help: "Times the leader began holding new runs in the database, by the limit reached (setting name)."}, []string{"limit"})

	// HTTPRequests counts API requests by route and status code.
	HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "http_requests_total",
		Help: "API requests by route pattern and status code."}, []string{"route", "code"})
	// HTTPDuration is API request latency by route.
	HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "http_request_duration_seconds",
		Help: "API request latency by route pattern.", Buckets: prometheus.DefBuckets}, []string{"route"})
)

// Pre-resolved children of the fixed labels.
var (
	ZKWithinSession = ZKReconnects.WithLabelValues("within_session")
	ZKNewSession    = ZKReconnects.WithLabelValues("new_session")
	DBTxFenced      = DBTxErrors.WithLabelValues("fenced")
	DBTxFailed      = DBTxErrors.WithLabelValues("error")
	ScheduleFired   = ScheduleTimes.WithLabelValues("fired")
	ScheduleCaught  = ScheduleTimes.WithLabelValues("caught_up")
	ScheduleSkipped = ScheduleTimes.WithLabelValues("skipped")
)

// beluga are Beluga's own collectors (the dashboard test reads their names).
var beluga = []prometheus.Collector{TaskTransitions, InstanceTransitions, QueueDepth, QueueOldest, DispatchLatency,
	ReportAckLatency, TaskGroupInUse, Leader, Epoch, ZKSession, ZKReconnects, DBTx, DBTxErrors, CronLag, ScheduleTimes,
	HTTPRequests, HTTPDuration, workerStats, AdmissionQueue, AdmissionLimit, AdmissionSaturated, AdmissionWaits}

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	Registry.MustRegister(beluga...)
}

// taskStates are the states a task counter is kept for, in index order.
var taskStates = []model.TaskState{model.TaskSubmitted, model.TaskDispatched, model.TaskRunning, model.TaskSucceeded,
	model.TaskFailed, model.TaskKilled, model.TaskPaused, model.TaskNeedFaultTolerance, model.TaskDelayed, model.TaskForcedSuccess,
	model.TaskSkipped}

func stateIndex(s model.TaskState) int {
	switch s {
	case model.TaskSubmitted:
		return 0
	case model.TaskDispatched:
		return 1
	case model.TaskRunning:
		return 2
	case model.TaskSucceeded:
		return 3
	case model.TaskFailed:
		return 4
	case model.TaskKilled:
		return 5
	case model.TaskPaused:
		return 6
	case model.TaskNeedFaultTolerance:
		return 7
	case model.TaskDelayed:
		return 8
	case model.TaskForcedSuccess:
		return 9
	case model.TaskSkipped:
		return 10
	}
	return -1
}

// typeCounters are one task type's counters, one per state.
type typeCounters [11]prometheus.Counter

// byType caches each task type's counters: resolved once per type, read
// lock-free after (sync.Map suits keys written once and read many times).
var byType sync.Map // string -> *typeCounters

func countersOf(typ string) *typeCounters {
	if c, ok := byType.Load(typ); ok {
		return c.(*typeCounters)
	}
	c := new(typeCounters)
	for i, s := range taskStates {
		c[i] = TaskTransitions.WithLabelValues(string(s), typ)
	}
	actual, _ := byType.LoadOrStore(typ, c)
	return actual.(*typeCounters)
}

// Task counts one task instance entering state.
func Task(typ string, state model.TaskState) {
	if i := stateIndex(state); i >= 0 {
		countersOf(typ)[i].Inc()
		return
	}
	TaskTransitions.WithLabelValues(string(state), typ).Inc()
}

// Tasks counts task instances written in their first state. One written
// already ended (a dry run's, or one whose params do not resolve) is left
// to the event the runner applies for it next, which counts it once.
func Tasks(ts []*model.TaskInstance) {
	for _, t := range ts {
		if t.State != model.TaskSucceeded && t.State != model.TaskFailed {
			Task(t.Type, t.State)
		}
	}
}

// instanceCounters are pre-resolved for every workflow state.
var instanceCounters = func() map[model.WorkflowState]prometheus.Counter {
	m := map[model.WorkflowState]prometheus.Counter{}
	for _, s := range []model.WorkflowState{model.WorkflowSubmitted, model.WorkflowRunning, model.WorkflowReadyPause,
		model.WorkflowPaused, model.WorkflowReadyStop, model.WorkflowStopped, model.WorkflowFailed, model.WorkflowSucceeded} {
		m[s] = InstanceTransitions.WithLabelValues(string(s))
	}
	return m
}()

// Instance counts n workflow instances entering state.
func Instance(state model.WorkflowState, n int) {
	if c, ok := instanceCounters[state]; ok {
		c.Add(float64(n))
	}
}

// Since is the seconds from t to now, for a histogram.
func Since(t time.Time) float64 { return time.Since(t).Seconds() }

// SetLeader records that this master leads epoch (or no longer does).
func SetLeader(leading bool, epoch int64) {
	if leading {
		Leader.Set(1)
		Epoch.Set(float64(epoch))
		return
	}
	Leader.Set(0)
}

// ZKConnected records a ZooKeeper connection: the first of session gen
// (a new session after an expiry when gen > 1), or one back within it.
func ZKConnected(first bool, gen uint64) {
	ZKSession.Set(1)
	switch {
	case !first:
		ZKWithinSession.Inc()
	case gen > 1:
		ZKNewSession.Inc()
	}
}
