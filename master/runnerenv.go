package master

import (
	"context"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
)

// runnerEnv is all a runner asks of the term that owns it; the runner
// holds this, not the term, so what it can reach is listed here. The term
// implements it (below). Every method is safe from the runner's goroutine
// and never blocks on another runner.
type runnerEnv interface {
	runnerStore() runnerStore
	// writeAttempts and writeEnd go through the shared writer (runnerwrites.go).
	writeAttempts(ctx context.Context, a store.AttemptWrite) error
	writeEnd(ctx context.Context, e store.InstanceEnd) error
	queueTasks(items ...*taskItem)
	forceStart(taskInstanceID int64)
	addDeadline(d deadline)
	taskEnded(workflowID int64, ev taskEvent)
	talker() workerTalker
	masterTasks() masterTasks
	sealBox() *secret.Box
	tasksRunAsServer() bool
	// codeRunsAsServer says whether a task of group would run as its
	// server's OS user (this standalone, or some live worker of the group),
	// and whether some live worker of the group isolates tasks.
	codeRunsAsServer(group string) (asServer, isolating bool)
	// instanceEnded wakes what waits for an instance's end: the command
	// consumer (a queued run), logic tasks (a parent, dependents) and, for
	// a backfill's run, the cron scheduler.
	instanceEnded(inst model.WorkflowInstance)
	runnerExited(r *runner)
	termOver() bool
}

// runnerStore is the part of the term's fenced store view a runner uses
// directly (its batched writes go through runnerEnv).
type runnerStore interface {
	TaskList(ctx context.Context, workflowInstanceID int64) ([]model.TaskInstance, error)
	TaskNeedFaultTolerance(ctx context.Context, ids []int64, host string) ([]int64, error)
	TaskSetStates(ctx context.Context, ids []int64, from []model.TaskState, to model.TaskState) ([]int64, error)
	TaskGet(ctx context.Context, id int64) (model.TaskInstance, error)
	InstanceHistoryAdd(ctx context.Context, e model.HistoryEntry) (model.HistoryEntry, error)
	InstanceSetState(ctx context.Context, id int64, state model.WorkflowState) error
	WorkflowVersionAuthor(ctx context.Context, defID int64) (model.Author, error)
	DatasourceUsable(ctx context.Context, a model.Author, name, project string) (bool, error)
	DatasourceGet(ctx context.Context, name string) (model.Datasource, error)
	TaskGroupUsable(ctx context.Context, a model.Author, name, project string) (bool, error)
	SettingInt(ctx context.Context, name string, def int64) (int64, error)
	ScheduleCalendar(ctx context.Context, scheduleID int64) (model.Calendar, bool, error)
}

// workerTalker is what a runner asks of workers (workers.go): whether one
// is live, which tasks it holds, and kills.
type workerTalker interface {
	live(host string) bool
	held(ctx context.Context, host string, ids []int64) (map[int64]bool, bool)
	kill(host string, id int64, notHeld func(ctx context.Context))
}

var (
	_ runnerEnv    = (*term)(nil)
	_ runnerStore  = (*store.Store)(nil)
	_ workerTalker = (*workers)(nil)
)

func (t *term) runnerStore() runnerStore { return t.store }
func (t *term) writeAttempts(ctx context.Context, a store.AttemptWrite) error {
	return t.writes.attempts(ctx, a)
}
func (t *term) writeEnd(ctx context.Context, e store.InstanceEnd) error {
	return t.writes.finish(ctx, e)
}
func (t *term) queueTasks(items ...*taskItem) { t.disp.Submit(items...) }
func (t *term) forceStart(id int64)           { t.disp.ForceStart(id) }
func (t *term) addDeadline(d deadline)        { t.wheel.Add(d) }
func (t *term) talker() workerTalker          { return t.workers }
func (t *term) sealBox() *secret.Box          { return t.box }
func (t *term) tasksRunAsServer() bool        { return t.asServer }
func (t *term) codeRunsAsServer(group string) (asServer, isolating bool) {
	asServer = t.asServer
	if asServer || t.reg == nil {
		return asServer, false
	}
	for _, n := range t.reg.Nodes(registry.RoleWorker) {
		if n.InGroup(group) {
			asServer = asServer || n.TasksRunAsServer
			isolating = isolating || !n.TasksRunAsServer
		}
	}
	return asServer, isolating
}
func (t *term) runnerExited(r *runner) { t.forget(r) }
func (t *term) termOver() bool         { return t.ctx.Err() != nil }

// masterTasks is the hook that runs master-placed types: the term's
// logicTasks unless Master.logic replaces it (tests).
func (t *term) masterTasks() masterTasks {
	if t.hook != nil {
		return t.hook
	}
	return t.logic
}

func (t *term) instanceEnded(inst model.WorkflowInstance) {
	t.cons.Notify()     // a queued run may start now
	t.logic.ended(inst) // its parent task and dependents waiting for it look now
	if inst.BackfillID != 0 {
		t.cron.Notify() // its backfill may submit the next time
	}
}
