package master

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/master/flow"
)

// rebuild restores the runner from the DB after a leader change, in place:
// same instance, the latest attempt of each task as recorded. Tasks a live
// worker still holds are waited for (the worker re-sends its reports to the
// new leader); tasks on a dead worker or unknown to their worker (never
// sent, or the worker restarted) become need_fault_tolerance and run again
// as a new attempt; submitted tasks are queued again; and downstream tasks
// whose upstreams all finished while no master was up are submitted.
func (r *runner) rebuild(ctx context.Context) bool {
	var rows []model.TaskInstance
	if !retry(ctx, r.log, "load task instances", func() error {
		var err error
		rows, err = r.env.runnerStore().TaskList(ctx, r.inst.ID)
		return err
	}) {
		return false
	}
	for i := range rows {
		t := &rows[i]
		if cur := r.latest[t.Name]; cur == nil || cur.Attempt < t.Attempt {
			r.latest[t.Name] = t
		}
		r.outputs = r.outputs || len(t.Outputs) > 0
	}
	ends := map[string]*model.TaskInstance{} // the attempt before the latest, for retry clocks
	for i := range rows {
		if t := &rows[i]; t.Attempt == r.latest[t.Name].Attempt-1 {
			ends[t.Name] = t
		}
	}
	switch r.inst.State {
	case model.WorkflowReadyPause:
		r.flow.Halt(flow.Pause) // its master died while pausing: finish the pause
	case model.WorkflowReadyStop:
		r.flow.Halt(flow.Stop)
	}
	switch r.mode {
	case model.ActionRerun:
		r.redo(r.graph.Nodes())
	case model.ActionRecoverFailed:
		var bad []string
		for name, t := range r.latest {
			// Only what failed the instance runs again (with everything
			// downstream of it, skipped tasks re-decided).
			if r.flow.Redone(name, t.State) {
				bad = append(bad, name)
			}
		}
		r.redo(r.graph.Descendants(bad...))
	}
	inflight := map[string][]*model.TaskInstance{}
	var requeue, unpause []*model.TaskInstance
	var again []string
	var inMaster []*model.TaskInstance // begun by masterTasks: they go on, like tasks on live workers
	for name, t := range r.latest {
		r.names[t.ID] = name
		if !r.graph.Has(name) {
			continue
		}
		next, _ := r.branch(t)
		// A failed attempt with retries left gets its next attempt here: the
		// term that wrote the failure may have ended before writing it.
		r.apply(r.flow.Restore(name, t.State, t.Attempt, t.RetryBase, next))
		switch flow.TakeUp(t.State, reopening(r.mode), r.inMaster(t), r.def.types[name].def.Decide != nil) {
		case flow.Continue:
			inMaster = append(inMaster, t) // masterTasks takes up the same attempt again (Start), or a halt cancels it
		case flow.Unpause:
			unpause = append(unpause, t)
		case flow.RunAnew:
			again = append(again, name)
		case flow.Delay:
			// The retry clock runs from the failed attempt's end, as written.
			at := time.Now()
			if prev := ends[name]; prev != nil {
				at = retryAt(prev, r.def.tasks[name].RetryInterval.D())
			}
			r.env.addDeadline(deadline{When: at, Kind: retryDue, WorkflowID: r.inst.ID, TaskInstanceID: t.ID})
		case flow.Requeue:
			requeue = append(requeue, t)
		case flow.Ask:
			inflight[t.Host] = append(inflight[t.Host], t)
			r.watchTimeout(t)
		}
	}
	for _, name := range again {
		r.apply(r.flow.RunAgain(name))
	}
	for host, ts := range inflight {
		lost := r.lostOn(ctx, host, ts)
		if len(lost) == 0 {
			continue
		}
		var changed []int64
		if leaderWrite(ctx, r.log, "fail over lost tasks", func() error {
			var err error
			changed, err = r.env.runnerStore().TaskNeedFaultTolerance(ctx, lost, host)
			return err
		}) != written {
			return false
		}
		for _, id := range changed {
			r.env.taskEnded(r.inst.ID, taskEvent{TaskInstanceID: id, State: model.TaskNeedFaultTolerance})
		}
	}
	// The ends just delivered (and any report that came meanwhile) are
	// taken now, before the halt below looks at what still runs.
	for _, ev := range r.events.Drain() {
		r.onTask(ev)
	}
	if len(unpause) > 0 {
		ids := make([]int64, len(unpause))
		for i, t := range unpause {
			ids[i] = t.ID
		}
		var changed []int64
		if leaderWrite(ctx, r.log, "resume paused tasks", func() error {
			var err error
			changed, err = r.env.runnerStore().TaskSetStates(ctx, ids, []model.TaskState{model.TaskPaused}, model.TaskSubmitted)
			return err
		}) != written {
			return false
		}
		for _, t := range unpause {
			if contains(changed, t.ID) {
				t.State = model.TaskSubmitted
				r.flow.Resubmit(t.Name)
				requeue = append(requeue, t)
			}
		}
	}
	if r.stopping() {
		// Finish the pause or stop its master began: nothing queued runs,
		// a stop kills what still runs, and master-run attempts are
		// cancelled (paused or stopped) where they run, not started again.
		r.haltQueued(ctx)
		if r.flow.Halting() == flow.Stop {
			for _, ts := range inflight {
				for _, t := range ts {
					if t.State == model.TaskDispatched || t.State == model.TaskRunning {
						r.killOnWorker(ctx, t)
					}
				}
			}
		}
	} else {
		r.launch(ctx, inMaster...)
		r.launch(ctx, requeue...)
	}
	r.apply(r.flow.Start())
	r.log.Info("workflow instance recovered", zap.Int("tasks", len(r.latest)), zap.Int("in_flight", r.flow.Active()),
		zap.Int("queued_again", len(requeue)), zap.Int("run_again", len(r.again)), zap.Int("retried", len(r.retries)),
		zap.Int("ready", len(r.pending)))
	return true
}

// reopening is the machine's name for why the runner rebuilds (its mode).
func reopening(mode model.ActionKind) flow.Reopening {
	switch mode {
	case model.ActionResume:
		return flow.Resume
	case model.ActionRerun:
		return flow.Rerun
	case model.ActionRecoverFailed:
		return flow.RecoverFailed
	}
	return flow.Recover
}

// lostOn returns the ids among ts that host no longer holds: all of them
// when host is gone from the registry, else those its answer leaves out.
// When a live worker cannot be asked, nothing is declared lost: if it is
// really dead, the worker watch fails its tasks over when it leaves, also
// when it left before the watch started (the watch's baseline is every host
// the DB says holds tasks).
func (r *runner) lostOn(ctx context.Context, host string, ts []*model.TaskInstance) []int64 {
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	if !r.env.talker().live(host) {
		return ids
	}
	held, ok := r.env.talker().held(ctx, host, ids)
	if !ok {
		return nil
	}
	var lost []int64
	for _, id := range ids {
		if !held[id] {
			lost = append(lost, id)
		}
	}
	return lost
}

// redo forgets the latest attempts of names so they are submitted again as
// new attempts (numbered on, the old ones superseded when the new rows are
// written): rerun and recover_failed.
func (r *runner) redo(names []string) {
	for _, name := range names {
		t := r.latest[name]
		if t == nil {
			continue
		}
		r.prevOf[name] = t.ID // the row the new attempt supersedes
		r.flow.Redo(name, t.Attempt)
		delete(r.latest, name)
	}
}
