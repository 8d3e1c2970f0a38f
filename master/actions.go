package master

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/master/flow"
)

// Operator actions (stop, pause, kill, force_success on a live instance)
// reach the instance's runner through its mailbox, so they are serialized
// with task events by the one goroutine that owns the instance. Actions on
// a finished instance (resume, rerun, recover_failed, force_success) reopen
// it in place and start a runner that rebuilds from the DB in that mode.

// note records something that happened to the instance (a timeout warning,
// what an operator action did) in its history.
func (r *runner) note(ctx context.Context, action string, taskInstanceID int64, detail string) {
	_, err := r.env.runnerStore().InstanceHistoryAdd(ctx, model.HistoryEntry{InstanceID: r.inst.ID, TaskInstanceID: taskInstanceID,
		Action: model.ActionKind(action), By: "master", Detail: detail})
	if err != nil {
		r.log.Warn("record history", zap.String("action", action), zap.Error(err))
	}
}

// stopping reports whether the instance is being paused or stopped: then
// nothing new runs.
func (r *runner) stopping() bool { return r.flow.Halting() != flow.Running }

// stopOnTimeout stops the instance because it ran past its timeout.
func (r *runner) stopOnTimeout(ctx context.Context) {
	r.onAction(ctx, model.Action{InstanceID: r.inst.ID, Action: model.ActionStop, By: "timeout"})
}

func (r *runner) onAction(ctx context.Context, a model.Action) {
	switch a.Action {
	case model.ActionStop, model.ActionPause:
		if !r.flow.Halt(haltOf(a.Action)) {
			r.note(ctx, string(a.Action), 0, "already "+halting(r.flow.Halting()))
			return
		}
		state := model.WorkflowReadyPause
		if a.Action == model.ActionStop {
			state = model.WorkflowReadyStop
		}
		// Best effort (the halt goes on in memory either way); a refusal for
		// a newer term reaches the term from its store view (store.OnFenced).
		_ = r.env.runnerStore().InstanceSetState(ctx, r.inst.ID, state)
		r.haltQueued(ctx)
		if a.Action == model.ActionStop {
			for _, t := range r.latest {
				if !r.inMaster(t) && (t.State == model.TaskDispatched || t.State == model.TaskRunning) {
					r.killOnWorker(ctx, t)
				}
			}
		}
		r.note(ctx, string(a.Action), 0, fmt.Sprintf("%s: %d task(s) still running", halting(r.flow.Halting()), r.flow.Active()))
	case model.ActionKill:
		t := r.byID(a.TaskInstanceID)
		if t == nil {
			r.note(ctx, "kill", a.TaskInstanceID, "ignored: not the latest attempt of a task of this instance")
			return
		}
		switch flow.KillOf(t.State, r.inMaster(t)) {
		case flow.KillTakeBack:
			ts := []*model.TaskInstance{t}
			r.killRaced(ctx, ts, r.setStates(ctx, ts, []model.TaskState{model.TaskSubmitted, model.TaskDelayed}, model.TaskKilled))
		case flow.KillCancel:
			r.cancel(ctx, t, cancelStop) // on its worker, or by its owner in the master
		default:
			r.note(ctx, "kill", t.ID, "ignored: task is "+string(t.State))
			return
		}
		r.note(ctx, "kill", t.ID, "kill sent")
	case model.ActionForceSuccess:
		t := r.byID(a.TaskInstanceID)
		if t == nil || (t.State != model.TaskFailed && t.State != model.TaskKilled) {
			r.note(ctx, "force_success", a.TaskInstanceID, "ignored: not a failed or killed latest attempt")
			return
		}
		changed := r.setStates(ctx, []*model.TaskInstance{t}, []model.TaskState{model.TaskFailed, model.TaskKilled}, model.TaskForcedSuccess)
		if len(changed) == 1 {
			r.forgive(t.Name)
			r.note(ctx, "force_success", t.ID, "task counts as succeeded; downstream continues")
		}
	case model.ActionForceStart:
		t := r.byID(a.TaskInstanceID)
		if t == nil || t.State != model.TaskSubmitted {
			r.note(ctx, "force_start", a.TaskInstanceID, "ignored: not a queued latest attempt")
			return
		}
		r.env.forceStart(t.ID)
		r.note(ctx, "force_start", t.ID, "let through task group "+t.TaskGroup+" once")
	default:
		r.note(ctx, string(a.Action), a.TaskInstanceID, "ignored: the instance is running")
	}
}

