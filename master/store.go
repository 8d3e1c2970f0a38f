package master

import (
	"context"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// The master's view of the database, declared here where it is used so that
// each service names the slice it needs and *store.Store is one way to
// provide it (store_test.go asserts it does).

// Store is what the master asks of the database outside a term (the
// definitions cache and the term's start) and the view fenced by a term's
// epoch that everything inside the term writes through. T is that view's
// type: *store.Store returns a *store.Store from Term, and New infers it.
type Store[T TermStore] interface {
	WorkflowDefinition(ctx context.Context, id int64) (model.WorkflowDefinition, error)
	TermBegin(ctx context.Context, epoch int64, host string) error
	Term(epoch int64) T
	// TermFenced is Term whose view calls onFenced when a write is refused
	// for a newer term (the term then ends).
	TermFenced(epoch int64, onFenced func()) T
	// InstancesMissing answers a worker's log sweep (logsweep.go): which
	// of these runs have no row any more.
	InstancesMissing(ctx context.Context, ids []int64) ([]int64, error)
}

// TermStore is everything a term's services and runners use.
type TermStore interface {
	dispatchStore
	reportStore
	publishStore
	scheduleStore
	consumerStore
	writeStore
	groupStore
	recoveryStore
	runnerStore
	actionStore
	logicStore
	retentionStore
	gitStore
}

// dispatchStore is the dispatcher's: marking tasks sent, taking a send
// back, and telling the user why an instance waits.
type dispatchStore interface {
	TaskMarkDispatched(ctx context.Context, ds []model.Dispatch) (ok []bool, err error)
	TaskResetDispatch(ctx context.Context, id int64, host string) (bool, error)
	InstanceSetReasons(ctx context.Context, reasons map[int64]string) error
}

// reportStore is the task event service's: workers' reports, applied in
// batches.
type reportStore interface {
	TaskApplyReports(ctx context.Context, rs []model.Report) (out []model.ReportOutcome, err error)
}

// publishStore is the event publisher's, with its webhooks' and alerts'.
type publishStore interface {
	EventAppended() <-chan struct{}
	EventCursorNew(ctx context.Context) (store.EventCursor, error)
	EventPrune(ctx context.Context, before time.Time, keep int64) (int64, error)
	EventPublishFrom(ctx context.Context, c *store.EventCursor, limit int) ([]model.Event, error)
	webhookStore
	alertStore
}

// webhookStore is the webhook deliveries'.
type webhookStore interface {
	EventList(ctx context.Context, after int64, f model.EventFilter, limit int) ([]model.Event, error)
	SubscriptionList(ctx context.Context) ([]model.Subscription, error)
	SubscriptionRecordDelivery(ctx context.Context, subID int64, d model.Delivery, done bool) error
}

// alertStore is the alerter's: it reads events and instances, and keeps
// its own queue of alerts.
type alertStore interface {
	AlertAdd(ctx context.Context, as []model.Alert, cursor int64) ([]model.Alert, error)
	AlertAttempt(ctx context.Context, id int64, state, lastErr string, next time.Time) error
	AlertCursor(ctx context.Context) (int64, error)
	AlertDue(ctx context.Context, now time.Time, limit int) ([]model.Alert, error)
	AlertChannelGet(ctx context.Context, name string) (model.AlertChannel, error)
	GitBindingGet(ctx context.Context, project string) (model.GitBinding, error)
	ScheduleGet(ctx context.Context, project, workflow string) (model.Schedule, error)
	InstanceGet(ctx context.Context, id int64) (model.WorkflowInstance, error)
	EventList(ctx context.Context, after int64, f model.EventFilter, limit int) ([]model.Event, error)
	InstanceUnfinished(ctx context.Context) ([]model.WorkflowInstance, error)
	// forecast.Reader: the projected end of a run with a deadline
	TaskHistory(ctx context.Context, project, workflow string, before int64, runs int) ([]model.TaskSample, error)
	InstanceTasksNow(ctx context.Context, id int64) ([]model.TaskNow, error)
}

// scheduleStore is the cron scheduler's: due schedules and backfills, fired
// in fenced transactions.
type scheduleStore interface {
	ScheduleDue(ctx context.Context, upTo time.Time, after store.ScheduleKey, limit int) ([]model.Schedule, error)
	ScheduleNextFire(ctx context.Context, t time.Time) (time.Time, bool, error)
	ScheduleFireOne(ctx context.Context, sc model.Schedule, f store.Firing) ([]model.WorkflowInstance, error)
	ScheduleFireBatch(ctx context.Context, fires []store.ScheduleFire) ([]store.FireResult, error)
	CalendarFor(ctx context.Context, project, name string) (model.Calendar, error)
	BackfillList(ctx context.Context, f store.BackfillFilter) ([]model.Backfill, error)
	BackfillSubmit(ctx context.Context, b model.Backfill, n int) ([]model.WorkflowInstance, error)
	BackfillEnd(ctx context.Context, b model.Backfill, state model.BackfillState, reason string) error
}

// writeStore is the runners' shared writer's.
type writeStore interface {
	WriteConcurrency() int
	TaskWriteRunnerBatch(ctx context.Context, attempts []store.AttemptWrite, ends []store.InstanceEnd) error
}

// groupStore is the task groups' capacity reader's.
type groupStore interface {
	TaskGroupList(ctx context.Context) ([]model.TaskGroup, error)
}

// recoveryStore is what a term's start reads and fixes: instances to adopt,
// tasks that workers hold, tasks on workers that left.
type recoveryStore interface {
	InstanceAdoptUnfinished(ctx context.Context, host string) ([]model.WorkflowInstance, error)
	TaskInFlight(ctx context.Context) ([]model.TaskInstance, error)
	TaskOnHost(ctx context.Context, host string) ([]model.TaskInstance, error)
	TaskNeedFaultTolerance(ctx context.Context, ids []int64, host string) ([]int64, error)
	TaskList(ctx context.Context, workflowInstanceID int64) ([]model.TaskInstance, error)
	TaskSetStates(ctx context.Context, ids []int64, from []model.TaskState, to model.TaskState) ([]int64, error)
}

// actionStore is what the term's operator actions use beside the runners'
// slice (runnerenv.go): state changes, history, and who may use what.
type actionStore interface {
	TaskGet(ctx context.Context, id int64) (model.TaskInstance, error)
	InstanceGet(ctx context.Context, id int64) (model.WorkflowInstance, error)
	InstanceSetState(ctx context.Context, id int64, state model.WorkflowState) error
	TaskSetStates(ctx context.Context, ids []int64, from []model.TaskState, to model.TaskState) ([]int64, error)
	InstanceHistoryAdd(ctx context.Context, e model.HistoryEntry) (model.HistoryEntry, error)
	InstanceEndUnstarted(ctx context.Context, id int64, at time.Time) (model.WorkflowInstance, bool, error)
	InstanceReopen(ctx context.Context, id int64, from []model.WorkflowState, newRun bool, host string, version int) (model.WorkflowInstance, error)
	DatasourceUsable(ctx context.Context, a model.Author, name, project string) (bool, error)
	DatasourceGet(ctx context.Context, name string) (model.Datasource, error)
	WorkflowVersionAuthor(ctx context.Context, defID int64) (model.Author, error)
	GrantAuthorLevel(ctx context.Context, a model.Author, project string) (string, error)
	SettingInt(ctx context.Context, name string, def int64) (int64, error)
	TaskGroupUsable(ctx context.Context, a model.Author, name, project string) (bool, error)
}

// logicStore is the master-run task types' (sub_workflow, dependent).
type logicStore interface {
	TaskStartOnMaster(ctx context.Context, id int64, message string, at time.Time) (bool, error)
	TaskEndOnMaster(ctx context.Context, id int64, state model.TaskState, outputs map[string]string, message string, end time.Time) (bool, error)
	TaskSetMessage(ctx context.Context, id int64, message string) error
	InstanceRunsIn(ctx context.Context, project, workflow, task string, from, to time.Time) ([]store.RunSeen, error)
	InstanceOutputs(ctx context.Context, id int64) (map[string]string, error)
	ActionRequest(ctx context.Context, req model.ActionRequest) (model.ActionResult, error)
	InstanceStartChild(ctx context.Context, req store.ChildRequest) (store.ChildStart, error)
	InstanceGet(ctx context.Context, id int64) (model.WorkflowInstance, error)
	TaskGet(ctx context.Context, id int64) (model.TaskInstance, error)
	SettingInt(ctx context.Context, name string, def int64) (int64, error)
	WorkflowVersionAuthor(ctx context.Context, defID int64) (model.Author, error)
	GrantAuthorLevel(ctx context.Context, a model.Author, project string) (string, error)
}

// erase hides the view's type behind TermStore so that a Master holds one
// field whatever store it was built with.
func erase[T TermStore](st Store[T]) Store[TermStore] { return erased[T]{st} }

type erased[T TermStore] struct{ Store[T] }

func (e erased[T]) Term(epoch int64) TermStore { return e.Store.Term(epoch) }
func (e erased[T]) TermFenced(epoch int64, fenced func()) TermStore {
	return e.Store.TermFenced(epoch, fenced)
}
