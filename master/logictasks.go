package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/tasks/dependent"
	"github.com/beluga-scheduler/beluga/tasks/subworkflow"
)

// masterTask is one attempt of a master-run task as logicTasks sees it,
// taken from the runner on its goroutine (the Task pointer's id and type are
// all that is read elsewhere).
type masterTask struct {
	Inst    model.WorkflowInstance
	Task    *model.TaskInstance
	Spec    tasktype.Spec
	Params  map[string]string // the task's declared params, as in its spec
	Inputs  tasktype.Inputs
	Rerun   bool          // the runner is rerunning the instance (a child is rerun too)
	Timeout time.Duration // the task's timeout (0: none)
}

func (r *runner) masterTask(t *model.TaskInstance) masterTask {
	return masterTask{Inst: r.inst, Task: t, Spec: r.def.types[t.Name].spec, Params: r.def.tasks[t.Name].Params,
		Inputs: r.inputs(t), Rerun: r.mode == store.ActionRerun, Timeout: r.def.tasks[t.Name].Timeout.D()}
}

// timedOut is why an attempt that ran past its timeout failed, as a
// worker words it.
func (mt masterTask) timedOut() string { return "timed out after " + mt.Timeout.String() }

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

// Start is the masterTasks hook's (master/logic.go).
func (l *logicTasks) Start(ctx context.Context, r *runner, ti *model.TaskInstance) error {
	switch ti.Type {
	case subworkflow.Type.Name:
		l.startChild(ctx, r.masterTask(ti))
	case dependent.Type.Name:
		l.startWait(ctx, r.masterTask(ti))
	default:
		return fmt.Errorf("task type %s not supported", ti.Type)
	}
	return nil
}

// Cancel is the masterTasks hook's (master/logic.go).
func (l *logicTasks) Cancel(ctx context.Context, r *runner, ti *model.TaskInstance, how cancelHow) {
	switch ti.Type {
	case subworkflow.Type.Name:
		l.cancelChild(ctx, r.masterTask(ti), how)
	case dependent.Type.Name:
		l.cancelWait(ctx, r.masterTask(ti), how)
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
