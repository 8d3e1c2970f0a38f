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
// dependent: the term's logicTasks, master/logictasks.go): Start begins
// attempt ti (written submitted) and, when it ends, delivers its result to
// the runner's mailbox like a worker's (r.events.Put or term.deliver, after
// persisting it). Start is called on the runner's goroutine and must not
// block; an error fails the attempt with its text. Cancel ends or holds
// what Start began, as how says (stop or kill: killed; pause: paused, to
// continue on resume; timeout: failed); it reports the end the same way.
//
// Start is also how a new leader, or a resume, takes up an attempt it finds
// submitted, dispatched or running in the DB (rebuild): it must continue
// what that attempt began (the same child instance), never begin a second.
// Cancel may likewise come to a new leader with no Start before it (a
// rebuild finishing a pause or stop): it works from what the DB holds.
//
// launch and cancel are the only callers; the hook is the term's
// logicTasks unless Master.logic replaces it (tests).
type masterTasks interface {
	Start(ctx context.Context, r *runner, ti *model.TaskInstance) error
	Cancel(ctx context.Context, r *runner, ti *model.TaskInstance, how cancelHow)
}

// cancelHow is why a master-run attempt is cancelled (the types' master
// face takes it as it is).
type cancelHow = tasktype.CancelReason

const (
	cancelStop    = tasktype.CancelStop    // a stop of the instance, or a kill of the task: it ends killed
	cancelPause   = tasktype.CancelPause   // a pause: it ends paused and continues on resume
	cancelTimeout = tasktype.CancelTimeout // it ran past its timeout (fail, warn_fail): it ends failed
)

// hook is the masterTasks that runs this runner's master-placed types.
func (r *runner) hook() masterTasks { return r.env.masterTasks() }

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
		if def.Decide != nil {
			err = fmt.Errorf("task type %s is decided as it is written; attempt %d cannot be relaunched", t.Type, t.Attempt)
		} else {
			err = r.hook().Start(ctx, r, t)
		}
		if err != nil {
			r.failSubmitted(ctx, t, err)
			continue
		}
		// It runs now as far as the runner is concerned: kills and halts
		// cancel it, and its timeout is watched here (no worker enforces it).
		if t.State.Finished() {
			continue
		}
		if t.StartTime == nil {
			now := time.Now().UTC()
			t.StartTime = &now
		}
		t.State = model.TaskRunning
		r.watchTimeout(t)
	}
	r.queue(ctx, work...)
}

// failSubmitted fails an attempt still submitted that cannot run, with why
// on the instance.
func (r *runner) failSubmitted(ctx context.Context, t *model.TaskInstance, why error) {
	r.log.Warn("task cannot run; failing it", zap.String("task", t.Name), zap.Int64("task_instance_id", t.ID), zap.Error(why))
	now := time.Now().UTC()
	if leaderWrite(ctx, r.log, "fail task that cannot run", func() error {
		_, err := r.env.runnerStore().TaskSetStates(ctx, []int64{t.ID}, []model.TaskState{model.TaskSubmitted}, model.TaskFailed)
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

// cancel ends (or, pausing, holds) a started attempt where it runs:
// masterTasks cancels a master type's; the worker kills any other on a stop
// or kill, and under a pause a worker's task runs to its end.
func (r *runner) cancel(ctx context.Context, t *model.TaskInstance, how cancelHow) {
	switch {
	case r.inMaster(t):
		r.hook().Cancel(ctx, r, t, how)
	case how == cancelStop:
		r.killOnWorker(ctx, t)
	}
}
