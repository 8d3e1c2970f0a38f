package master

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// runner owns one workflow instance: its DAG and the latest attempt of each
// task. Only its own goroutine touches these fields; it is driven by task
// events arriving in its mailbox (docs/architecture.md, "Lifecycle of a run", steps 3 and 9).
type runner struct {
	t     *term
	log   *zap.Logger
	inst  model.WorkflowInstance
	def   *definition
	graph *dag.Graph       // the tasks this instance runs: all, or a run's start nodes and scope
	mode  store.ActionKind // "start": a new instance; else rebuild from the DB (see startInstanceMode)

	latest    map[string]*model.TaskInstance // by task name
	names     map[int64]string               // task instance id -> task name
	submitted map[string]bool                // a task is submitted once, however many upstreams it has
	pending   []string                       // ready, to be written and queued
	again     []string                       // lost attempts (need_fault_tolerance) to run anew
	retries   []string                       // failed attempts with retries left
	active    int                            // submitted and not finished
	failed    []string
	whyFailed map[string]string // failed tasks the worker did not run: why
	halted    bool              // failure strategy end: submit nothing more
	halt      store.ActionKind  // pause or stop requested: nothing new runs
	prevOf    map[string]int64  // rerun: the attempt a new submission supersedes
	nextOf    map[string]int    // rerun: the attempt number a new submission gets

	events    *mailbox[taskEvent]
	deadlines *mailbox[deadline]
	actions   *mailbox[store.Action]
	done      chan struct{}
}

// definition is a parsed, immutable workflow version shared by its runners.
type definition struct {
	wf    *spec.Workflow
	graph *dag.Graph
	tasks map[string]*spec.Task
	types map[string]typed // by task name
}

// typed is a task's type and its decoded type fields (common/tasktype).
type typed struct {
	def  *tasktype.Def
	spec tasktype.Spec
}

func newDefinition(raw []byte) (*definition, error) {
	wf, err := spec.ParseStored(raw)
	if err != nil {
		return nil, fmt.Errorf("parse stored spec: %w", err)
	}
	d := &definition{wf: wf, tasks: make(map[string]*spec.Task, len(wf.Tasks)), types: make(map[string]typed, len(wf.Tasks))}
	nodes := make([]string, len(wf.Tasks))
	var edges [][2]string
	for i := range wf.Tasks {
		t := &wf.Tasks[i]
		nodes[i] = t.Name
		d.tasks[t.Name] = t
		def, ok := tasktype.Lookup(t.Type)
		if !ok {
			return nil, fmt.Errorf("task %s: %w", t.Name, tasktype.UnknownError(t.Type))
		}
		s, problems := def.Decode(t.TypeFields())
		if len(problems) > 0 {
			return nil, fmt.Errorf("task %s: %s", t.Name, strings.Join(problems, "; "))
		}
		d.types[t.Name] = typed{def: def, spec: s}
		for _, up := range t.DependsOn {
			edges = append(edges, [2]string{up, t.Name})
		}
	}
	if d.graph, err = dag.New(nodes, edges); err != nil {
		return nil, fmt.Errorf("build dag: %w", err)
	}
	return d, nil
}

func newRunner(t *term, inst model.WorkflowInstance, def *definition, mode store.ActionKind) *runner {
	return &runner{t: t, inst: inst, def: def, mode: mode, prevOf: map[string]int64{}, nextOf: map[string]int{},
		actions: newMailbox[store.Action](),
		log:     t.log.Named("runner").With(zap.Int64("workflow_instance_id", inst.ID), zap.String("workflow", inst.Workflow)),
		latest:  map[string]*model.TaskInstance{}, names: map[int64]string{}, submitted: map[string]bool{},
		events: newMailbox[taskEvent](), deadlines: newMailbox[deadline](), done: make(chan struct{})}
}

