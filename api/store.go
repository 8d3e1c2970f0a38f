package api

import (
	"context"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// The API's view of the database, declared here where it is used; each
// group is one entity's handlers', and the narrow ones are for the parts
// built apart from the server (streams, the settings cache, the definition
// cache, Bootstrap, ClusterView). *store.Store provides them all
// (store_test.go asserts it does).

// Store is everything the handlers use.
type Store interface {
	authStore
	projectStore
	gitStore
	workflowStore
	instanceStore
	taskStore
	scheduleStore
	triggerStore
	alertStore
	resourceStore
	subscriptionStore
	streamStore
	settingsStore
	auditStore
	retentionStore
	planStore
	ClusterStore
	admissionStore
	promotionStore
}

// planStore is impact plans (plans.go).
type planStore interface {
	PlanSnapshot(ctx context.Context, root int64, down plan.Downstream) (plan.Snapshot, error)
	PlanSnapshotStart(ctx context.Context, t store.PlanTarget, down plan.Downstream) (plan.Snapshot, int64, int, error)
	PlanCreate(ctx context.Context, projectID, root int64, p plan.Plan, by string) (store.Plan, error)
	PlanGet(ctx context.Context, id int64) (store.Plan, error)
	PlanApply(ctx context.Context, id int64, by string, now time.Time) (store.Plan, error)
}

// authStore is users, tokens and project grants.
type authStore interface {
	BootstrapStore
	UserGet(ctx context.Context, name string) (model.User, error)
	UserList(ctx context.Context) ([]model.User, error)
	UserUpdate(ctx context.Context, name string, ch model.UserChange) (out model.User, revoked int64, err error)
	TokenCreate(ctx context.Context, t model.Token) (model.Token, error)
	TokenAuthenticate(ctx context.Context, hash string, at time.Time) (model.User, model.Token, error)
	TokenList(ctx context.Context, userID int64, kind string) ([]model.Token, error)
	TokenDelete(ctx context.Context, userID, id int64) error
	TokenDeleteByHash(ctx context.Context, hash string) error
	GrantPut(ctx context.Context, project, user, level, by string) error
	GrantList(ctx context.Context, project string, userID int64) ([]model.Grant, error)
	GrantLevels(ctx context.Context, userID int64) (map[int64]string, error)
}

// BootstrapStore is what Bootstrap needs: whether any user exists, and the
// first admin's creation.
type BootstrapStore interface {
	UserCount(ctx context.Context) (int64, error)
	UserCreate(ctx context.Context, name, role, passwordHash string) (model.User, error)
}

// projectStore is projects.
type projectStore interface {
	ProjectCreateOwned(ctx context.Context, name, description, tenant string, ownerID int64, ownerName string) (p model.Project, err error)
	ProjectGet(ctx context.Context, name string) (model.Project, error)
	ProjectList(ctx context.Context) ([]model.Project, error)
}

// gitStore is projects' Git bindings and their syncs.
type gitStore interface {
	GitBindingPut(ctx context.Context, b model.GitBinding) (out model.GitBinding, created bool, err error)
	GitBindingGet(ctx context.Context, project string) (model.GitBinding, error)
	GitBindingDelete(ctx context.Context, project string) error
	GitSyncApplyCommit(ctx context.Context, project, author string, c store.GitCommit) ([]store.GitSyncApplied, error)
	GitSyncRefused(ctx context.Context, project, commit, file, reason string) error
	GitOrigin(ctx context.Context, project, name string) (string, error)
	GitOriginSet(ctx context.Context, project, name, path string) error
	GitFileOrigin(ctx context.Context, project, kind, name string) (string, error)
	GitFileOriginSet(ctx context.Context, project, kind, name, path string) error
}

// workflowStore is workflow definitions and their versions.
type workflowStore interface {
	defStore
	WorkflowPutAs(ctx context.Context, project, author string, w *spec.Workflow) (def model.WorkflowDefinition, created bool, err error)
	WorkflowGet(ctx context.Context, project, name string, version int) (model.WorkflowDefinition, error)
	WorkflowList(ctx context.Context, project string) ([]model.WorkflowDefinition, error)
	WorkflowVersions(ctx context.Context, project, name string) ([]model.WorkflowDefinition, error)
	WorkflowPage(ctx context.Context, project string, pg store.NamePage) ([]model.WorkflowDefinition, bool, error)
	WorkflowDelete(ctx context.Context, project, name string) error
	WorkflowVersionOfCommit(ctx context.Context, project, name, commit string) (model.WorkflowDefinition, error)
	VersionFacts(ctx context.Context, defID, projectID int64, name string) (commit string, latest int, err error)
}

// defStore is the parsed-definition cache's.
type defStore interface {
	WorkflowDefinition(ctx context.Context, id int64) (model.WorkflowDefinition, error)
}

// instanceStore is runs: their creation, reads, pages, waits and actions.
type instanceStore interface {
	InstanceCreateRun(ctx context.Context, req store.RunRequest) (model.WorkflowInstance, error)
	InstanceGet(ctx context.Context, id int64) (model.WorkflowInstance, error)
	InstanceList(ctx context.Context, f store.InstanceFilter) ([]model.WorkflowInstance, int64, error)
	InstanceHistory(ctx context.Context, instanceID int64) ([]model.HistoryEntry, error)
	ActionRequest(ctx context.Context, req model.ActionRequest) (model.ActionResult, error)
	InstanceTasks(ctx context.Context, id int64, limit, offset int) (store.TaskPage, error)
	InstanceOutputTasks(ctx context.Context, id int64) ([]model.TaskInstance, error)
	InstanceLatestRows(ctx context.Context, id int64) (int, error)
	InstancePreviousEnds(ctx context.Context, id int64, attempts map[string]int) (map[string]time.Time, error)
	InstanceQueueRanks(ctx context.Context, id int64, page []model.TaskInstance) (map[int64]int, error)
	InstanceUnsettled(ctx context.Context, id int64) (store.Unsettled, error)
	InstanceWaitEnd(id int64) (<-chan struct{}, func())
}

// taskStore is task instances across runs.
type taskStore interface {
	TaskFind(ctx context.Context, f store.TaskFilter) ([]store.ListedTask, int64, error)
	TaskGet(ctx context.Context, id int64) (model.TaskInstance, error)
	TaskList(ctx context.Context, workflowInstanceID int64) ([]model.TaskInstance, error)
	TaskQueuedAhead(ctx context.Context, id int64, p int) (int, error)
	// forecast.Reader: a running instance's projected end
	TaskHistory(ctx context.Context, project, workflow string, before int64, runs int) ([]model.TaskSample, error)
	InstanceTasksNow(ctx context.Context, id int64) ([]model.TaskNow, error)
}

// scheduleStore is schedules and backfills.
type scheduleStore interface {
	SchedulePut(ctx context.Context, sc model.Schedule, ifVersion *int64) (out model.Schedule, created bool, err error)
	ScheduleGet(ctx context.Context, project, workflow string) (model.Schedule, error)
	ScheduleDelete(ctx context.Context, project, workflow string) error
	ScheduleList(ctx context.Context, project string) ([]model.Schedule, error)
	SchedulePage(ctx context.Context, project string, after store.ScheduleName, prefix string, limit int) ([]model.Schedule, bool, error)
	ScheduleFires(ctx context.Context, project string, id int64, f store.FireFilter) ([]model.ScheduleFire, bool, error)
	ScheduleCompensate(ctx context.Context, project string, id int64, req store.CompensateRequest) ([]store.Compensation, error)
	BackfillCreate(ctx context.Context, b model.Backfill) (model.Backfill, error)
	BackfillGet(ctx context.Context, id int64) (model.Backfill, error)
	BackfillList(ctx context.Context, f store.BackfillFilter) ([]model.Backfill, error)
	BackfillStop(ctx context.Context, id int64, by string) (model.Backfill, error)
}

// triggerStore is workflows' webhook triggers and their deliveries.
type triggerStore interface {
	TriggerCreate(ctx context.Context, t model.Trigger) (model.Trigger, error)
	TriggerGet(ctx context.Context, project, workflow, name string) (model.Trigger, error)
	TriggerByID(ctx context.Context, id int64) (model.Trigger, error)
	TriggerList(ctx context.Context, project, workflow string) ([]model.Trigger, error)
	TriggerUpdate(ctx context.Context, project, workflow, name string, ch store.TriggerChange) (model.Trigger, error)
	TriggerDelete(ctx context.Context, project, workflow, name string) error
	TriggerDeliveries(ctx context.Context, triggerID, before int64, limit int) ([]model.TriggerDelivery, error)
	TriggerRefuse(ctx context.Context, f store.TriggerRefusal) (model.TriggerDelivery, error)
	TriggerDeliver(ctx context.Context, d store.TriggerDelivery) (model.TriggerDelivery, error)
	DatasetList(ctx context.Context, project string) ([]model.Dataset, error)
	DatasetGet(ctx context.Context, project, name string, limit int) (model.DatasetDetail, error)
	DatasetEmit(ctx context.Context, e store.DatasetEmit) (model.DatasetEvent, bool, error)
	DatasetEmitPlan(ctx context.Context, e store.DatasetEmit) (plan.Emit, map[string][]string, error)
	DatasetFires(ctx context.Context, project, workflow string, limit int) ([]model.DatasetFire, error)
	RunDatasets(ctx context.Context, runID int64) (model.RunDatasets, error)
}

// alertStore is alert channels and the alerts sent through them.
type alertStore interface {
	AlertChannelPut(ctx context.Context, c model.AlertChannel) (out model.AlertChannel, created bool, err error)
	AlertChannelGet(ctx context.Context, name string) (model.AlertChannel, error)
	AlertChannelList(ctx context.Context) ([]model.AlertChannel, error)
	AlertChannelDelete(ctx context.Context, name string) error
	AlertChannelMissing(ctx context.Context, names []string) ([]string, error)
	AlertList(ctx context.Context, f store.AlertFilter) ([]model.Alert, error)
	AlertGet(ctx context.Context, id int64) (model.Alert, error)
	AlertAddTest(ctx context.Context, channel string) (model.Alert, error)
}

// resourceStore is datasources and task groups, with the projects each is
// granted to.
type resourceStore interface {
	CalendarPut(ctx context.Context, c model.Calendar, ifVersion *int64) (out model.Calendar, created bool, err error)
	CalendarGet(ctx context.Context, project, name string) (model.Calendar, error)
	CalendarFor(ctx context.Context, project, name string) (model.Calendar, error)
	CalendarList(ctx context.Context, project string) ([]model.Calendar, error)
	CalendarDelete(ctx context.Context, project, name string) error
	CalendarUsers(ctx context.Context, project, name string) ([]string, error)
	ScheduleSetNext(ctx context.Context, sc model.Schedule, next *time.Time) error
	DatasourcePut(ctx context.Context, d model.Datasource) (out model.Datasource, created bool, err error)
	DatasourceGet(ctx context.Context, name string) (model.Datasource, error)
	DatasourceList(ctx context.Context) ([]model.Datasource, error)
	DatasourceDelete(ctx context.Context, name string) error
	DatasourceUsers(ctx context.Context, name string) ([]string, error)
	DatasourceProjects(ctx context.Context) (map[int64][]string, error)
	DatasourceSetProjects(ctx context.Context, name string, projects []string, by string) error
	DatasourceGranted(ctx context.Context, name, project string) (bool, error)
	TaskGroupCreate(ctx context.Context, name string, capacity int, description string) (model.TaskGroup, error)
	TaskGroupGet(ctx context.Context, name string) (model.TaskGroup, error)
	TaskGroupList(ctx context.Context) ([]model.TaskGroup, error)
	TaskGroupResize(ctx context.Context, name string, capacity int) (model.TaskGroup, error)
	TaskGroupDelete(ctx context.Context, name string) error
	TaskGroupProjects(ctx context.Context) (map[int64][]string, error)
	TaskGroupSetProjects(ctx context.Context, name string, projects []string, by string) error
	TaskGroupGranted(ctx context.Context, name, project string) (bool, error)
}

// subscriptionStore is webhook subscriptions and their deliveries.
type subscriptionStore interface {
	SubscriptionPut(ctx context.Context, sub model.Subscription) (out model.Subscription, created bool, err error)
	SubscriptionGet(ctx context.Context, name string) (model.Subscription, error)
	SubscriptionList(ctx context.Context) ([]model.Subscription, error)
	SubscriptionDelete(ctx context.Context, name string) error
	SubscriptionDeliveries(ctx context.Context, name string, limit int) ([]model.Delivery, error)
}

// streamStore is the event streams': events after a sequence number, and
// the tokens and grants that decide who still may read them.
type streamStore interface {
	EventLastSeq(ctx context.Context) (int64, error)
	EventList(ctx context.Context, after int64, f model.EventFilter, limit int) ([]model.Event, error)
	TokenLive(ctx context.Context, ids []int64, at time.Time) (map[int64]store.LiveToken, error)
	ProjectViewable(ctx context.Context, users []int64) (map[int64][]string, error)
}

// settingsStore is the runtime settings; settingsCache reads with Settings.
type settingsStore interface {
	SettingList(ctx context.Context) ([]store.Setting, error)
	SettingPut(ctx context.Context, name, value string) (store.Setting, error)
}

// auditStore is the audit log.
type auditStore interface {
	AuditFinish(ctx context.Context, p *store.PendingAudit, status int, outcome string) error
	AuditList(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error)
}

// ClusterStore is ClusterView's: the current term and what workers hold.
type ClusterStore interface {
	TermCurrentInfo(ctx context.Context) (store.TermInfo, error)
	TaskInFlight(ctx context.Context) ([]model.TaskInstance, error)
}
