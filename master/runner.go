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

	"github.com/beluga-scheduler/beluga/common/calendar"
	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/master/flow"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// runner owns one workflow instance: its DAG and the latest attempt of each
// task. Only its own goroutine touches these fields; it is driven by task
// events arriving in its mailbox (docs/architecture.md, "Lifecycle of a run", steps 3 and 9).
type runner struct {
	env   runnerEnv // the term, as far as the runner may reach it (runnerenv.go)
	log   *zap.Logger
	inst  model.WorkflowInstance
	def   *definition
	graph *dag.Graph       // the tasks this instance runs: all, or a run's start nodes and scope
	mode  model.ActionKind // "start": a new instance; else rebuild from the DB (see startInstanceMode)
	// calendar is the business calendar of the run's schedule, read once
	// (calRead) for BELUGA_BIZ_DATE and $[bizday(...)]; nil: none.
	calendar *schedule.Calendar
	calRead  bool

	latest map[string]*model.TaskInstance // by task name
	names  map[int64]string               // task instance id -> task name
	flow   *flow.Flow                     // the decisions (master/flow); this goroutine applies them
	todo   flow.Decisions                 // decided since the last flush: to be written (flush)
	prevOf map[string]int64               // rerun: the row a new submission supersedes (flow.Redo numbers it)
	// outputs: some attempt of this run exported values. Until one does,
	// upstreamOutputs has nothing to find and walks no upstreams (a walk
	// per task is quadratic in a long chain).
	outputs bool

	events    *mailbox[taskEvent]
	deadlines *mailbox[deadline]
	actions   *mailbox[model.Action]
	done      chan struct{}
}

