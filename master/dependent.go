package master

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/dependent"
)

// dependent in the master: the attempt is marked running and handed to the
// logicTasks goroutine as a waiter. It looks at the runs it waits for when
// added, whenever an instance it waits for ends (logicTasks.ended), and
// every check_interval (the fallback, and what makes it right after a
// failover: the rebuilt runner starts it again and it looks at once).

// waiter is one waiting dependent attempt; owned by the logicTasks goroutine.
type waiter struct {
	instID  int64
	project string // the waiting run's project, for deps that name none
	defID   int64  // the waiting run's workflow version, whose author's grants count
	task    *model.TaskInstance
	spec    *dependent.Spec
	base    time.Time // schedule time, else start
	loc     *time.Location
	next    time.Time // next look
	message string    // last recorded
}

// awaits reports whether inst is a run of a workflow w waits for.
func (w *waiter) awaits(inst model.WorkflowInstance) bool {
	for _, d := range w.spec.WaitFor {
		if d.Workflow == inst.Workflow && (d.Project == inst.Project || (d.Project == "" && w.project == inst.Project)) {
			return true
		}
	}
	return false
}

func (l *logicTasks) startWait(ctx context.Context, mt masterTask) {
	sp := mt.Spec.(*dependent.Spec)
	base, loc := dependent.Base(mt.Inst.ScheduleTime, mt.Inst.StartTime, mt.Inst.CreatedAt, mt.Inst.Timezone)
	var ok bool
	if leaderWrite(ctx, l.log, "start dependent", func() error {
		var err error
		ok, err = l.store.TaskStartOnMaster(ctx, mt.Task.ID, "waiting: first look", time.Now().UTC())
		return err
	}) != written || !ok {
		return
	}
	l.adds.Put(&waiter{instID: mt.Inst.ID, project: mt.Inst.Project, defID: mt.Inst.DefinitionID, task: mt.Task, spec: sp, base: base, loc: loc})
}

func (l *logicTasks) cancelWait(ctx context.Context, mt masterTask, how cancelHow) {
	l.drops.Put(mt.Task.ID)
	to, why := model.TaskKilled, string(how)+" while waiting"
	switch how {
	case cancelPause:
		to = model.TaskPaused // looks again on resume
	case cancelTimeout:
		to, why = model.TaskFailed, mt.timedOut()
	}
	l.end(ctx, mt.Inst.ID, mt.Task.ID, to, nil, why)
}

// check looks at what w waits for and ends it when the verdict is in; it
// returns true when w is done (ended, or gone).
func (l *logicTasks) check(ctx context.Context, w *waiter) bool {
	st := make([]dependent.Status, len(w.spec.WaitFor))
	var notes []string
	waitingOn := ""
	for i, d := range w.spec.WaitFor {
		project := d.Project
		if project == "" {
			project = w.project
		}
		if why, err := l.wall(ctx, w.project, w.defID, tasktype.Ref{Project: project, Workflow: d.Workflow}); err != nil {
			l.log.Warn("check the grant on a dependency's project", zap.Int64("task_instance_id", w.task.ID), zap.Error(err))
			return false // looks again at its interval
		} else if why != "" {
			l.end(ctx, w.instID, w.task.ID, model.TaskFailed, nil, fmt.Sprintf("wait_for[%d]: %s", i, why))
			return true
		}
		from, to, err := dependent.Window(d.Date, w.base, w.loc)
		if err != nil {
			l.end(ctx, w.instID, w.task.ID, model.TaskFailed, nil, err.Error())
			return true
		}
		runs, err := l.store.InstanceRunsIn(ctx, project, d.Workflow, d.Task, from, to)
		if errors.Is(err, store.ErrNotFound) { // its project is gone: nothing can satisfy it
			l.end(ctx, w.instID, w.task.ID, model.TaskFailed, nil, err.Error())
			return true
		}
		if err != nil {
			l.log.Warn("read runs a dependent waits for", zap.Int64("task_instance_id", w.task.ID), zap.Error(err))
			return false // looks again at its interval
		}
		seen := tally(runs, d.Task != "")
		st[i] = dependent.Of(seen, w.spec.OnFailed)
		note := fmt.Sprintf("%s [%s, %s): %d run(s), %d succeeded, %d failed, %d other",
			d.Describe(w.project), from.Format(time.RFC3339), to.Format(time.RFC3339), len(runs), seen.Succeeded, seen.Failed, seen.Other)
		notes = append(notes, note)
		if st[i] != dependent.Succeeded && waitingOn == "" {
			waitingOn = d.Describe(w.project)
		}
	}
	switch dependent.Verdict(w.spec.Relation, st) {
	case dependent.Succeeded:
		l.end(ctx, w.instID, w.task.ID, model.TaskSucceeded, nil, "satisfied: "+strings.Join(notes, "; "))
		return true
	case dependent.Failed:
		l.end(ctx, w.instID, w.task.ID, model.TaskFailed, nil, "a run it waits for failed: "+strings.Join(notes, "; "))
		return true
	}
	msg := "waiting for " + waitingOn + "; seen: " + strings.Join(notes, "; ")
	if msg != w.message {
		w.message = msg
		_ = l.store.TaskSetMessage(ctx, w.task.ID, msg) // best effort; a fence reaches the term from the store
	}
	return false
}

// tally counts runs by outcome: of the run, or of its task (a task that
// failed counts as failed only once its run ended, since a retry may come).
func tally(runs []store.RunSeen, byTask bool) dependent.Seen {
	var s dependent.Seen
	for _, r := range runs {
		switch {
		case !byTask && r.State == model.WorkflowSucceeded:
			s.Succeeded++
		case !byTask && r.State == model.WorkflowFailed:
			s.Failed++
		case byTask && r.Task.Success():
			s.Succeeded++
		case byTask && r.State.Finished() && (r.Task == model.TaskFailed || r.Task == model.TaskKilled || r.State == model.WorkflowFailed):
			s.Failed++
		default:
			s.Other++
		}
	}
	return s
}
