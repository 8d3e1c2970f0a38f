package master

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// masterTasks runs the tasks of Master-placed types (sub_workflow,
// dependent) in the leader instead of dispatching them. It is the one hook
// the runner calls for them:
//
//   - Start, where a ready attempt would be queued for the dispatcher (and
//     for an attempt found submitted or running on rebuild: it re-attaches,
//     it never starts the work twice);
//   - Cancel, where the runner would kill (stop) or hold (pause) a task on
//     a worker.
//
// Both run on the runner's goroutine. The attempt's end comes back later as
// a taskEvent into the runner's mailbox (term.deliver), exactly like a
// worker's result, after it is in the DB.
type masterTasks interface {
	Start(ctx context.Context, mt masterTask)
	Cancel(ctx context.Context, mt masterTask, how store.ActionKind)
}

// masterTask is one attempt of a master-run task as the hook sees it.
type masterTask struct {
	Inst   model.WorkflowInstance
	Task   *model.TaskInstance
	Spec   tasktype.Spec
	Params map[string]string // the task's declared params, as in its spec
	Inputs tasktype.Inputs
	Rerun  bool // the runner is rerunning the instance (a child is rerun too)
}

// isMaster reports whether task name runs in the master.
func (r *runner) isMaster(name string) bool {
	ty, ok := r.def.types[name]
	return ok && ty.def.Placement == tasktype.Master
}

func (r *runner) masterTask(t *model.TaskInstance) masterTask {
	return masterTask{Inst: r.inst, Task: t, Spec: r.def.types[t.Name].spec, Params: r.def.tasks[t.Name].Params,
		Inputs: r.inputs(t), Rerun: r.mode == store.ActionRerun}
}

// startMasterTasks hands the master-run attempts among ts to the term's
// masterTasks and returns the rest, to be dispatched.
func (r *runner) startMasterTasks(ctx context.Context, ts []*model.TaskInstance) []*model.TaskInstance {
	rest := ts[:0:0]
	for _, t := range ts {
		if !r.isMaster(t.Name) {
			rest = append(rest, t)
			continue
		}
		now := time.Now().UTC()
		t.State = model.TaskRunning
		if t.StartTime == nil {
			t.StartTime = &now
		}
		r.t.logic.Start(ctx, r.masterTask(t))
	}
	return rest
}

// cancelMasterTask stops or pauses a master-run attempt; false when t is
// not one (the caller handles it as a worker's task).
func (r *runner) cancelMasterTask(ctx context.Context, t *model.TaskInstance, how store.ActionKind) bool {
	if !r.isMaster(t.Name) {
		return false
	}
	r.t.logic.Cancel(ctx, r.masterTask(t), how)
	return true
}

// holdMasterTasks pauses the running master-run attempts when the instance
// pauses (a worker's task would run to its end; a child or a wait is held
// instead, and continues on resume).
func (r *runner) holdMasterTasks(ctx context.Context) {
	for _, t := range r.latest {
		if t.State == model.TaskRunning && r.isMaster(t.Name) {
			r.cancelMasterTask(ctx, t, store.ActionPause)
		}
	}
}

// logicTasks is the term's masterTasks: sub_workflow (subworkflow.go) and
// dependent (dependent.go). Its goroutine owns the waiting dependents and
// takes the ends of instances (ended), which finish a parent's task and
// wake dependents at once.
type logicTasks struct {
	t    *term
	log  *zap.Logger
	life startstop.Base

	ends   *mailbox[model.WorkflowInstance]
	adds   *mailbox[*waiter]
	drops  *mailbox[int64]
	waiter map[int64]*waiter // by task instance id; the goroutine's own
}

func newLogicTasks(t *term) *logicTasks {
	l := &logicTasks{t: t, log: t.log.Named("logic"), ends: newMailbox[model.WorkflowInstance](),
		adds: newMailbox[*waiter](), drops: newMailbox[int64](), waiter: map[int64]*waiter{}}
	l.life.Name, l.life.Log = "logic tasks", l.log
	return l
}

func (l *logicTasks) Start(ctx context.Context, mt masterTask) {
	switch mt.Task.Type {
	case "sub_workflow":
		l.startChild(ctx, mt)
	case "dependent":
		l.startWait(ctx, mt)
	default:
		l.end(ctx, mt.Inst.ID, mt.Task.ID, model.TaskFailed, nil, "no master executor for type "+mt.Task.Type)
	}
}

func (l *logicTasks) Cancel(ctx context.Context, mt masterTask, how store.ActionKind) {
	switch mt.Task.Type {
	case "sub_workflow":
		l.cancelChild(ctx, mt, how)
	case "dependent":
		l.cancelWait(ctx, mt, how)
	}
}

// ended is called wherever an instance's end is committed: a parent's
// task follows its child, and dependents waiting on it look again.
func (l *logicTasks) ended(inst model.WorkflowInstance) { l.ends.Put(inst) }

func (l *logicTasks) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.ends.Ready():
		case <-l.adds.Ready():
		case <-l.drops.Ready():
		case <-timer.C:
		}
		for _, id := range l.drops.Drain() {
			delete(l.waiter, id)
		}
		now := time.Now()
		for _, w := range l.adds.Drain() {
			l.waiter[w.task.ID] = w
			w.next = now // look at once
		}
		for _, inst := range l.ends.Drain() {
			if inst.Parent != nil {
				l.childEnded(ctx, inst.ID)
			}
			for _, w := range l.waiter {
				if w.awaits(inst) {
					w.next = now
				}
			}
		}
		var soonest time.Time
		for id, w := range l.waiter {
			if !w.next.After(now) {
				if l.check(ctx, w) {
					delete(l.waiter, id)
					continue
				}
				w.next = time.Now().Add(w.spec.Interval())
			}
			if soonest.IsZero() || w.next.Before(soonest) {
				soonest = w.next
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !soonest.IsZero() {
			timer.Reset(time.Until(soonest))
		}
	}
}

func (l *logicTasks) StartService(ctx context.Context) error {
	if _, err := l.life.Begin(ctx); err != nil {
		return err
	}
	l.life.Go(l.run)
	return nil
}

// service adapts logicTasks to the startstop contract (its Start is the
// masterTasks hook's).
type logicService struct{ l *logicTasks }

func (s logicService) Start(ctx context.Context) error { return s.l.StartService(ctx) }
func (s logicService) Stop()                           { _ = s.l.life.Stop(nil) }

// end records a master-run attempt's end and tells its runner, once: when
// the attempt had already moved on (a racing end, a stop), nothing is
// delivered.
func (l *logicTasks) end(ctx context.Context, instID, taskID int64, state model.TaskState, outputs map[string]string, why string) {
	now := time.Now().UTC()
	var ok bool
	if leaderWrite(ctx, l.log, "end master task", l.t.fenced, func() error {
		var err error
		ok, err = l.t.store.EndMasterTask(ctx, taskID, state, outputs, why, now)
		return err
	}) != written || !ok {
		return
	}
	ev := taskEvent{TaskInstanceID: taskID, State: state, EndTime: now, Outputs: outputs}
	if state == model.TaskFailed {
		ev.Why = why
	}
	l.t.deliver(instID, ev)
}

// isConflict reports a refused action (the child is not in a state for it).
func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }

var _ masterTasks = (*logicTasks)(nil)
