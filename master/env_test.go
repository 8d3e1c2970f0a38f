package master_test

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/worker"
)

// cell is one master with an in-process registry on a SQLite file; tests
// add real workers (real processes for tasks, real sockets).
type cell struct {
	t   *testing.T
	ctx context.Context
	dir string
	log *zap.Logger
	st  *store.Store
	reg *registry.Memory
	m   *master.Master
	// secret is the master's cluster secret, given to the workers too.
	secret clusterkey.Secret
	// runningDelay is the workers' RunningDelay (0: their default).
	runningDelay time.Duration
}

func newCell(t *testing.T, cfg master.Config) *cell { return newCellWith(t, cfg, nil) }

// newCellWith is newCell with before(m) called before the master starts.
func newCellWith(t *testing.T, cfg master.Config, before func(*master.Master)) *cell {
	c := openCell(t, cfg)
	c.start(cfg, before)
	return c
}

// openCell is a cell's database, migrated, with project p; start starts
// its master (settings written in between hold from its first look).
func openCell(t *testing.T, cfg master.Config) *cell {
	c := &cell{t: t, ctx: context.Background(), dir: t.TempDir(), log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
		reg: registry.NewMemory(), secret: cfg.Secret}
	var err error
	if c.st, err = store.Open(c.ctx, "sqlite://"+filepath.Join(c.dir, "b.db"), c.log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.st.Close() })
	if _, err := c.st.Migrate(c.ctx); err != nil {
		t.Fatal(err)
	}
	c.st.ProjectCreate(c.ctx, "p", "")
	return c
}

func (c *cell) start(cfg master.Config, before func(*master.Master)) {
	t := c.t
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	c.m = master.New(cfg, c.st, c.reg, c.reg, c.log)
	if before != nil {
		before(c.m)
	}
	if err := c.m.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.m.Stop)
	wait.Until(t, 30*time.Second, "master leads", c.m.IsLeader)
}

// addWorker starts a worker and registers it with its capacity.
func (c *cell) addWorker(slots int, groups ...string) *worker.Worker {
	return c.addWorkerCap(slots, slots, groups...)
}

// addWorkerCap registers a worker with a heartbeat capacity other than its
// slots, to make the master's limit bite while the worker has room.
func (c *cell) addWorkerCap(slots, capacity int, groups ...string) *worker.Worker {
	if len(groups) == 0 {
		groups = []string{"default"}
	}
	w, err := worker.New(worker.Config{Listen: "127.0.0.1:0", Slots: slots, Groups: groups,
		DataDir: filepath.Join(c.dir, "w"+time.Now().Format("150405.000000")), ResendInterval: 100 * time.Millisecond,
		RunningDelay: c.runningDelay, Secret: c.secret}, c.log)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := w.Start(c.ctx); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(w.Stop)
	if !c.secret.Empty() { // an authenticating worker obeys only the leader it knows of
		w.SetLeader(c.m.Addr(), c.m.Epoch())
	}
	c.reg.Register(c.ctx, registry.Node{Role: registry.RoleWorker, Addr: w.Host(), Groups: groups,
		Heartbeat: registry.Heartbeat{StartTime: time.Now(), Capacity: capacity}})
	return w
}

func (c *cell) apply(y string) {
	c.t.Helper()
	wf, err := spec.Parse([]byte(y))
	if err != nil {
		c.t.Fatal(err)
	}
	if _, _, err := c.st.WorkflowPut(c.ctx, "p", wf); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cell) run(name string, prio model.Priority) model.WorkflowInstance {
	c.t.Helper()
	inst, err := c.st.InstanceCreateRun(c.ctx, store.RunRequest{Project: "p", Workflow: name, Priority: &prio})
	if err != nil {
		c.t.Fatal(err)
	}
	c.m.Notify()
	return inst
}

func (c *cell) instance(id int64) model.WorkflowInstance {
	got, err := c.st.InstanceGet(c.ctx, id)
	if err != nil {
		c.t.Fatal(err)
	}
	return got
}

func (c *cell) finished(id int64) model.WorkflowInstance {
	c.t.Helper()
	wait.Until(c.t, 30*time.Second, "instance finished", func() bool { return c.instance(id).State.Finished() })
	return c.instance(id)
}

func (c *cell) tasks(id int64) []model.TaskInstance {
	ts, err := c.st.TaskList(c.ctx, id)
	if err != nil {
		c.t.Fatal(err)
	}
	return ts
}

// fillWorker runs a blocker workflow whose two tasks take both places the
// master gives a worker of capacity 1 (see addWorkerCap(2, 1)) until the
// files gate+".1" and gate+".2" appear.
func (c *cell) fillWorker() (gate string, blocker model.WorkflowInstance) {
	c.t.Helper()
	gate = filepath.Join(c.dir, "gate")
	c.apply(fmt.Sprintf(`name: blocker
tasks:
  - {name: b1, command: "while [ ! -f %[1]s.1 ]; do sleep 0.01; done"}
  - {name: b2, command: "while [ ! -f %[1]s.2 ]; do sleep 0.01; done"}
`, gate))
	blocker = c.run("blocker", model.PriorityMedium)
	wait.Until(c.t, 30*time.Second, "worker full", func() bool {
		n := 0
		for _, tk := range c.tasks(blocker.ID) {
			if tk.State == model.TaskDispatched || tk.State == model.TaskRunning {
				n++
			}
		}
		return n == 2
	})
	return gate, blocker
}