func (r *runner) run(ctx context.Context) {
	defer close(r.done)
	defer r.t.forget(r)
	r.graph = r.def.graph
	if len(r.inst.StartNodes) > 0 {
		scope, err := dag.ParseScope(r.inst.Scope)
		if err == nil {
			r.graph, err = r.def.graph.SubGraph(r.inst.StartNodes, scope)
		}
		if err != nil {
			// The API checks start nodes against the version it runs; a bad
			// pair here ends the instance rather than guessing.
			r.failed = append(r.failed, "start nodes: "+err.Error())
			r.finish(ctx)
			return
		}
	}
	if r.mode != "start" {
		if !r.rebuild(ctx) {
			return
		}
	} else {
		r.pending = append(r.pending, r.graph.Roots()...)
	}
	if to := r.def.wf.Timeout.D(); to > 0 && r.inst.StartTime != nil {
		r.t.wheel.Add(deadline{When: r.inst.StartTime.Add(to), Kind: workflowTimeout, WorkflowID: r.inst.ID})
	}
	if !r.flush(ctx) {
		return
	}
	for r.active > 0 {
		select {
		case <-ctx.Done():
			return // the instance stays running in the DB; recovery resumes it
		case <-r.events.Ready():
		case <-r.deadlines.Ready():
		case <-r.actions.Ready():
		}
		for _, a := range r.actions.Drain() {
			r.onAction(ctx, a)
		}
		for _, ev := range r.events.Drain() {
			r.onTask(ev)
		}
		for _, d := range r.deadlines.Drain() {
			r.onDeadline(ctx, d)
		}
		if !r.flush(ctx) {
			return
		}
	}
	r.finish(ctx)
}

func (r *runner) onTask(ev taskEvent) {
	name, ok := r.names[ev.TaskInstanceID]
	if !ok || r.latest[name].ID != ev.TaskInstanceID || r.latest[name].State.Finished() {
		return // an older attempt, or a repeat
	}
	t := r.latest[name]
	if ev.State == model.TaskRunning {
		t.State, t.StartTime = model.TaskRunning, &ev.StartTime
		r.watchTimeout(t)
		return
	}
	t.State = ev.State
	if !ev.EndTime.IsZero() {
		t.EndTime = &ev.EndTime
	}
	if ev.State.Success() && ev.Outputs != nil {
		t.Outputs = ev.Outputs // downstream tasks see them (upstreamOutputs)
	}
	r.active--
	if ev.State == model.TaskNeedFaultTolerance {
		// Its worker is gone: the same task runs again as a new attempt.
		r.again = append(r.again, name)
		return
	}
	if ev.State.Success() {
		if r.halted || r.halt == store.ActionStop {
			return
		}
		for _, next := range r.graph.ReadyAfter(name, r.succeeded) {
			if !r.submitted[next] {
				r.submitted[next] = true
				r.pending = append(r.pending, next)
			}
		}
		return
	}
	if ev.State == model.TaskFailed && retriesLeft(t, r.def.tasks[name].Retries) && r.halt != store.ActionStop {
		// Retries left: the next attempt is written at once (delayed) and
		// submitted by the state wheel when the interval has passed (while
		// pausing, it is written paused). A killed or stopped task is never
		// retried.
		r.retries = append(r.retries, name)
		return
	}
	r.failed = append(r.failed, name)
	if ev.Why != "" {
		if r.whyFailed == nil {
			r.whyFailed = map[string]string{}
		}
		r.whyFailed[name] = ev.Why
	}
	if r.def.wf.FailureStrategy != string(model.FailureContinue) {
		r.halted = true
		r.pending = r.pending[:0]
	}
	// Under continue, nothing downstream of the failure becomes ready, while
	// independent branches go on.
}

// retriesLeft reports whether failed attempt t may be retried: its budget
// of retries counts from the attempt that began it (the first, or the one a
// rerun or recover_failed started), as recorded on the row.
func retriesLeft(t *model.TaskInstance, retries int) bool {
	return t.Attempt-max(t.RetryBase, 1) < retries
}

func (r *runner) succeeded(name string) bool {
	t := r.latest[name]
	return t != nil && t.State.Success()
}

// flush writes the tasks that became ready, lost attempts to run anew and
// retries as new task instance rows in one transaction, and queues those
// that may run now. A retry with an interval waits as delayed until the
// state wheel says the interval has passed. It returns false when the
// context ended before the write went through.
func (r *runner) flush(ctx context.Context) bool {
	// A dry run's tasks end as they are written, and a task whose dispatch
	// cannot be built fails at once; either can make more ready (or a retry
	// due): write those too, until nothing is left.
	for len(r.pending) > 0 || len(r.again) > 0 || len(r.retries) > 0 {
		if !r.flushOnce(ctx) {
			return false
		}
	}
	return true
}

