package master

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/tasks/subworkflow"
)

// sub_workflow in the master: the attempt gets its child run in one fenced
// transaction (store.StartChild: a new run, the child of an earlier attempt
// continued, or, after a failover, the one it has), and ends when the child
// ends (childEnded, from the child's runner through logicTasks.ended, or at
// once when the child had already ended).

func (l *logicTasks) startChild(ctx context.Context, mt masterTask) {
	sp := mt.Spec.(*subworkflow.Spec)
	project, wf := subworkflow.Split(sp.Workflow)
	if project == "" {
		project = mt.Inst.Project
	}
	ps, err := subworkflow.ChildParams(mt.Params, mt.Inputs.Params)
	if err != nil {
		l.end(ctx, mt.Inst.ID, mt.Task.ID, model.TaskFailed, nil, err.Error())
		return
	}
	req := store.ChildRequest{ParentInstanceID: mt.Inst.ID, ParentTaskID: mt.Task.ID, Project: project, Workflow: wf,
		Version: sp.Version, Params: ps, ScheduleTime: mt.Inst.ScheduleTime, Timezone: mt.Inst.Timezone,
		Continue: func(c model.WorkflowState) store.ActionKind {
			return store.ActionKind(subworkflow.Continue(c, mt.Rerun))
		}}
	if mt.Inst.StartTime != nil {
		req.AsOf = *mt.Inst.StartTime
	}
	failpoint.Hit(failpoint.BeforeStartChild)
	var cs store.ChildStart
	var missing error // the child workflow (or version) is gone: the attempt fails
	if leaderWrite(ctx, l.log, "start child run", l.t.fenced, func() error {
		var err error
		cs, err = l.t.store.StartChild(ctx, req)
		if errors.Is(err, store.ErrNotFound) {
			missing, err = err, nil
		}
		return err
	}) != written {
		return // fenced or stopping: the next leader re-attaches
	}
	if missing != nil {
		l.end(ctx, mt.Inst.ID, mt.Task.ID, model.TaskFailed, nil, missing.Error())
		return
	}
	failpoint.Hit(failpoint.AfterStartChild)
	log := l.log.With(zap.Int64("task_instance_id", mt.Task.ID), zap.Int64("child_instance_id", cs.Child.ID))
	switch {
	case cs.Created:
		log.Info("child run created")
		l.t.cons.Notify() // claim its start command now
		return
	case cs.Action != "":
		log.Info("child run continued", zap.String("action", string(cs.Action)))
		l.t.cons.Notify()
		return
	case cs.Attached && (cs.Child.State == model.WorkflowPaused || cs.Child.State == model.WorkflowStopped):
		// A paused parent resumed: its attempt resumes the same child.
		if _, err := l.t.store.RequestAction(ctx, store.ActionRequest{InstanceID: cs.Child.ID, Action: store.ActionResume, By: "master"}); err != nil && !isConflict(err) {
			log.Warn("resume child run", zap.Error(err))
		}
		l.t.cons.Notify()
		return
	}
	mt.Task.ChildInstanceID = cs.Child.ID
	if cs.Child.State.Finished() {
		l.childEnded(ctx, cs.Child.ID) // it ended while no master looked
	}
}

// childEnded ends the parent attempt of a child run that ended, with the
// child's outputs.
func (l *logicTasks) childEnded(ctx context.Context, childID int64) {
	c, err := l.t.store.GetWorkflowInstance(ctx, childID)
	if err != nil || c.Parent == nil {
		return
	}
	state, ok := subworkflow.TaskState(c.State)
	if !ok {
		return // still running (a resume reopened it meanwhile)
	}
	var outs map[string]string
	why := fmt.Sprintf("child run %d %s", c.ID, c.State)
	if state == model.TaskSucceeded {
		if outs, err = l.t.store.InstanceOutputs(ctx, c.ID); err != nil {
			l.log.Warn("read child outputs", zap.Int64("child_instance_id", c.ID), zap.Error(err))
			return // the parent's rebuild or the next end retries
		}
	} else if c.Reason != "" {
		why += ": " + c.Reason
	}
	failpoint.Hit(failpoint.BeforeEndParentTask)
	l.end(ctx, c.Parent.InstanceID, c.Parent.TaskInstanceID, state, outs, why)
}

// cancelChild stops or pauses the child; the parent attempt ends as the
// child does (killed, paused). A child already ended ends the attempt now.
// At its timeout the attempt fails at once and its child is stopped.
func (l *logicTasks) cancelChild(ctx context.Context, mt masterTask, how cancelHow) {
	action := store.ActionStop
	switch how {
	case cancelPause:
		action = store.ActionPause
	case cancelTimeout:
		l.end(ctx, mt.Inst.ID, mt.Task.ID, model.TaskFailed, nil, mt.timedOut())
	}
	id := mt.Task.ChildInstanceID
	if id == 0 {
		cur, err := l.t.store.GetTaskInstance(ctx, mt.Task.ID)
		if err != nil {
			return
		}
		id = cur.ChildInstanceID
	}
	if id == 0 { // never got its child: nothing to wait for
		to := model.TaskKilled
		if how == cancelPause {
			to = model.TaskPaused
		}
		l.end(ctx, mt.Inst.ID, mt.Task.ID, to, nil, string(how)+" before its child started")
		return
	}
	_, err := l.t.store.RequestAction(ctx, store.ActionRequest{InstanceID: id, Action: action, By: "master"})
	switch {
	case err == nil:
		l.t.cons.Notify()
	case isConflict(err):
		l.childEnded(ctx, id) // it ended meanwhile (or is ending): follow it
	default:
		l.log.Warn("pass "+string(action)+" to child run", zap.Int64("child_instance_id", id), zap.Error(err))
	}
}
