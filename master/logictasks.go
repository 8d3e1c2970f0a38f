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
		Inputs: r.inputs(t), Rerun: r.mode == model.ActionRerun, Timeout: r.def.tasks[t.Name].Timeout.D()}
}

// TaskInstanceID makes a masterTask the tasktype.Attempt a type's master
// face hands back to the host.
func (mt masterTask) TaskInstanceID() int64 { return mt.Task.ID }

// timedOut is why an attempt that ran past its timeout failed, as a
// worker words it.
func (mt masterTask) timedOut() string { return "timed out after " + mt.Timeout.String() }

// logicTasks is the term's masterTasks: sub_workflow (subworkflow.go) and
// dependent (dependent.go). Its goroutine owns the waiting dependents and
// takes the ends of instances (ended), which finish a parent's task and
// wake dependents at once.
type logicTasks struct {
	store logicStore // the term's fenced view
	// taskEnded is term.taskEnded: an attempt's end goes the one way every
	// task's end does; wake is the command consumer's Notify (a child run
	// was written).
	taskEnded func(workflowID int64, ev taskEvent)
	wake      func()
	log       *zap.Logger
	life      startstop.Base

	ends   *mailbox[model.WorkflowInstance]
	adds   *mailbox[*waiter]
	drops  *mailbox[int64]
	waiter map[int64]*waiter // by task instance id; the goroutine's own
}

func newLogicTasks(log *zap.Logger, st logicStore, ended func(int64, taskEvent), wake func()) *logicTasks {
	l := &logicTasks{store: st, taskEnded: ended, wake: wake, log: log.Named("logic"), ends: newMailbox[model.WorkflowInstance](),
		adds: newMailbox[*waiter](), drops: newMailbox[int64](), waiter: map[int64]*waiter{}}
	l.life.Name, l.life.Log = "logic tasks", l.log
	return l
}

// Start is the masterTasks hook's (master/logic.go): the type's master
// face picks the service (host) that carries the attempt.
func (l *logicTasks) Start(ctx context.Context, r *runner, ti *model.TaskInstance) error {
	def, ok := tasktype.Lookup(ti.Type)
	if !ok || def.Start == nil {
		return fmt.Errorf("task type %s not supported", ti.Type)
	}
	def.Start(ctx, host{l}, r.masterTask(ti))
	return nil
}

// Cancel is the masterTasks hook's (master/logic.go).
func (l *logicTasks) Cancel(ctx context.Context, r *runner, ti *model.TaskInstance, how cancelHow) {
	if def, ok := tasktype.Lookup(ti.Type); ok && def.Cancel != nil {
		def.Cancel(ctx, host{l}, r.masterTask(ti), how)
	}
}

// host is the leader's services as the types' master face sees them
// (tasktype.Host): child runs (subworkflow.go) and waits (dependent.go).
// The attempts it is handed are the masterTasks Start and Cancel made.
type host struct{ l *logicTasks }

func (h host) StartChild(ctx context.Context, a tasktype.Attempt) {
	h.l.startChild(ctx, a.(masterTask))
}
func (h host) StartWait(ctx context.Context, a tasktype.Attempt) { h.l.startWait(ctx, a.(masterTask)) }
func (h host) CancelChild(ctx context.Context, a tasktype.Attempt, why tasktype.CancelReason) {
	h.l.cancelChild(ctx, a.(masterTask), why)
}
func (h host) CancelWait(ctx context.Context, a tasktype.Attempt, why tasktype.CancelReason) {
	h.l.cancelWait(ctx, a.(masterTask), why)
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
	if leaderWrite(ctx, l.log, "end master task", func() error {
		var err error
		ok, err = l.store.TaskEndOnMaster(ctx, taskID, state, outputs, why, now)
		return err
	}) != written || !ok {
		return
	}
	ev := taskEvent{TaskInstanceID: taskID, State: state, EndTime: now, Outputs: outputs}
	if state == model.TaskFailed {
		ev.Why = why
	}
	l.taskEnded(instID, ev) // it holds no place; the one path all the same
}

// isConflict reports a refused action (the child is not in a state for it).
func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }

var _ masterTasks = (*logicTasks)(nil)

var _ tasktype.Host = host{}