func (r *runner) flushOnce(ctx context.Context) bool {
	now := time.Now().UTC()
	var tasks []*model.TaskInstance
	var prev []int64
	due := map[*model.TaskInstance]time.Time{}
	dryWhy := map[*model.TaskInstance]string{}
	for _, name := range r.pending {
		r.submitted[name] = true
		attempt := 1
		if n, ok := r.nextOf[name]; ok { // a rerun: the old attempt is superseded now
			attempt = n
			prev = append(prev, r.prevOf[name])
			delete(r.nextOf, name)
			delete(r.prevOf, name)
		}
		tasks = append(tasks, r.newAttempt(name, attempt, attempt, now)) // a new budget
	}
	for _, name := range r.again {
		old := r.latest[name]
		prev = append(prev, old.ID)
		tasks = append(tasks, r.newAttempt(name, old.Attempt+1, old.RetryBase, now))
	}
	for _, name := range r.retries {
		old := r.latest[name]
		prev = append(prev, old.ID)
		t := r.newAttempt(name, old.Attempt+1, old.RetryBase, now)
		if at := retryAt(old, r.def.tasks[name].RetryInterval.D()); at.After(now) {
			t.State = model.TaskDelayed
			due[t] = at
		}
		tasks = append(tasks, t)
	}
	failNow := map[*model.TaskInstance]string{}
	for _, t := range tasks {
		if r.halt != "" {
			break // held: resolved when it is resumed
		}
		env, err := r.resolve(t)
		if err != nil {
			failNow[t] = err.Error()
			continue
		}
		delete(env, params.TaskInstanceID) // not known yet; inputs adds it
		t.Params = env
	}
	if r.halt != "" {
		// Pausing: what became ready is recorded paused and starts on
		// resume. Stopping: a lost task's replacement is recorded killed.
		held := model.TaskPaused
		if r.halt == store.ActionStop {
			held = model.TaskKilled
		}
		for _, t := range tasks {
			t.State = held
			delete(due, t)
		}
	} else if len(failNow) > 0 || r.inst.DryRun {
		for t, why := range failNow {
			// Its params do not resolve: it fails as it is written.
			t.State, t.StartTime, t.EndTime = model.TaskFailed, &now, &now
			dryWhy[t] = why
			delete(due, t)
		}
		for _, t := range tasks {
			if _, failed := failNow[t]; failed || !r.inst.DryRun {
				continue
			}
			// What a dry run of a task does is its type's (DryRun on the seam).
			t.State, t.DryRun, t.StartTime, t.EndTime = model.TaskSucceeded, true, &now, &now
			delete(due, t)
			ty := r.def.types[t.Name]
			if ty.def.DryRun == nil {
				continue
			}
			outs, err := ty.def.DryRun(ty.spec, r.inputs(t))
			if err != nil {
				t.State = model.TaskFailed
				dryWhy[t] = err.Error()
			}
			t.Outputs = outs
		}
	}
	if leaderWrite(ctx, r.log, "write submitted tasks", r.t.fenced, func() error {
		return r.t.store.InsertAttempts(ctx, prev, tasks)
	}) != written {
		return false
	}
	var items []*model.TaskInstance
	for _, t := range tasks {
		r.latest[t.Name] = t
		r.names[t.ID] = t.Name
		if t.State == model.TaskPaused || t.State == model.TaskKilled {
			continue // held by a pause or stop: not active
		}
		if _, failed := failNow[t]; failed || t.DryRun {
			r.active++ // counted, then finished at once below
			continue
		}
		r.active++
		if at, delayed := due[t]; delayed {
			r.t.wheel.Add(deadline{When: at, Kind: retryDue, WorkflowID: r.inst.ID, TaskInstanceID: t.ID})
			continue
		}
		items = append(items, t)
	}
	r.pending, r.again, r.retries = r.pending[:0], r.again[:0], r.retries[:0]
	r.queueOrStart(ctx, items...)
	for _, t := range tasks {
		if _, failed := failNow[t]; failed || t.DryRun {
			state := t.State
			t.State = model.TaskSubmitted // so onTask takes it as news
			r.onTask(taskEvent{TaskInstanceID: t.ID, State: state, StartTime: now, EndTime: now, Why: dryWhy[t], Outputs: t.Outputs})
		}
	}
	return true
}

