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
	rows, ok := r.load(ctx)
	if !ok {
		return false
	}
	p := r.flow.Reopen(flow.ReopenIn{Why: reopening(r.mode), Halt: haltLeft(r.inst.State), Now: time.Now(), Rows: rows})
	for _, name := range p.Redo {
		r.prevOf[name] = r.latest[name].ID // the row the new attempt supersedes
		delete(r.latest, name)
	}
	for name, t := range r.latest {
		r.names[t.ID] = name
	}
	r.apply(p.Decisions)
	for _, d := range p.Delay {
		r.env.addDeadline(deadline{When: d.At, Kind: retryDue, WorkflowID: r.inst.ID, TaskInstanceID: r.latest[d.Name].ID})
	}
	for host, names := range p.Ask {
		for _, name := range names {
			r.watchTimeout(r.latest[name])
		}
		if !r.failOverLost(ctx, host, r.tasks(names)) {
			return false
		}
	}
	// The ends just delivered (and any report that came meanwhile) are
	// taken now, before the halt below looks at what still runs.
	for _, ev := range r.events.Drain() {
		r.onTask(ev)
	}
	requeue, ok := r.unpause(ctx, r.tasks(p.Unpause))
	if !ok {
		return false
	}
	requeue = append(r.tasks(p.Requeue), requeue...)
	if r.stopping() {
		// Finish the pause or stop its master began: nothing queued runs,
		// a stop kills what still runs on workers, and master-run attempts
		// are cancelled (paused or stopped) where they run, not started again.
		r.haltQueued(ctx)
		if r.flow.Halting() == flow.Stop {
			for _, names := range p.Ask {
				r.killRunning(ctx, r.tasks(names))
			}
		}
	} else {
		r.launch(ctx, r.tasks(p.Continue)...) // masterTasks takes up the same attempt again (Start)
		r.launch(ctx, requeue...)
	}
	r.apply(r.flow.Start())
	r.log.Info("workflow instance recovered", zap.Int("tasks", len(r.latest)), zap.Int("in_flight", r.flow.Active()),
		zap.Int("queued_again", len(requeue)), zap.Int("run_again", len(r.todo.Again)), zap.Int("retried", len(r.todo.Retry)),
		zap.Int("ready", len(r.todo.Submit)))
	return true
}

// load reads the instance's task rows: the latest attempt of each task
// becomes the runner's, and the machine's view of it is returned.
func (r *runner) load(ctx context.Context) ([]flow.Restored, bool) {
	var rows []model.TaskInstance
	if !retry(ctx, r.log, "load task instances", func() error {
		var err error
		rows, err = r.env.runnerStore().TaskList(ctx, r.inst.ID)
		return err
	}) {
		return nil, false
	}
	for i := range rows {
		t := &rows[i]
		if _, ok := r.def.tasks[t.Name]; !ok {
			// A task of another version: a rerun or recover_failed the
			// operator moved to this version; its attempts stay history.
			continue
		}
		if cur := r.latest[t.Name]; cur == nil || cur.Attempt < t.Attempt {
			r.latest[t.Name] = t
		}
		r.outputs = r.outputs || len(t.Outputs) > 0
	}
	prevEnd := map[string]time.Time{} // the attempt before the latest: a delayed retry's clock
	for i := range rows {
		if t := &rows[i]; r.latest[t.Name] != nil && t.Attempt == r.latest[t.Name].Attempt-1 && t.EndTime != nil {
			prevEnd[t.Name] = *t.EndTime
		}
	}
	out := make([]flow.Restored, 0, len(r.latest))
	for name, t := range r.latest {
		chosen, _ := r.branch(t)
		out = append(out, flow.Restored{Name: name, State: t.State, Attempt: t.Attempt, Base: t.RetryBase, Chosen: chosen,
			Host: t.Host, InMaster: r.inMaster(t), Decides: r.def.types[name].def.Decide != nil, PrevEnd: prevEnd[name]})
	}
	return out, true
}

// haltLeft is the halt an instance's master began and did not finish.
func haltLeft(st model.WorkflowState) flow.Halt {
	switch st {
	case model.WorkflowReadyPause:
		return flow.Pause
	case model.WorkflowReadyStop:
		return flow.Stop
	}
	return flow.Running
}

// tasks are the latest attempts of names.
func (r *runner) tasks(names []string) []*model.TaskInstance {
	ts := make([]*model.TaskInstance, 0, len(names))
	for _, name := range names {
		if t := r.latest[name]; t != nil {
			ts = append(ts, t)
		}
	}
	return ts
}

// failOverLost asks host which of ts it still holds: those lost become
// need_fault_tolerance and their ends are delivered to this runner (taken
// with its next events). It returns false when the context ended before
// the write went through.
func (r *runner) failOverLost(ctx context.Context, host string, ts []*model.TaskInstance) bool {
	lost := r.lostOn(ctx, host, ts)
	if len(lost) == 0 {
		return true
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
	return true
}

// unpause writes resumed paused attempts submitted again; those that moved
// are running again for the machine and returned, to be queued.
func (r *runner) unpause(ctx context.Context, ts []*model.TaskInstance) ([]*model.TaskInstance, bool) {
	if len(ts) == 0 {
		return nil, true
	}
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	var changed []int64
	if leaderWrite(ctx, r.log, "resume paused tasks", func() error {
		var err error
		changed, err = r.env.runnerStore().TaskSetStates(ctx, ids, []model.TaskState{model.TaskPaused}, model.TaskSubmitted)
		return err
	}) != written {
		return nil, false
	}
	var out []*model.TaskInstance
	for _, t := range ts {
		if contains(changed, t.ID) {
			t.State = model.TaskSubmitted
			r.flow.Resubmit(t.Name)
			out = append(out, t)
		}
	}
	return out, true
}

// killRunning kills on their workers those of ts still dispatched or running.
func (r *runner) killRunning(ctx context.Context, ts []*model.TaskInstance) {
	for _, t := range ts {
		if t.State == model.TaskDispatched || t.State == model.TaskRunning {
			r.killOnWorker(ctx, t)
		}
	}
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