// haltQueued takes back what has not reached a worker: queued and delayed
// tasks become paused (pause: they start on resume) or killed (stop).
func (r *runner) haltQueued(ctx context.Context) {
	to, stop := r.flow.HeldAs(), r.flow.Halting() == flow.Stop
	var ts []*model.TaskInstance
	how := cancelPause
	if stop {
		how = cancelStop
	}
	for _, t := range r.latest {
		if r.inMaster(t) && (t.State == model.TaskSubmitted || t.State == model.TaskDispatched || t.State == model.TaskRunning) {
			// Run in the master (masterTasks): a stop ends it there; a pause
			// holds it (a child run pauses, a dependent stops waiting) so
			// that it continues on resume.
			r.cancel(ctx, t, how)
			continue
		}
		if t.State == model.TaskSubmitted || t.State == model.TaskDelayed {
			ts = append(ts, t)
		}
	}
	changed := r.setStates(ctx, ts, []model.TaskState{model.TaskSubmitted, model.TaskDelayed}, to)
	if stop {
		r.killRaced(ctx, ts, changed)
	}
	// Pausing: a task that reached a worker meanwhile runs to its end.
}

// setStates moves tasks in DB and memory; each one that changed counts as
// finished for the runner. It returns the ids that changed; a task that
// moved meanwhile (a queued task was dispatched) is the caller's to handle.
func (r *runner) setStates(ctx context.Context, ts []*model.TaskInstance, from []model.TaskState, to model.TaskState) []int64 {
	if len(ts) == 0 {
		return nil
	}
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	var changed []int64
	leaderWrite(ctx, r.log, "set task states", func() error {
		var err error
		changed, err = r.env.runnerStore().TaskSetStates(ctx, ids, from, to)
		return err
	})
	for _, id := range changed {
		t := r.latest[r.names[id]]
		if to == model.TaskForcedSuccess {
			t.State = to
			metrics.Task(t.Type, to)
			continue
		}
		r.onTask(taskEvent{TaskInstanceID: id, State: to, EndTime: time.Now().UTC()})
	}
	return changed
}

// killRaced kills on their workers the tasks among ts that setStates did
// not change because they were dispatched in the meantime.
func (r *runner) killRaced(ctx context.Context, ts []*model.TaskInstance, changed []int64) {
	for _, t := range ts {
		if contains(changed, t.ID) {
			continue
		}
		if cur, err := r.env.runnerStore().TaskGet(ctx, t.ID); err == nil &&
			(cur.State == model.TaskDispatched || cur.State == model.TaskRunning) {
			t.Host = cur.Host
			r.killOnWorker(ctx, t)
		}
	}
}

// killOnWorker asks the task's worker to kill it; the worker reports it
// killed. A worker that does not hold it (the dispatch never arrived) has
// nothing to kill: the task is marked killed here, and a late ack is
// refused as foreign.
func (r *runner) killOnWorker(ctx context.Context, t *model.TaskInstance) {
	host, id := t.Host, t.ID
	if host == "" {
		if cur, err := r.env.runnerStore().TaskGet(ctx, id); err == nil {
			host = cur.Host
		}
	}
	// Started on the runner's goroutine, which term.stop waits for before
	// it waits for the kills.
	st, ended, wf := r.env.runnerStore(), r.env.taskEnded, r.inst.ID
	r.env.talker().kill(host, id, func(kctx context.Context) {
		changed, err := st.TaskSetStates(kctx, []int64{id}, []model.TaskState{model.TaskDispatched, model.TaskRunning}, model.TaskKilled)
		if err == nil && len(changed) == 1 {
			ended(wf, taskEvent{TaskInstanceID: id, State: model.TaskKilled, EndTime: time.Now().UTC()})
		}
	})
}

// forgive undoes the failure of name after force_success and lets its
// downstream run.
func (r *runner) forgive(name string) { r.apply(r.flow.Forgive(name)) }