// queue hands attempts to the dispatcher. One whose dispatch cannot be
// built (its type could not resolve its fields) fails at once, with why on
// the instance.
func (r *runner) queue(ctx context.Context, ts ...*model.TaskInstance) {
	items := make([]*taskItem, 0, len(ts))
	for _, t := range ts {
		it, err := r.item(t)
		if err == nil {
			items = append(items, it)
			continue
		}
		r.log.Warn("task cannot be dispatched; failing it", zap.String("task", t.Name), zap.Int64("task_instance_id", t.ID), zap.Error(err))
		now := time.Now().UTC()
		if leaderWrite(ctx, r.log, "fail undispatchable task", r.t.fenced, func() error {
			_, err := r.t.store.SetTaskStates(ctx, []int64{t.ID}, []model.TaskState{model.TaskSubmitted}, model.TaskFailed)
			return err
		}) != written {
			continue
		}
		r.onTask(taskEvent{TaskInstanceID: t.ID, State: model.TaskFailed, EndTime: now, Why: err.Error()})
	}
	r.t.disp.Submit(items...)
}

// queueOrStart is where ready attempts leave the runner: master-run types
// (sub_workflow, dependent) go to the term's masterTasks hook (logic.go),
// the rest to the dispatcher.
func (r *runner) queueOrStart(ctx context.Context, ts ...*model.TaskInstance) {
	r.queue(ctx, r.startMasterTasks(ctx, ts)...)
}

// retryAt is when the attempt after failed may start: its end (a DB time,
// so the clock survives a failover) plus the interval.
func retryAt(failed *model.TaskInstance, interval time.Duration) time.Time {
	end := time.Now().UTC()
	if failed.EndTime != nil {
		end = *failed.EndTime
	}
	return end.Add(interval)
}

// onDeadline handles a state-wheel deadline, if it still applies.
func (r *runner) onDeadline(ctx context.Context, d deadline) {
	if d.Kind == workflowTimeout {
		r.log.Warn("workflow instance ran past its timeout", zap.Duration("timeout", r.def.wf.Timeout.D()),
			zap.String("strategy", r.def.wf.TimeoutStrategy))
		r.note(ctx, "timeout_warning", 0, "workflow ran past its timeout of "+r.def.wf.Timeout.D().String())
		if r.def.wf.TimeoutStrategy == spec.TimeoutStop {
			r.stopOnTimeout(ctx)
		}
		return
	}
	name, ok := r.names[d.TaskInstanceID]
	if !ok || r.latest[name].ID != d.TaskInstanceID {
		return
	}
	t := r.latest[name]
	switch d.Kind {
	case retryDue:
		if t.State != model.TaskDelayed {
			return
		}
		var moved []int64
		if leaderWrite(ctx, r.log, "submit delayed retry", r.t.fenced, func() error {
			var err error
			moved, err = r.t.store.SetTaskStates(ctx, []int64{t.ID}, []model.TaskState{model.TaskDelayed}, model.TaskSubmitted)
			return err
		}) != written || len(moved) == 0 {
			return
		}
		t.State = model.TaskSubmitted
		r.queueOrStart(ctx, t)
	case taskTimeout:
		if t.State != model.TaskRunning {
			return
		}
		ts := r.def.tasks[name]
		r.log.Warn("task ran past its timeout", zap.String("task", name), zap.Int64("task_instance_id", t.ID),
			zap.Duration("timeout", ts.Timeout.D()))
		r.note(ctx, "timeout_warning", t.ID, "task "+name+" ran past its timeout of "+ts.Timeout.D().String())
	}
}

// watchTimeout puts a running task's timeout warning on the wheel. Killing
// at the timeout (fail, warn_fail) is the worker's job: it has the process
// and its own clock, which a master failover does not touch.
func (r *runner) watchTimeout(t *model.TaskInstance) {
	ts := r.def.tasks[t.Name]
	if ts.Timeout <= 0 || t.StartTime == nil {
		return
	}
	if ts.TimeoutStrategy == spec.TimeoutWarn || ts.TimeoutStrategy == spec.TimeoutWarnFail {
		r.t.wheel.Add(deadline{When: t.StartTime.Add(ts.Timeout.D()), Kind: taskTimeout, WorkflowID: r.inst.ID, TaskInstanceID: t.ID})
	}
}

