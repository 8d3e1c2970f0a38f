package master

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/subworkflow"
)

// sub_workflow in the master: the attempt gets its child run in one fenced
// transaction (store.InstanceStartChild: a new run, the child of an earlier attempt
// continued, or, after a failover, the one it has), and ends when the child
// ends (childEnded, from the child's runner through logicTasks.ended, or at
// once when the child had already ended).

func (l *logicTasks) startChild(ctx context.Context, mt masterTask) {
	sp := mt.Spec.(*subworkflow.Spec)
	project, wf := subworkflow.Split(sp.Workflow)
	if project == "" {
		project = mt.Inst.Project
	}
	if why, err := l.wall(ctx, mt.Inst.Project, mt.Inst.DefinitionID, tasktype.Ref{Project: project, Workflow: wf, Version: sp.Version, Child: true}); err != nil || why != "" {
		if err != nil {
			why = "check the grant on the child's project: " + err.Error()
		}
		l.end(ctx, mt.Inst.ID, mt.Task.ID, model.TaskFailed, nil, why)
		return
	}
	ps, err := subworkflow.ChildParams(mt.Params, mt.Inputs.Params)
	if err != nil {
		l.end(ctx, mt.Inst.ID, mt.Task.ID, model.TaskFailed, nil, err.Error())
		return
	}
	req := store.ChildRequest{ParentInstanceID: mt.Inst.ID, ParentTaskID: mt.Task.ID, Project: project, Workflow: wf,
		Version: sp.Version, Params: ps, ScheduleTime: mt.Inst.ScheduleTime, Timezone: mt.Inst.Timezone,
		Continue: func(c model.WorkflowState) model.ActionKind {
			return model.ActionKind(subworkflow.Continue(c, mt.Rerun))
		}}
	if mt.Inst.StartTime != nil {
		req.AsOf = *mt.Inst.StartTime
	}
	req.Limits = l.childLimits(ctx)
	failpoint.Hit(failpoint.BeforeStartChild)
	var cs store.ChildStart
	var missing error // the child workflow (or version) is gone, or a quota is reached: the attempt fails
	if leaderWrite(ctx, l.log, "start child run", func() error {
		var err error
		cs, err = l.store.InstanceStartChild(ctx, req)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrLimit) {
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
		l.wake() // claim its start command now
		return
	case cs.Action != "":
		log.Info("child run continued", zap.String("action", string(cs.Action)))
		l.wake()
		return
	case cs.Attached && (cs.Child.State == model.WorkflowPaused || cs.Child.State == model.WorkflowStopped):
		// A paused parent resumed: its attempt resumes the same child.
		if _, err := l.store.ActionRequest(ctx, model.ActionRequest{InstanceID: cs.Child.ID, Action: model.ActionResume, By: "master"}); err != nil && !isConflict(err) {
			log.Warn("resume child run", zap.Error(err))
		}
		l.wake()
		return
	}
	mt.Task.ChildInstanceID = cs.Child.ID
	if cs.Child.State.Finished() {
		l.childEnded(ctx, cs.Child.ID) // it ended while no master looked
	}
}

// childLimits are the quotas on a run's tree of children (settings
// table; a failed read is logged and the defaults apply).
func (l *logicTasks) childLimits(ctx context.Context) store.ChildLimits {
	depth, err := l.store.SettingInt(ctx, model.SettingSubWorkflowDepth, model.DefaultSubWorkflowDepth)
	if err != nil {
		l.log.Warn("read sub_workflow quota; using the default", zap.Error(err))
	}
	runs, err := l.store.SettingInt(ctx, model.SettingInstancesPerRun, model.DefaultInstancesPerRun)
	if err != nil {
		l.log.Warn("read sub_workflow quota; using the default", zap.Error(err))
	}
	return store.ChildLimits{Depth: depth, Instances: runs}
}

// childEnded ends the parent attempt of a child run that ended, with the
// child's outputs.
func (l *logicTasks) childEnded(ctx context.Context, childID int64) {
	c, err := l.store.InstanceGet(ctx, childID)
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
		if outs, err = l.store.InstanceOutputs(ctx, c.ID); err != nil {
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
	action := model.ActionStop
	switch how {
	case cancelPause:
		action = model.ActionPause
	case cancelTimeout:
		l.end(ctx, mt.Inst.ID, mt.Task.ID, model.TaskFailed, nil, mt.timedOut())
	}
	id := mt.Task.ChildInstanceID
	if id == 0 {
		cur, err := l.store.TaskGet(ctx, mt.Task.ID)
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
	_, err := l.store.ActionRequest(ctx, model.ActionRequest{InstanceID: id, Action: action, By: "master"})
	switch {
	case err == nil:
		l.wake()
	case isConflict(err):
		l.childEnded(ctx, id) // it ended meanwhile (or is ending): follow it
	default:
		l.log.Warn("pass "+string(action)+" to child run", zap.Int64("child_instance_id", id), zap.Error(err))
	}
}
