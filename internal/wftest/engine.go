package wftest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	psecret "github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/master"
)

// Engine is the embedded scheduler the cases run on: the real master (its
// command consumer, runner, master/flow, dispatcher, task events) on a
// SQLite file in a temp dir and an in-process registry, with a mock worker
// in place of real ones. One engine serves every file of a command; each
// file gets its own project, each case its own run.
type Engine struct {
	dir    string
	log    *zap.Logger
	st     *store.Store
	reg    *registry.Memory
	m      *master.Master
	w      *mockWorker
	groups map[string]bool // worker groups the mock worker is registered in
	files  int
}

// CaseTimeout bounds one case's run: a run that has not ended by then
// fails its case.
const CaseTimeout = 10 * time.Second

// Start brings the engine up in a new temp dir (removed by Stop).
func Start(ctx context.Context, log *zap.Logger) (_ *Engine, err error) {
	e := &Engine{log: log.Named("wftest"), reg: registry.NewMemory(), groups: map[string]bool{}}
	if e.dir, err = os.MkdirTemp("", "beluga-wftest-"); err != nil {
		return nil, fmt.Errorf("workflow test engine: %w", err)
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if e.st, err = store.Open(ctx, "sqlite://"+filepath.Join(e.dir, "beluga.db"), log); err != nil {
		return nil, fmt.Errorf("workflow test engine: %w", err)
	}
	if _, err = e.st.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("workflow test engine: %w", err)
	}
	// A secret of this engine alone: master and mock worker authenticate
	// each other as in a cluster, and nothing else on the host can talk
	// to either.
	raw := make([]byte, 32)
	if _, err = rand.Read(raw); err != nil {
		return nil, err
	}
	secret, err := clusterkey.New(raw)
	if err != nil {
		return nil, err
	}
	box, err := psecret.NewBox(secret)
	if err != nil {
		return nil, err
	}
	e.st = e.st.WithSecrets(box) // secret params are sealed as in production
	e.m = master.New(master.Config{Listen: "127.0.0.1:0", Secret: secret, PollInterval: time.Second}, e.st, e.reg, e.reg, log)
	if err = e.m.Start(ctx); err != nil {
		return nil, fmt.Errorf("workflow test engine: %w", err)
	}
	e.w = newMockWorker(secret, log)
	if err = e.w.start(ctx); err != nil {
		return nil, err
	}
	if err = e.register(ctx, model.DefaultWorkerGroup); err != nil {
		return nil, err
	}
	if err = waitUntil(ctx, 10*time.Second, e.m.IsLeader); err != nil {
		return nil, fmt.Errorf("workflow test engine: master did not lead: %w", err)
	}
	return e, nil
}

// register (re)announces the mock worker with every group it serves.
func (e *Engine) register(ctx context.Context, groups ...string) error {
	added := false
	for _, g := range groups {
		if g != "" && !e.groups[g] {
			e.groups[g], added = true, true
		}
	}
	if !added {
		return nil
	}
	return e.reg.Register(ctx, registry.Node{Role: registry.RoleWorker, Addr: e.w.addr(), Groups: sortedKeys(e.groups),
		Heartbeat: registry.Heartbeat{StartTime: time.Now(), Time: time.Now(), Capacity: 1 << 20}})
}

// Stop ends the engine and removes its temp dir.
func (e *Engine) Stop() {
	if e.w != nil {
		e.w.close()
	}
	if e.m != nil {
		e.m.Stop()
	}
	if e.st != nil {
		e.st.Close()
	}
	os.RemoveAll(e.dir)
}

// Prepared is a test file's workflow stored in the engine.
type Prepared struct {
	project string
	wf      *spec.Workflow
}

// Prepare stores f's workflow, as apply would, in a project of its own.
// Retry intervals are set to 0: a case runs in virtual time, so a retry
// is decided as it would be, without the wait.
func (e *Engine) Prepare(ctx context.Context, f *File) (*Prepared, error) {
	wf, err := spec.Parse(f.Raw) // a copy of its own to adjust
	if err != nil {
		return nil, &InputError{File: f.SpecPath, Msg: err.Error()}
	}
	groups := []string{wf.WorkerGroup}
	for i := range wf.Tasks {
		t := &wf.Tasks[i]
		t.RetryInterval = 0
		groups = append(groups, t.WorkerGroup)
		if def, ok := tasktype.Lookup(t.Type); ok && def.Start != nil {
			// A type that runs other workflows (sub_workflow, dependent) is
			// mocked like a worker's task: what it waits for is not this
			// test's. Its dependencies, params, retries and timeout stay.
			t.Command = "# mocked " + t.Type
			t.Type, t.Fields = "shell", nil
		}
	}
	if err := e.register(ctx, groups...); err != nil {
		return nil, err
	}
	e.files++
	p := &Prepared{project: fmt.Sprintf("test%d", e.files), wf: wf}
	if _, err := e.st.ProjectCreate(ctx, p.project, f.Path); err != nil {
		return nil, err
	}
	if err := e.stubDatasources(ctx, p.project, wf); err != nil {
		return nil, err
	}
	if err := e.stubTaskGroups(ctx, p.project, wf); err != nil {
		return nil, err
	}
	if _, _, err := e.st.WorkflowPut(ctx, p.project, wf); err != nil {
		return nil, &InputError{File: f.SpecPath, Msg: err.Error()}
	}
	return p, nil
}