// newAttempt builds attempt number attempt of task name, in the retry
// budget that attempt base began.
func (r *runner) newAttempt(name string, attempt, base int, now time.Time) *model.TaskInstance {
	ts := r.def.tasks[name]
	prio, _ := model.ParsePriority(ts.Priority)
	return &model.TaskInstance{WorkflowInstanceID: r.inst.ID, Name: name, Type: ts.Type,
		State: model.TaskSubmitted, Attempt: attempt, RetryBase: base, Priority: prio, WorkerGroup: r.group(ts), TaskGroup: ts.TaskGroup, SubmitTime: &now}
}

func (r *runner) group(ts *spec.Task) string {
	for _, g := range []string{ts.WorkerGroup, r.inst.WorkerGroup, r.def.wf.WorkerGroup} {
		if g != "" {
			return g
		}
	}
	return model.DefaultWorkerGroup
}

// inputs are the params of attempt t: those resolved when it was written
// (resolve), with its id, else resolved now.
func (r *runner) inputs(t *model.TaskInstance) tasktype.Inputs {
	env := t.Params
	if env == nil {
		env, _ = r.resolve(t) // a conflict was found when it was written
	} else {
		env = maps.Clone(env)
	}
	env[params.TaskInstanceID] = strconv.FormatInt(t.ID, 10)
	return tasktype.Inputs{TaskInstanceID: t.ID, WorkflowInstanceID: r.inst.ID, Task: t.Name, Params: env,
		Datasource: r.datasource}
}

// resolve computes the params of attempt t: common/params.ForTask is the
// one place they are computed. Upstream outputs come from the attempts this
// runner knows; two at the same distance disagreeing is an error.
func (r *runner) resolve(t *model.TaskInstance) (map[string]string, error) {
	ts := r.def.tasks[t.Name]
	up, err := r.upstreamOutputs(t.Name)
	// Time params count from the run's schedule time (else its creation), which
	// retries and a master failover see the same.
	base := r.inst.CreatedAt
	if r.inst.ScheduleTime != nil {
		base = *r.inst.ScheduleTime
	}
	env := params.ForTask(params.TaskInputs{Base: params.BaseIn(base, r.inst.Timezone),
		Project: r.inst.Project, Workflow: r.inst.Workflow, Version: r.inst.Version,
		WorkflowInstance: r.inst.ID, TaskInstance: t.ID, Task: t.Name, Attempt: t.Attempt,
		WorkflowParams: r.def.wf.Params, UpstreamOutputs: up, TaskParams: ts.Params, RunParams: r.inst.Params})
	return env, err
}

// upstreamOutputs merges the outputs of name's upstream tasks, direct and
// transitive: the nearest upstream wins; two at the same distance giving a
// name different values is an error naming both.
func (r *runner) upstreamOutputs(name string) (map[string]string, error) {
	var out map[string]string
	from := map[string]string{} // output name -> the task that gave it
	seen := map[string]bool{name: true}
	level := r.def.graph.Upstream(name)
	for len(level) > 0 {
		setHere := map[string]bool{}
		var next []string
		for _, u := range level {
			if seen[u] {
				continue
			}
			seen[u] = true
			next = append(next, r.def.graph.Upstream(u)...)
			t := r.latest[u]
			if t == nil {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(t.Outputs)) {
				v := t.Outputs[k]
				if prev, ok := out[k]; ok {
					if setHere[k] && prev != v {
						return out, fmt.Errorf("output %s: upstream tasks %s and %s, at the same distance, give different values (%q and %q)",
							k, from[k], u, clipValue(prev), clipValue(v))
					}
					continue // a nearer upstream gave it
				}
				if out == nil {
					out = map[string]string{}
				}
				out[k], from[k], setHere[k] = v, u, true
			}
		}
		level = next
	}
	return out, nil
}

