package master_test

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/worker"
)

// TestHandOverKeepsRunningTask hands leadership from one master to another
// while a task runs on a live worker: the new leader adopts the instance,
// finds the task held by the worker, waits for its result instead of
// running it again, and finishes the DAG. Every task runs once.
func TestHandOverKeepsRunningTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "b.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	reg := registry.NewMemory()
	w, err := worker.New(worker.Config{Listen: "127.0.0.1:0", DataDir: filepath.Join(dir, "w"), ResendInterval: 100 * time.Millisecond}, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	reg.Register(ctx, registry.Node{Role: registry.RoleWorker, Addr: w.Host(), Groups: []string{"default"},
		Heartbeat: registry.Heartbeat{StartTime: time.Now()}})

	a := master.New(master.Config{Listen: "127.0.0.1:0"}, st, reg, reg, log)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	wait.Until(t, 30*time.Second, "master a leads", a.IsLeader)
	b := master.New(master.Config{Listen: "127.0.0.1:0"}, st, reg, reg, log)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()

	runs := filepath.Join(dir, "runs")
	gate := filepath.Join(dir, "gate")
	wf, err := spec.Parse([]byte(fmt.Sprintf(`name: hand
tasks:
  - {name: a, command: "echo a >> %[1]s"}
  - {name: b, command: "echo b >> %[1]s; while [ ! -f %[2]s ]; do sleep 0.01; done", depends_on: [a]}
  - {name: c, command: "echo c >> %[1]s", depends_on: [b]}
`, runs, gate)))
	if err != nil {
		t.Fatal(err)
	}
	st.ProjectCreate(ctx, "p", "")
	if _, _, err := st.WorkflowPut(ctx, "p", wf); err != nil {
		t.Fatal(err)
	}
	inst, err := st.InstanceCreateRun(ctx, store.RunRequest{Project: "p", Workflow: "hand"})
	if err != nil {
		t.Fatal(err)
	}
	a.Notify()
	wait.Until(t, 30*time.Second, "task b running", func() bool {
		ts, _ := st.TaskList(ctx, inst.ID)
		for _, tk := range ts {
			if tk.Name == "b" && tk.State == model.TaskRunning {
				return true
			}
		}
		return false
	})
	epochA := a.Epoch()
	a.Stop() // graceful hand-over: a resigns, b campaigns and wins
	wait.Until(t, 30*time.Second, "master b leads", b.IsLeader)
	if b.Epoch() <= epochA {
		t.Fatalf("new term epoch %d not above %d", b.Epoch(), epochA)
	}
	os.WriteFile(gate, nil, 0o644)
	wait.Until(t, 30*time.Second, "instance finished", func() bool {
		got, _ := st.InstanceGet(ctx, inst.ID)
		return got.State.Finished()
	})
	got, _ := st.InstanceGet(ctx, inst.ID)
	if got.State != model.WorkflowSucceeded || got.Host != b.Addr() {
		t.Fatalf("instance: %+v (b is %s)", got, b.Addr())
	}
	ts, _ := st.TaskList(ctx, inst.ID)
	if len(ts) != 3 {
		t.Fatalf("task rows: %+v", ts)
	}
	out, _ := os.ReadFile(runs)
	if strings.Join(strings.Fields(string(out)), ",") != "a,b,c" {
		t.Fatalf("executions: %q", out)
	}
}

// TestHaltAskedWhileNoMasterLeads: the leader stops while a task runs; a
// pause or a stop is asked while no master leads; the next leader finds the
// instance pausing or stopping and finishes that. Pause: the running task
// completes on its worker and its downstream is recorded paused. Stop: the
// running task is killed on its worker. Nothing new runs either way.
func TestHaltAskedWhileNoMasterLeads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action   model.ActionKind
		instance model.WorkflowState
		first    model.TaskState
		downRows int
	}{
		{model.ActionPause, model.WorkflowPaused, model.TaskSucceeded, 1},
		{model.ActionStop, model.WorkflowStopped, model.TaskKilled, 0},
	} {
		t.Run(string(tc.action), func(t *testing.T) {
			c := newCell(t, master.Config{})
			c.addWorker(2)
			gate := filepath.Join(c.dir, "gate")
			runs := filepath.Join(c.dir, "runs")
			c.apply(fmt.Sprintf(`name: p
tasks:
  - {name: a, command: "echo a >> %[1]s; while [ ! -f %[2]s ]; do sleep 0.01; done"}
  - {name: b, command: "echo b >> %[1]s", depends_on: [a]}
`, runs, gate))
			inst := c.run("p", model.PriorityMedium)
			wait.Until(t, 30*time.Second, "a running", func() bool {
				ts := c.tasks(inst.ID)
				return len(ts) == 1 && ts[0].State == model.TaskRunning
			})
			c.m.Stop()
			if _, err := c.st.ActionRequest(c.ctx, model.ActionRequest{InstanceID: inst.ID, Action: tc.action, By: "op"}); err != nil {
				t.Fatal(err)
			}
			next := master.New(master.Config{Listen: "127.0.0.1:0"}, c.st, c.reg, c.reg, c.log)
			if err := next.Start(c.ctx); err != nil {
				t.Fatal(err)
			}
			defer next.Stop()
			wait.Until(t, 30*time.Second, "next master leads", next.IsLeader)
			if tc.action == model.ActionPause {
				os.WriteFile(gate, nil, 0o644)
			}
			got := c.finished(inst.ID)
			ts := c.tasks(inst.ID)
			if got.State != tc.instance || len(ts) != 1+tc.downRows || ts[0].State != tc.first ||
				(tc.downRows == 1 && ts[1].State != model.TaskPaused) {
				t.Fatalf("instance %s, tasks %+v", got.State, ts)
			}
			if b, _ := os.ReadFile(runs); strings.TrimSpace(string(b)) != "a" {
				t.Fatalf("executions %q", b)
			}
		})
	}
}
