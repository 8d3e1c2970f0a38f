package master

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master/flow"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// Operator actions (stop, pause, kill, force_success on a live instance)
// reach the instance's runner through its mailbox, so they are serialized
// with task events by the one goroutine that owns the instance. Actions on
// a finished instance (resume, rerun, recover_failed, force_success) reopen
// it in place and start a runner that rebuilds from the DB in that mode.

// note records something that happened to the instance (a timeout warning,
// what an operator action did) in its history.
func (r *runner) note(ctx context.Context, action string, taskInstanceID int64, detail string) {
	_, err := r.t.store.AddHistory(ctx, store.HistoryEntry{InstanceID: r.inst.ID, TaskInstanceID: taskInstanceID,
		Action: store.ActionKind(action), By: "master", Detail: detail})
	if err != nil {
		r.t.checkFenced(err)
		r.log.Warn("record history", zap.String("action", action), zap.Error(err))
	}
}

// stopping reports whether the instance is being paused or stopped: then
// nothing new runs.
func (r *runner) stopping() bool { return r.halt != "" }

// stopOnTimeout stops the instance because it ran past its timeout.
func (r *runner) stopOnTimeout(ctx context.Context) {
	r.onAction(ctx, store.Action{InstanceID: r.inst.ID, Action: store.ActionStop, By: "timeout"})
}

func (r *runner) onAction(ctx context.Context, a store.Action) {
	switch a.Action {
	case store.ActionStop, store.ActionPause:
		if r.halt == store.ActionStop || r.halt == a.Action {
			r.note(ctx, string(a.Action), 0, "already "+halting(r.halt))
			return
		}
		r.setHalt(a.Action)
		state := model.WorkflowReadyPause
		if a.Action == store.ActionStop {
			state = model.WorkflowReadyStop
		}
		if err := r.t.store.SetInstanceState(ctx, r.inst.ID, state); err != nil {
			r.t.checkFenced(err)
		}
		r.haltQueued(ctx)
		if a.Action == store.ActionStop {
			for _, t := range r.latest {
				if !r.inMaster(t) && (t.State == model.TaskDispatched || t.State == model.TaskRunning) {
					r.killOnWorker(ctx, t)
				}
			}
		}
		r.note(ctx, string(a.Action), 0, fmt.Sprintf("%s: %d task(s) still running", halting(a.Action), r.flow.Active()))
	case store.ActionKill:
		t := r.byID(a.TaskInstanceID)
		if t == nil {
			r.note(ctx, "kill", a.TaskInstanceID, "ignored: not the latest attempt of a task of this instance")
			return
		}
		switch t.State {
		case model.TaskSubmitted, model.TaskDelayed:
			if r.inMaster(t) && t.State == model.TaskSubmitted {
				r.cancel(ctx, t, cancelStop) // begun in the master: its owner ends it
				break
			}
			ts := []*model.TaskInstance{t}
			r.killRaced(ctx, ts, r.setStates(ctx, ts, []model.TaskState{model.TaskSubmitted, model.TaskDelayed}, model.TaskKilled))
		case model.TaskDispatched, model.TaskRunning:
			r.cancel(ctx, t, cancelStop)
		default:
			r.note(ctx, "kill", t.ID, "ignored: task is "+string(t.State))
			return
		}
		r.note(ctx, "kill", t.ID, "kill sent")
	case store.ActionForceSuccess:
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
	case store.ActionForceStart:
		t := r.byID(a.TaskInstanceID)
		if t == nil || t.State != model.TaskSubmitted {
			r.note(ctx, "force_start", a.TaskInstanceID, "ignored: not a queued latest attempt")
			return
		}
		r.t.disp.ForceStart(t.ID)
		r.note(ctx, "force_start", t.ID, "let through task group "+t.TaskGroup+" once")
	default:
		r.note(ctx, string(a.Action), a.TaskInstanceID, "ignored: the instance is running")
	}
}