func clipValue(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// datasource reads a managed datasource for a type's payload (sql), at
// each dispatch, so an edited datasource applies to the next attempt.
func (r *runner) datasource(name string) (tasktype.Datasource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := r.t.store.GetDatasource(ctx, name)
	if err != nil {
		return tasktype.Datasource{}, err
	}
	return tasktype.Datasource{Name: d.Name, Type: d.Type, Host: d.Host, Port: d.Port, Database: d.Database,
		User: d.User, PasswordSealed: d.PasswordSealed, Params: d.Params}, nil
}

// item builds the queue item of attempt t, its Dispatch carrying the type and
// its resolved fields. An error (the type could not resolve its payload)
// fails the attempt.
func (r *runner) item(t *model.TaskInstance) (*taskItem, error) {
	ts, ty := r.def.tasks[t.Name], r.def.types[t.Name]
	in := r.inputs(t)
	// Params are stored (and resolved) with secret values sealed; they are
	// opened only here, for the dispatch, and named so the worker masks them.
	var sec openedSecrets
	for k, v := range in.Params {
		in.Params[k] = sec.open(r.t.m.box, k, v)
	}
	d := message.Dispatch{TaskInstanceID: t.ID, WorkflowInstanceID: r.inst.ID, Name: t.Name,
		TaskType: t.Type, Env: in.Params, Attempt: t.Attempt, TimeoutMillis: killAfter(ts).Milliseconds(),
		SecretEnv: sec.names}
	if ty.def.Command != nil {
		d.Command = ty.def.Command(ty.spec)
	}
	if ty.def.Payload != nil {
		p, err := ty.def.Payload(ty.spec, in)
		if err != nil {
			return nil, err
		}
		if d.Payload, err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("encode %s payload: %w", t.Type, err)
		}
	}
	return &taskItem{WorkflowPriority: r.inst.Priority, WorkflowInstanceID: r.inst.ID,
		TaskPriority: t.Priority, TaskInstanceID: t.ID, Group: t.WorkerGroup, TaskGroup: t.TaskGroup,
		Dispatch: d, unsendable: sec.problem}, nil
}

// killAfter is the timeout the worker enforces by killing the task: only
// for the fail and warn_fail strategies.
func killAfter(ts *spec.Task) time.Duration {
	if ts.TimeoutStrategy == spec.TimeoutFail || ts.TimeoutStrategy == spec.TimeoutWarnFail {
		return ts.Timeout.D()
	}
	return 0
}

func (r *runner) finish(ctx context.Context) {
	state, reason := model.WorkflowSucceeded, ""
	paused := false
	for _, t := range r.latest {
		paused = paused || t.State == model.TaskPaused
	}
	switch {
	case r.halt == store.ActionStop:
		state, reason = model.WorkflowStopped, "stopped"
	case r.halt == store.ActionPause && paused:
		state, reason = model.WorkflowPaused, "paused"
	case len(r.failed) > 0:
		state, reason = model.WorkflowFailed, fmt.Sprintf("task %s failed", r.failed[0])
		if len(r.failed) > 1 {
			reason = fmt.Sprintf("tasks %v failed", r.failed)
		}
		if why := r.whyFailed[r.failed[0]]; why != "" {
			reason += fmt.Sprintf(" (%s: %s)", r.failed[0], why)
		}
	}
	end := time.Now().UTC()
	// Fenced out: not finished here; the term logs once that it lost.
	if leaderWrite(ctx, r.log, "record instance end", r.t.fenced, func() error {
		return r.t.store.FinishWorkflowInstance(ctx, r.inst.ID, state, end, reason)
	}) == written && r.t.ctx.Err() == nil {
		r.log.Info("workflow instance finished", zap.String("state", string(state)), zap.Int("tasks", len(r.latest)))
		r.t.cons.Notify()       // a queued run may start now
		r.t.logic.ended(r.inst) // its parent task and dependents waiting for it look now
		if r.inst.BackfillID != 0 {
			r.t.cron.Notify() // its backfill may submit the next time
		}
	}
}

// retry runs op until it succeeds or ctx ends, backing off up to 5 s and
// logging the first failure of a streak and the recovery.
func retry(ctx context.Context, log *zap.Logger, what string, op func() error) bool {
	backoff := 50 * time.Millisecond
	for failures := 0; ; failures++ {
		err := op()
		if err == nil {
			if failures > 0 {
				log.Info(what+" succeeded after retries", zap.Int("failures", failures))
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if failures == 0 {
			log.Error(what+" failed; retrying with back-off", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