// definition is a parsed, immutable workflow version shared by its runners.
type definition struct {
	wf     *spec.Workflow
	tenant string // the project's: the default of the workflow's and tasks'
	// byAdmin: the version's author is an admin, who may name other tenants
	// (spec.CheckTenant).
	byAdmin bool

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

func newRunner(env runnerEnv, log *zap.Logger, inst model.WorkflowInstance, def *definition, mode model.ActionKind) *runner {
	r := &runner{env: env, inst: inst, def: def, mode: mode, prevOf: map[string]int64{},
		actions: newMailbox[model.Action](),
		log:     log.Named("runner").With(logging.Instance(inst.ID, inst.Project, inst.Workflow)),
		latest:  map[string]*model.TaskInstance{}, names: map[int64]string{},
		events: newMailbox[taskEvent](), deadlines: newMailbox[deadline](), done: make(chan struct{})}
	r.graph = def.graph
	r.flow = r.newFlow(def.graph) // run makes it anew over the run's sub-graph
	return r
}

func (r *runner) run(ctx context.Context) {
	defer close(r.done)
	defer r.env.runnerExited(r)
	r.graph = r.def.graph
	if len(r.inst.StartNodes) > 0 {
		scope, err := dag.ParseScope(r.inst.Scope)
		if err == nil {
			r.graph, err = r.def.graph.SubGraph(r.inst.StartNodes, scope)
		}
		if err != nil {
			// The API checks start nodes against the version it runs; a bad
			// pair here ends the instance rather than guessing.
			r.flow = r.newFlow(r.def.graph)
			r.flow.Fail("start nodes: " + err.Error())
			r.finish(ctx)
			return
		}
	}
	r.flow = r.newFlow(r.graph)
	if r.mode != "start" {
		if !r.rebuild(ctx) {
			return
		}
	} else {
		r.apply(r.flow.Start())
	}
	if to := r.def.wf.Timeout.D(); to > 0 && r.inst.StartTime != nil {
		r.env.addDeadline(deadline{When: r.inst.StartTime.Add(to), Kind: workflowTimeout, WorkflowID: r.inst.ID})
	}
	if !r.flush(ctx) {
		return
	}
	for r.flow.Active() > 0 {
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

// newFlow makes the instance's state machine over g.
func (r *runner) newFlow(g *dag.Graph) *flow.Flow {
	specs := make(map[string]flow.Task, len(r.def.tasks))
	for name, t := range r.def.tasks {
		def := r.def.types[name].def
		retries := t.Retries
		if def.Decide != nil {
			retries = 0 // a decision is the same every time
		}
		specs[name] = flow.Task{Retries: retries, HandlesFailure: def.HandlesFailure, Decides: def.Decide != nil,
			RetryInterval: t.RetryInterval.D()}
	}
	f := flow.New(g, specs, r.def.wf.FailureStrategy == string(model.FailureContinue))
	if r.inst.DryRun {
		f.DryRun()
	}
	return f
}

// apply gathers the machine's decisions for the next flush.
func (r *runner) apply(d flow.Decisions) { r.todo.Add(d) }

func (r *runner) onTask(ev taskEvent) {
	name, ok := r.names[ev.TaskInstanceID]
	if !ok || r.latest[name].ID != ev.TaskInstanceID || r.latest[name].State.Finished() {
		return // an older attempt, or a repeat
	}
	t := r.latest[name]
	if ev.State != model.TaskRunning && t.State != model.TaskRunning && startedBefore(ev) {
		// Its Running report was held (it ended within the worker's
		// RunningDelay): the transition is counted all the same.
		metrics.Task(t.Type, model.TaskRunning)
	}
	metrics.Task(t.Type, ev.State)
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
		r.outputs = r.outputs || len(ev.Outputs) > 0
	}
	fe := flow.Event{Name: name, State: ev.State, Why: ev.Why}
	if ev.State.Success() {
		fe.Branch, fe.Branched = r.branch(t)
	}
	r.apply(r.flow.Finished(fe))
}

// startedBefore reports whether a result is of a run that started: a start
// time before its end (a process that could not start, or a task killed
// before it, has none, or the same as its end).
func startedBefore(ev taskEvent) bool {
	return !ev.StartTime.IsZero() && ev.EndTime.After(ev.StartTime)
}

// branch is what a branching task (conditions, switch) chose, as recorded
// in its outputs; ok false for any other task.
func (r *runner) branch(t *model.TaskInstance) ([]string, bool) {
	if r.def.types[t.Name].def.Decide == nil {
		return nil, false
	}
	next, ok := t.Outputs[tasktype.BranchNext]
	if !ok {
		return nil, false // forced to succeed without deciding: every branch runs
	}
	out := []string{}
	for _, n := range strings.Split(next, ",") {
		if n != "" {
			out = append(out, n)
		}
	}
	return out, true
}

// flush writes the tasks that became ready, lost attempts to run anew,
// retries and skips as new task instance rows, and carries out what
// follows each (flushOnce). It returns false when the context ended before
// a write went through.
func (r *runner) flush(ctx context.Context) bool {
	// A dry run's tasks end as they are written, and a task whose dispatch
	// cannot be built fails at once; either can make more ready (or a retry
	// due): write those too, until nothing is left.
	for !r.todo.Empty() {
		if !r.flushOnce(ctx) {
			return false
		}
	}
	return true
}

// flushMax bounds the ready tasks written in one transaction (flow.PlanIn.Limit).
const flushMax = 5000

// flushOnce writes one plan of the machine (flow.Plan) in one transaction
// and carries out what follows each row (flow.ThenOf). Its own part is
// what is not pure: row ids, the clock, and the types' code (prepare).
// A crash between two plans of a fan-out leaves the rest unwritten, which
// the rebuild writes.
func (r *runner) flushOnce(ctx context.Context) bool {
	now := time.Now().UTC()
	rows, rest := r.flow.Plan(r.todo, flow.PlanIn{Now: now, Limit: flushMax, FailedAt: r.failedAt})
	ts := make([]*model.TaskInstance, len(rows))
	why := make([]string, len(rows)) // a row ended failed as written: why
	var prev []int64
	retried := false
	for i, row := range rows {
		if row.Attempt.Supersedes {
			prev = append(prev, r.superseded(row.Name))
		}
		ts[i] = r.newAttempt(row, now)
		why[i] = r.prepare(ts[i], row.Write, now)
		retried = retried || row.Kind == flow.Retried
	}
	if retried {
		failpoint.Hit(failpoint.BeforeWriteRetry)
	}
	if leaderWrite(ctx, r.log, "write submitted tasks", func() error {
		return r.env.writeAttempts(ctx, store.AttemptWrite{Prev: prev, Next: ts})
	}) != written {
		return false
	}
	r.todo = rest
	metrics.Tasks(ts)
	var launch []*model.TaskInstance
	for i, t := range ts {
		r.latest[t.Name] = t
		r.names[t.ID] = t.Name
		switch flow.ThenOf(t.State) {
		case flow.Launch:
			launch = append(launch, t)
		case flow.Wait:
			r.env.addDeadline(deadline{When: rows[i].Due, Kind: retryDue, WorkflowID: r.inst.ID, TaskInstanceID: t.ID})
		case flow.Hold:
			r.apply(r.flow.Finished(flow.Event{Name: t.Name, State: t.State}))
		case flow.Report:
			state := t.State
			t.State = model.TaskSubmitted // so onTask takes it as news
			r.onTask(taskEvent{TaskInstanceID: t.ID, State: state, StartTime: now, EndTime: now, Why: why[i], Outputs: t.Outputs})
		}
	}
	r.launch(ctx, launch...)
	return true
}

// superseded is the id of the row a new attempt of name supersedes: its
// latest, or the one a rerun forgot (redo).
func (r *runner) superseded(name string) int64 {
	if id, redone := r.prevOf[name]; redone {
		delete(r.prevOf, name)
		return id
	}
	return r.latest[name].ID
}

// failedAt is when the latest attempt of name ended (a retry's clock
// starts there); zero: unknown.
func (r *runner) failedAt(name string) time.Time {
	if t := r.latest[name]; t != nil && t.EndTime != nil {
		return *t.EndTime
	}
	return time.Time{}
}

// prepare runs the types' code a new attempt needs before it is written,
// by how the machine writes it (w): its params are resolved (all but a held
// or skipped row's: a held one's are resolved when it is resumed), then a
// branching type decides, or a dry run runs its type's DryRun. An attempt
// whose params do not resolve, or whose decision or dry run fails, is
// written failed; prepare returns why ("" otherwise).
func (r *runner) prepare(t *model.TaskInstance, w flow.Write, now time.Time) string {
	if w == flow.Held || w == flow.Skip {
		return ""
	}
	fail := func(why string) string {
		t.State, t.StartTime, t.EndTime = model.TaskFailed, &now, &now
		return why
	}
	env, err := r.resolve(t)
	if err != nil {
		return fail(err.Error())
	}
	delete(env, params.TaskInstanceID) // not known yet; inputs adds it
	if ps := r.def.tasks[t.Name].Produces; len(ps) > 0 {
		refs, err := produces(ps, env)
		if err != nil {
			return fail(err.Error())
		}
		env[store.ProducesParam] = refs // the task sees it; its success writes it
	}
	t.Params = env
	switch w {
	case flow.Decide:
		if why := r.decide(t, now); why != "" {
			return fail(why)
		}
	case flow.Dry:
		// What a dry run of a task does is its type's (DryRun on the seam).
		t.State, t.DryRun, t.StartTime, t.EndTime = model.TaskSucceeded, true, &now, &now
		ty := r.def.types[t.Name]
		if ty.def.DryRun == nil {
			return ""
		}
		outs, err := ty.def.DryRun(ty.spec, r.inputs(t))
		t.Outputs = outs
		r.outputs = r.outputs || len(outs) > 0
		if err != nil {
			t.State = model.TaskFailed
			return err.Error()
		}
	}
	return ""
}

// queue hands attempts to the dispatcher. One whose dispatch cannot be
// built (its type could not resolve its fields) fails at once, with why on
// the instance.
func (r *runner) queue(ctx context.Context, ts ...*model.TaskInstance) {
	items := make([]*taskItem, 0, len(ts))
	for _, t := range ts {
		it, err := r.item(t)
		if err == nil {
			// The dispatch holds its own copy; a queued fan-out of 100,000
			// would otherwise keep both (inputs resolves them again if this
			// attempt is ever queued anew).
			t.Params = nil
			items = append(items, it)
			continue
		}
		r.log.Warn("task cannot be dispatched; failing it", zap.String("task", t.Name), logging.TaskID(t.ID), zap.Error(err))
		now := time.Now().UTC()
		if leaderWrite(ctx, r.log, "fail undispatchable task", func() error {
			_, err := r.env.runnerStore().TaskSetStates(ctx, []int64{t.ID}, []model.TaskState{model.TaskSubmitted}, model.TaskFailed)
			return err
		}) != written {
			continue
		}
		r.onTask(taskEvent{TaskInstanceID: t.ID, State: model.TaskFailed, EndTime: now, Why: err.Error()})
	}
	r.env.queueTasks(items...)
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
		failpoint.Hit(failpoint.BeforeSubmitRetry)
		var moved []int64
		if leaderWrite(ctx, r.log, "submit delayed retry", func() error {
			var err error
			moved, err = r.env.runnerStore().TaskSetStates(ctx, []int64{t.ID}, []model.TaskState{model.TaskDelayed}, model.TaskSubmitted)
			return err
		}) != written || len(moved) == 0 {
			return
		}
		t.State = model.TaskSubmitted
		r.launch(ctx, t)
	case taskTimeout:
		if t.State != model.TaskRunning {
			return
		}
		ts := r.def.tasks[name]
		if ts.TimeoutStrategy == spec.TimeoutWarn || ts.TimeoutStrategy == spec.TimeoutWarnFail {
			r.log.Warn("task ran past its timeout", zap.String("task", name), logging.TaskID(t.ID),
				zap.Duration("timeout", ts.Timeout.D()))
			r.note(ctx, "timeout_warning", t.ID, "task "+name+" ran past its timeout of "+ts.Timeout.D().String())
		}
		if r.inMaster(t) && killAfter(ts) > 0 {
			// What a worker does at its timeout, done where the task runs.
			r.cancel(ctx, t, cancelTimeout)
		}
	}
}

// watchTimeout puts a running task's timeout on the wheel: the warning
// (warn, warn_fail) and, for a task run in the master, the end (fail,
// warn_fail). Killing a worker's task at its timeout is the worker's job:
// it has the process and its own clock, which a master failover does not
// touch.
func (r *runner) watchTimeout(t *model.TaskInstance) {
	ts := r.def.tasks[t.Name]
	if ts.Timeout <= 0 || t.StartTime == nil {
		return
	}
	if ts.TimeoutStrategy == spec.TimeoutWarn || ts.TimeoutStrategy == spec.TimeoutWarnFail || (r.inMaster(t) && killAfter(ts) > 0) {
		r.env.addDeadline(deadline{When: t.StartTime.Add(ts.Timeout.D()), Kind: taskTimeout, WorkflowID: r.inst.ID, TaskInstanceID: t.ID})
	}
}

// newAttempt builds the task instance of a planned row.
func (r *runner) newAttempt(row flow.Row, now time.Time) *model.TaskInstance {
	ts := r.def.tasks[row.Name]
	prio, _ := model.ParsePriority(ts.Priority)
	t := &model.TaskInstance{WorkflowInstanceID: r.inst.ID, Name: row.Name, Type: ts.Type,
		State: row.State, Attempt: row.Attempt.Number, RetryBase: row.Attempt.Base, Priority: prio,
		WorkerGroup: r.group(ts), TaskGroup: ts.TaskGroup, SubmitTime: &now}
	if row.State == model.TaskSkipped {
		t.StartTime, t.EndTime = &now, &now // never runs: ended as written
	}
	return t
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
	cal, cerr := r.businessCalendar()
	if cerr != nil && err == nil {
		err = cerr // a business date computed without the calendar would be wrong, not late
	}
	in := params.TaskInputs{Base: params.BaseIn(base, r.inst.Timezone), Calendar: cal,
		Project: r.inst.Project, Workflow: r.inst.Workflow, Version: r.inst.Version,
		WorkflowInstance: r.inst.ID, TaskInstance: t.ID, Task: t.Name, Attempt: t.Attempt,
		WorkflowParams: r.def.wf.Params, UpstreamOutputs: up, TaskParams: ts.Params, RunParams: r.inst.Params}
	if cerr := in.Check(); cerr != nil && err == nil {
		// A reserved name that got past the checks at apply and run (stored
		// before them, an upstream's output, a parent's params): the task
		// fails with this reason and never starts.
		err = cerr
	}
	return params.ForTask(in), err
}

// businessCalendar is the calendar of the schedule that fired the run
// (nil for other runs, or a schedule naming none), read on first use.
func (r *runner) businessCalendar() (*schedule.Calendar, error) {
	if r.calRead || r.inst.ScheduleID == 0 {
		return r.calendar, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, ok, err := r.env.runnerStore().ScheduleCalendar(ctx, r.inst.ScheduleID)
	if err != nil {
		return nil, fmt.Errorf("read the business calendar of schedule %d: %w", r.inst.ScheduleID, err)
	}
	if ok {
		r.calendar = calendar.Business(c)
	}
	r.calRead = true
	return r.calendar, nil
}

// upstreamOutputs merges the outputs of name's upstream tasks, direct and
// transitive: the nearest upstream wins; two at the same distance giving a
// name different values is an error naming both.
func (r *runner) upstreamOutputs(name string) (map[string]string, error) {
	if !r.outputs {
		return nil, nil
	}
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
			if t == nil || r.def.types[u].def.Decide != nil {
				continue // a branching task's outputs show its choice; they pass nothing on
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
// each dispatch, so an edited datasource applies to the next attempt; only
// once the run's version may use it (store.DatasourceUsable: its author's
// rights now). The refusal reads the same whether the datasource exists.
func (r *runner) datasource(name string) (tasktype.Datasource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := r.env.runnerStore().WorkflowVersionAuthor(ctx, r.inst.DefinitionID)
	if err != nil {
		return tasktype.Datasource{}, err
	}
	if ok, err := r.env.runnerStore().DatasourceUsable(ctx, a, name, r.inst.Project); err != nil {
		return tasktype.Datasource{}, err
	} else if !ok {
		return tasktype.Datasource{}, fmt.Errorf("not granted to project %q, and %q, who applied this workflow version, is not an admin", r.inst.Project, a.Name)
	}
	d, err := r.env.runnerStore().DatasourceGet(ctx, name)
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
	if t.TaskGroup != "" {
		if err := r.taskGroupUsable(t.TaskGroup); err != nil {
			return nil, err
		}
	}
	in := r.inputs(t)
	// Params are stored (and resolved) with secret values sealed; they are
	// opened only here, for the dispatch, and named so the worker masks them.
	var sec openedSecrets
	for k, v := range in.Params {
		in.Params[k] = sec.open(r.env.sealBox(), k, v)
	}
	d := message.Dispatch{TaskInstanceID: t.ID, WorkflowInstanceID: r.inst.ID, Name: t.Name,
		TaskType: t.Type, Env: in.Params, Attempt: t.Attempt, TimeoutMillis: killAfter(ts).Milliseconds(),
		SecretEnv: sec.names, Tenant: ts.Tenant}
	if d.Tenant == "" {
		d.Tenant = r.def.wf.Tenant
	}
	if d.Tenant == "" {
		d.Tenant = r.def.tenant
	}
	if err := spec.CheckTenant(d.Tenant, r.def.tenant, r.def.byAdmin); err != nil {
		// A version applied before the check, or whose author is no longer
		// an admin: it never runs as that user.
		return nil, fmt.Errorf("%w (re-apply the workflow as an admin, or remove the tenant)", err)
	}
	isolated, err := r.codeAllowed(ty.def, t.WorkerGroup)
	if err != nil {
		return nil, err
	}
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
		Manual: r.inst.CommandType == model.CommandStart, Dispatch: d, unsendable: sec.problem, isolated: isolated}, nil
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
	state, reason := r.flow.End()
	end := time.Now().UTC()
	// Fenced out: not finished here; the term logs once that it lost.
	if leaderWrite(ctx, r.log, "record instance end", func() error {
		return r.env.writeEnd(ctx, store.InstanceEnd{ID: r.inst.ID, State: state, End: end, Reason: reason})
	}) == written && !r.env.termOver() {
		r.log.Info("workflow instance finished", zap.String("state", string(state)), zap.Int("tasks", len(r.latest)))
		metrics.Instance(state, 1)
		r.env.instanceEnded(r.inst)
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