// haltQueued takes back what has not reached a worker: queued and delayed
// tasks become paused (pause: they start on resume) or killed (stop).
func (r *runner) haltQueued(ctx context.Context) {
	to := model.TaskPaused
	if r.halt == store.ActionStop {
		to = model.TaskKilled
	}
	var ts []*model.TaskInstance
	how := cancelPause
	if r.halt == store.ActionStop {
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
	if r.halt == store.ActionStop {
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
	leaderWrite(ctx, r.log, "set task states", r.t.fenced, func() error {
		var err error
		changed, err = r.t.store.SetTaskStates(ctx, ids, from, to)
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
		if cur, err := r.t.store.GetTaskInstance(ctx, t.ID); err == nil &&
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
		if cur, err := r.t.store.GetTaskInstance(ctx, id); err == nil {
			host = cur.Host
		}
	}
	r.t.kills.Add(1) // on the runner's goroutine, which term.stop waits for before kills.Wait
	go func() {
		defer r.t.kills.Done()
		kctx, cancel := context.WithTimeout(r.t.ctx, queryTimeout)
		defer cancel()
		reply, err := r.t.m.client.Request(kctx, host, message.Kill{TaskInstanceID: id})
		if kr, ok := reply.(message.KillResult); err == nil && ok && !kr.Found {
			changed, err := r.t.store.SetTaskStates(kctx, []int64{id}, []model.TaskState{model.TaskDispatched, model.TaskRunning}, model.TaskKilled)
			if err == nil && len(changed) == 1 {
				r.t.disp.Finished(id)
				r.events.Put(taskEvent{TaskInstanceID: id, State: model.TaskKilled, EndTime: time.Now().UTC()})
			}
		} else if err != nil {
			r.log.Warn("kill not delivered; the task ends with its worker or is failed over", logging.TaskID(id),
				zap.String("worker", host), zap.Error(err))
		}
	}()
}

// forgive undoes the failure of name after force_success and lets its
// downstream run.
func (r *runner) forgive(name string) { r.apply(r.flow.Forgive(name)) }

// setHalt records a pause or stop, for the runner and its machine.
// halting names a pause or stop in progress ("pausing", "stopping").
func halting(a store.ActionKind) string {
	if a == store.ActionPause {
		return "pausing"
	}
	return "stopping"
}

func (r *runner) setHalt(a store.ActionKind) {
	r.halt = a
	if a == store.ActionStop {
		r.flow.Halt(flow.Stop)
	} else {
		r.flow.Halt(flow.Pause)
	}
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
func (t *term) reopen(a store.Action) {
	var from []model.WorkflowState
	newRun := false
	switch a.Action {
	case store.ActionResume:
		from = []model.WorkflowState{model.WorkflowPaused, model.WorkflowStopped}
	case store.ActionRerun:
		from = []model.WorkflowState{model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped, model.WorkflowPaused}
		newRun = true
	case store.ActionRecoverFailed:
		from = []model.WorkflowState{model.WorkflowFailed, model.WorkflowStopped, model.WorkflowPaused}
	case store.ActionForceSuccess:
		changed, err := t.store.SetTaskStates(t.ctx, []int64{a.TaskInstanceID}, []model.TaskState{model.TaskFailed, model.TaskKilled}, model.TaskForcedSuccess)
		if err != nil || len(changed) == 0 {
			t.history(a, fmt.Sprintf("ignored: task is not failed or killed (%v)", err))
			return
		}
		from = []model.WorkflowState{model.WorkflowFailed, model.WorkflowStopped}
	case store.ActionStop, store.ActionPause:
		// Asked before any master started the instance: its start command
		// was dropped, so end it here as asked.
		inst, err := t.store.GetWorkflowInstance(t.ctx, a.InstanceID)
		end := map[model.WorkflowState]model.WorkflowState{model.WorkflowReadyStop: model.WorkflowStopped, model.WorkflowReadyPause: model.WorkflowPaused}
		if to, ok := end[inst.State]; err == nil && ok {
			if err := t.store.FinishWorkflowInstance(t.ctx, inst.ID, to, time.Now().UTC(), string(to)+" before it started"); err != nil {
				t.checkFenced(err)
			}
			t.history(a, string(to)+" before any task started")
			t.cons.Notify() // a queued run may start now
			inst.State = to
			t.logic.ended(inst)
			return
		}
		t.history(a, "ignored: the instance is not running")
		return
	default:
		t.history(a, "ignored: the instance is not running")
		return
	}
	inst, err := t.store.ReopenInstance(t.ctx, a.InstanceID, from, newRun, t.m.cfg.Host)
	if err != nil {
		t.checkFenced(err)
		t.history(a, "ignored: "+err.Error())
		return
	}
	if err := t.startInstanceMode(inst, a.Action); err != nil {
		t.log.Error("reopen instance", logging.Instance(inst.ID, inst.Project, inst.Workflow), zap.Error(err))
	}
	t.history(a, "instance running again")
}

func (t *term) history(a store.Action, detail string) {
	if _, err := t.store.AddHistory(t.ctx, store.HistoryEntry{InstanceID: a.InstanceID, TaskInstanceID: a.TaskInstanceID,
		Action: a.Action, By: "master", Detail: detail}); err != nil {
		t.checkFenced(err)
	}
}

// route hands an action to the instance's runner, or reopens the instance.
func (t *term) route(a store.Action) {
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
