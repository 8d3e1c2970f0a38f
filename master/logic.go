package master

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// masterTasks runs the master-placed types that finish later (sub_workflow,
// dependent): Start begins attempt ti (written submitted) and, when it
// ends, delivers its result to the runner's mailbox like a worker's
// (r.events.Put(taskEvent{TaskInstanceID: ti.ID, State: ..., Outputs: ...}),
// after persisting it). Start is called on the runner's goroutine and must
// not block; an error fails the attempt with its text. Cancel ends what
// Start began (a stop or kill of the task); it reports the task killed the
// same way.
//
// Start is also how a new leader, or a resume, takes up an attempt it finds
// submitted, dispatched or running in the DB (rebuild): it must continue
// what that attempt began (the same child instance), never begin a second.
//
// The hook: a type plugs in by setting Master.logic (one value per master)
// to something that switches on ti.Type; launch and cancel are the only
// callers.
type masterTasks interface {
	Start(ctx context.Context, r *runner, ti *model.TaskInstance) error
	Cancel(ctx context.Context, r *runner, ti *model.TaskInstance)
}

// launch hands attempts written submitted to whatever runs them, by their
// type's placement: worker types go to the dispatcher; branching master
// types (conditions, switch) were decided as they were written (flushOnce)
// and never get here; any other master type goes to masterTasks, and
// without one the attempt fails as not supported.
func (r *runner) launch(ctx context.Context, ts ...*model.TaskInstance) {
	var work []*model.TaskInstance
	for _, t := range ts {
		def := r.def.types[t.Name].def
		if def.Placement != tasktype.Master {
			work = append(work, t)
			continue
		}
		var err error
		switch mt := r.t.m.logic; {
		case def.Decide != nil:
			err = fmt.Errorf("task type %s is decided as it is written; attempt %d cannot be relaunched", t.Type, t.Attempt)
		case mt == nil:
			err = fmt.Errorf("task type %s not supported", t.Type)
		default:
			err = mt.Start(ctx, r, t)
		}
		if err != nil {
			r.failSubmitted(ctx, t, err)
		}
	}
	r.queue(ctx, work...)
}

// failSubmitted fails an attempt still submitted that cannot run, with why
// on the instance.
func (r *runner) failSubmitted(ctx context.Context, t *model.TaskInstance, why error) {
	r.log.Warn("task cannot run; failing it", zap.String("task", t.Name), zap.Int64("task_instance_id", t.ID), zap.Error(why))
	now := time.Now().UTC()
	if leaderWrite(ctx, r.log, "fail task that cannot run", r.t.fenced, func() error {
		_, err := r.t.store.SetTaskStates(ctx, []int64{t.ID}, []model.TaskState{model.TaskSubmitted}, model.TaskFailed)
		return err
	}) != written {
		return
	}
	r.onTask(taskEvent{TaskInstanceID: t.ID, State: model.TaskFailed, EndTime: now, Why: why.Error()})
}

// decide runs a branching task (conditions, switch) as it is written: it
// ends succeeded with its choice recorded in its outputs (BranchNext), or
// failed; it returns why it failed ("" when it succeeded).
func (r *runner) decide(t *model.TaskInstance, now time.Time) string {
	ty := r.def.types[t.Name]
	in := r.inputs(t)
	in.Upstreams = map[string]string{}
	for u, st := range r.flow.Upstreams(t.Name) {
		in.Upstreams[u] = string(st)
	}
	b, err := ty.def.Decide(ty.spec, in)
	if err != nil {
		return err.Error()
	}
	outs := maps.Clone(b.Outputs)
	if outs == nil {
		outs = map[string]string{}
	}
	outs[tasktype.BranchNext] = strings.Join(b.Next, ",")
	t.State, t.StartTime, t.EndTime, t.Outputs = model.TaskSucceeded, &now, &now, outs
	return ""
}

// inMaster reports whether attempt t is run by masterTasks (a master type
// that finishes later) rather than by a worker or decided as written.
func (r *runner) inMaster(t *model.TaskInstance) bool {
	def := r.def.types[t.Name].def
	return def.Placement == tasktype.Master && def.Decide == nil
}

// cancel ends a started attempt where it runs: masterTasks cancels a
// master type's, the worker kills any other (stop, kill, timeout stop).
func (r *runner) cancel(ctx context.Context, t *model.TaskInstance) {
	if r.inMaster(t) {
		if r.t.m.logic != nil {
			r.t.m.logic.Cancel(ctx, r, t)
		}
		return
	}
	r.killOnWorker(ctx, t)
}