// halting names a pause or stop in progress ("pausing", "stopping").
func halting(h flow.Halt) string {
	if h == flow.Pause {
		return "pausing"
	}
	return "stopping"
}

// haltOf is the machine's halt an operator action asks for.
func haltOf(a model.ActionKind) flow.Halt {
	if a == model.ActionStop {
		return flow.Stop
	}
	return flow.Pause
}

func (r *runner) byID(id int64) *model.TaskInstance {
	name, ok := r.names[id]
	if !ok || r.latest[name].ID != id {
		return nil
	}
	return r.latest[name]
}

func contains(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// reopen handles an action on an instance this term has no runner for: it
// was finished (or paused/stopped) when the action was asked.
func (t *term) reopen(a model.Action) {
	var from []model.WorkflowState
	newRun := false
	switch a.Action {
	case model.ActionResume:
		from = []model.WorkflowState{model.WorkflowPaused, model.WorkflowStopped}
	case model.ActionRerun:
		from = []model.WorkflowState{model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped, model.WorkflowPaused}
		newRun = true
	case model.ActionRecoverFailed:
		from = []model.WorkflowState{model.WorkflowFailed, model.WorkflowStopped, model.WorkflowPaused}
	case model.ActionForceSuccess:
		changed, err := t.store.TaskSetStates(t.ctx, []int64{a.TaskInstanceID}, []model.TaskState{model.TaskFailed, model.TaskKilled}, model.TaskForcedSuccess)
		if err != nil || len(changed) == 0 {
			t.history(a, fmt.Sprintf("ignored: task is not failed or killed (%v)", err))
			return
		}
		from = []model.WorkflowState{model.WorkflowFailed, model.WorkflowStopped}
	case model.ActionStop, model.ActionPause:
		// Asked before any master started the instance: its start command
		// was dropped, so end it here as asked. The action is claimed (its
		// command is gone): the end is written until it lands, else a DB
		// blip (a deadlock, an outage) left the run ready_stop for good,
		// with its schedule's or workflow's next run queued behind it.
		failpoint.Hit(failpoint.BeforeEndUnstarted)
		var inst model.WorkflowInstance
		ended := false
		if leaderWrite(t.ctx, t.log, "end a run halted before it started", func() error {
			var err error
			inst, ended, err = t.store.InstanceEndUnstarted(t.ctx, a.InstanceID, time.Now())
			return err
		}) != written {
			return // the term ended: the next one ends it (it adopts ready_stop and ready_pause runs)
		}
		if !ended {
			t.history(a, "ignored: the instance is not running")
			return
		}
		t.history(a, string(inst.State)+" before any task started")
		t.cons.Notify() // a queued run may start now
		t.logic.ended(inst)
		return
	default:
		t.history(a, "ignored: the instance is not running")
		return
	}
	inst, err := t.store.InstanceReopen(t.ctx, a.InstanceID, from, newRun, t.host, a.Version)
	if err != nil {
		t.history(a, "ignored: "+err.Error())
		return
	}
	if err := t.startInstanceMode(inst, a.Action); err != nil {
		t.log.Error("reopen instance", logging.Instance(inst.ID, inst.Project, inst.Workflow), zap.Error(err))
	}
	detail := "instance running again"
	if a.Version != 0 {
		detail += fmt.Sprintf(" as version %d", inst.Version)
	}
	t.history(a, detail)
}

// history records what an action did; best effort (a refusal for a newer
// term reaches the term from its store view).
func (t *term) history(a model.Action, detail string) {
	_, _ = t.store.InstanceHistoryAdd(t.ctx, model.HistoryEntry{InstanceID: a.InstanceID, TaskInstanceID: a.TaskInstanceID,
		Action: a.Action, By: "master", Detail: detail})
}

// route hands an action to the instance's runner, or reopens the instance.
func (t *term) route(a model.Action) {
	t.mu.Lock()
	r := t.runners[a.InstanceID]
	if r != nil {
		r.actions.Put(a) // under mu: a runner that exits drains these (see forget)
	}
	t.mu.Unlock()
	if r == nil {
		t.reopen(a)
	}
}