// Run runs one case to its end and collects what happened.
func (e *Engine) Run(ctx context.Context, p *Prepared, c Case) (*RunResult, error) {
	e.w.use(c.Mocks)
	inst, err := e.st.InstanceCreateRun(ctx, store.RunRequest{Project: p.project, Workflow: p.wf.Name, Params: c.Params,
		CommandType: model.CommandStart, ScheduleTime: c.at, Timezone: c.Timezone})
	if err != nil {
		return nil, fmt.Errorf("start the run: %w", err)
	}
	e.m.Notify()
	var final model.WorkflowInstance
	err = waitUntil(ctx, CaseTimeout, func() bool {
		got, gerr := e.st.InstanceGet(ctx, inst.ID)
		final = got
		return gerr == nil && got.State.Finished()
	})
	rows, lerr := e.st.TaskList(ctx, inst.ID)
	if lerr != nil {
		return nil, lerr
	}
	out := &RunResult{State: string(final.State), Reason: final.Reason, Tasks: map[string]*TaskRun{}}
	if err != nil {
		out.Unfinished = fmt.Sprintf("the run did not end within %s (state %s)", CaseTimeout, final.State)
	}
	for _, r := range rows {
		tr := out.Tasks[r.Name]
		if tr == nil {
			tr = &TaskRun{Name: r.Name, Type: r.Type}
			out.Tasks[r.Name] = tr
			out.Names = append(out.Names, r.Name)
		}
		a := Attempt{ID: r.ID, Number: r.Attempt, State: string(r.State), Params: r.Params, Outputs: r.Outputs, Start: r.StartTime, End: r.EndTime}
		if r.StartTime == nil {
			a.Start = r.SubmitTime
		}
		if r.ExitCode != nil {
			a.ExitCode = *r.ExitCode
		}
		if d, ok := e.w.dispatched(r.ID); ok {
			a.Params = d.Env // as the task received them
		}
		if dur := c.Mocks[r.Name].Attempt(max(r.Attempt, 1)).Duration; dur > 0 && r.State != model.TaskSkipped {
			a.Mocked = time.Duration(dur)
		}
		tr.Attempts = append(tr.Attempts, a)
	}
	return out, nil
}

// RunResult is what one run did.
type RunResult struct {
	State      string
	Reason     string
	Unfinished string   // set when the run did not end in time
	Names      []string // tasks with an attempt, in the order of their first
	Tasks      map[string]*TaskRun
}

// TaskRun is one task's attempts in a run, first to last.
type TaskRun struct {
	Name, Type string
	Attempts   []Attempt
}

// Last is the task's latest attempt.
func (t *TaskRun) Last() Attempt { return t.Attempts[len(t.Attempts)-1] }

// Ran reports whether an attempt ran (was not skipped).
func (t *TaskRun) Ran() bool {
	for _, a := range t.Attempts {
		if a.State != string(model.TaskSkipped) {
			return true
		}
	}
	return false
}

// Attempt is one attempt of a task.
type Attempt struct {
	ID       int64
	Number   int
	State    string
	ExitCode int
	Params   map[string]string
	Outputs  map[string]string
	Start    *time.Time
	End      *time.Time
	Mocked   time.Duration // the mock's virtual duration
}

func waitUntil(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, 10*time.Millisecond)
	}
	return nil
}

// stubDatasources makes each datasource the spec's tasks name exist in the
// engine, granted to the project: tasks are mocked, so no task connects to
// it, but the runner resolves a sql task's payload against it as it would
// in production.
func (e *Engine) stubDatasources(ctx context.Context, project string, wf *spec.Workflow) error {
	for i := range wf.Tasks {
		t := &wf.Tasks[i]
		def, ok := tasktype.Lookup(t.Type)
		if !ok || def.Datasource == nil {
			continue
		}
		s, problems := def.Decode(t.TypeFields())
		if len(problems) > 0 {
			continue // Parse reported it already
		}
		name := def.Datasource(s)
		if name == "" {
			continue
		}
		if _, err := e.st.DatasourceGet(ctx, name); err != nil {
			if _, _, err := e.st.DatasourcePut(ctx, model.Datasource{Name: name, Type: "mysql", Host: "127.0.0.1", Port: 3306,
				Database: "mocked", User: "mocked"}); err != nil {
				return fmt.Errorf("stub datasource %s: %w", name, err)
			}
		}
		if err := e.st.DatasourceSetProjects(ctx, name, []string{project}, "wftest"); err != nil {
			return fmt.Errorf("stub datasource %s: %w", name, err)
		}
	}
	return nil
}

// stubTaskGroups makes each task group the spec's tasks name exist, granted
// to the project, with room for every task: a case checks the flow, not
// the limits.
func (e *Engine) stubTaskGroups(ctx context.Context, project string, wf *spec.Workflow) error {
	seen := map[string]bool{}
	for _, t := range wf.Tasks {
		if t.TaskGroup == "" || seen[t.TaskGroup] {
			continue
		}
		seen[t.TaskGroup] = true
		if _, err := e.st.TaskGroupGet(ctx, t.TaskGroup); err != nil {
			if _, err := e.st.TaskGroupCreate(ctx, t.TaskGroup, len(wf.Tasks), "workflow test stub"); err != nil {
				return fmt.Errorf("stub task group %s: %w", t.TaskGroup, err)
			}
		}
		if err := e.st.TaskGroupSetProjects(ctx, t.TaskGroup, []string{project}, "wftest"); err != nil {
			return fmt.Errorf("stub task group %s: %w", t.TaskGroup, err)
		}
	}
	return nil
}
