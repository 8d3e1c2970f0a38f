package clustertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// runsFile is the marker file in a marker directory.
const runsFile = "runs"

// Marker returns cmd preceded by a shell line that appends one line to
// dir/runs each time the task starts on a worker: "<workflow instance id>
// <task instance id> <task name> <attempt>". Lines are short single
// appends, so concurrent tasks do not interleave them. Counting lines counts
// real executions, whatever the DB rows say.
func Marker(dir, cmd string) string {
	line := `echo "$BELUGA_WORKFLOW_INSTANCE_ID $BELUGA_TASK_INSTANCE_ID $BELUGA_TASK_NAME $BELUGA_ATTEMPT" >> ` +
		shellQuote(filepath.Join(dir, runsFile))
	if cmd == "" {
		return line
	}
	return line + "; " + cmd
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Execution is one line of a marker file: one start of a task on a worker.
type Execution struct {
	WorkflowInstanceID int64
	TaskInstanceID     int64
	Task               string
	Attempt            int
}

// Executions reads the executions recorded in dir for workflow instance id
// (every instance when id is 0), in the order they started.
func Executions(t testing.TB, dir string, id int64) []Execution {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, runsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Execution
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			t.Fatalf("marker line %q: want 4 fields", sc.Text())
		}
		wf, err1 := strconv.ParseInt(fs[0], 10, 64)
		ti, err2 := strconv.ParseInt(fs[1], 10, 64)
		at, err3 := strconv.Atoi(fs[3])
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("marker line %q: %v", sc.Text(), err)
		}
		if id == 0 || wf == id {
			out = append(out, Execution{WorkflowInstanceID: wf, TaskInstanceID: ti, Task: fs[2], Attempt: at})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Instance reads a workflow instance from the DB.
func (c *Cluster) Instance(t testing.TB, id int64) model.WorkflowInstance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst, err := c.Store.InstanceGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// WaitFinished waits until the instance has finished (succeeded, failed,
// stopped or paused) and returns its row; the test fails after within.
// It reads the DB, so it works while the api or a master is down.
func (c *Cluster) WaitFinished(t testing.TB, id int64, within time.Duration) model.WorkflowInstance {
	t.Helper()
	var inst model.WorkflowInstance
	var last error
	err := wait.Poll(within, fmt.Sprintf("instance %d to finish", id), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		inst, last = c.Store.InstanceGet(ctx, id)
		return last == nil && inst.State.Finished()
	})
	if err != nil {
		t.Fatalf("%v: state %q, last error %v", err, inst.State, last)
	}
	return inst
}

// Tasks returns the task instances of an instance by task name, attempts
// in order.
func (c *Cluster) Tasks(t testing.TB, id int64) map[string][]model.TaskInstance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := c.Store.TaskList(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]model.TaskInstance{}
	for _, r := range rows {
		out[r.Name] = append(out[r.Name], r)
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b model.TaskInstance) int { return a.Attempt - b.Attempt })
	}
	return out
}

// AssertRanOnce checks that the instance succeeded and that every task of
// its workflow ran exactly once: one execution in the marker dir, which is
// the attempt the DB records as succeeded. A task may have earlier attempts
// only if they were lost before reaching a worker: need_fault_tolerance,
// superseded, and never executed.
func (c *Cluster) AssertRanOnce(t testing.TB, id int64, dir string) {
	t.Helper()
	c.AssertRuns(t, id, dir, nil)
}

// AssertRuns checks that the instance succeeded and that task name
// executed want[name] times (1 for tasks not in want), and that the DB
// agrees with the executions (see AssertRunsPerAttempt).
func (c *Cluster) AssertRuns(t testing.TB, id int64, dir string, want map[string]int) {
	t.Helper()
	got := c.AssertRunsPerAttempt(t, id, dir)
	for name, n := range got {
		w, ok := want[name]
		if !ok {
			w = 1
		}
		if n != w {
			t.Fatalf("instance %d task %s executed %d times, want %d: executions %+v, rows %s",
				id, name, n, w, Executions(t, dir, id), rowList(c.Tasks(t, id)[name]))
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Fatalf("AssertRuns: the workflow of instance %d has no task %q", id, name)
		}
	}
}

// AssertRunsPerAttempt checks that the instance succeeded and that the
// executions recorded in dir agree with the DB, whatever their number, and
// returns the executions per task (every task of the workflow is a key):
//   - every execution is a distinct task instance row of this task and
//     attempt (a task runs at most once per attempt);
//   - the last attempt of each task succeeded, executed once, and is the
//     only one not superseded;
//   - every earlier attempt is need_fault_tolerance (lost, with or without
//     having started) and superseded.
func (c *Cluster) AssertRunsPerAttempt(t testing.TB, id int64, dir string) map[string]int {
	t.Helper()
	inst := c.Instance(t, id)
	if inst.State != model.WorkflowSucceeded {
		t.Fatalf("instance %d is %s (%s), want succeeded", id, inst.State, inst.Reason)
	}
	names := c.taskNames(t, inst.DefinitionID)
	rows := c.Tasks(t, id)
	byTask := map[string][]Execution{}
	for _, e := range Executions(t, dir, id) {
		byTask[e.Task] = append(byTask[e.Task], e)
	}
	for name := range byTask {
		if !slices.Contains(names, name) {
			t.Fatalf("instance %d: marker names task %q, not in workflow %s", id, name, inst.Workflow)
		}
	}
	counts := map[string]int{}
	for _, name := range names {
		execs, attempts := byTask[name], rows[name]
		counts[name] = len(execs)
		if len(attempts) == 0 {
			t.Fatalf("instance %d task %s has no task instance row", id, name)
		}
		ran := map[int64]int{}
		for _, e := range execs {
			i := slices.IndexFunc(attempts, func(r model.TaskInstance) bool { return r.ID == e.TaskInstanceID })
			if i < 0 || attempts[i].Attempt != e.Attempt {
				t.Fatalf("instance %d task %s: execution %+v matches no row of the task: %s", id, name, e, rowList(attempts))
			}
			if ran[e.TaskInstanceID]++; ran[e.TaskInstanceID] > 1 {
				t.Fatalf("instance %d task %s: attempt %d (task instance %d) executed twice", id, name, e.Attempt, e.TaskInstanceID)
			}
		}
		last := attempts[len(attempts)-1]
		if !last.State.Success() || last.Superseded || ran[last.ID] != 1 {
			t.Fatalf("instance %d task %s: last attempt must have succeeded, not superseded, executed once (%d times): %s",
				id, name, ran[last.ID], rowList(attempts))
		}
		for _, r := range attempts[:len(attempts)-1] {
			if r.State != model.TaskNeedFaultTolerance || !r.Superseded {
				t.Fatalf("instance %d task %s: an earlier attempt must be need_fault_tolerance and superseded: %s", id, name, rowList(attempts))
			}
		}
	}
	return counts
}

func (c *Cluster) taskNames(t testing.TB, definitionID int64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	def, err := c.Store.WorkflowDefinition(ctx, definitionID)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := spec.ParseStored(def.SpecJSON)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(wf.Tasks))
	for i, tk := range wf.Tasks {
		names[i] = tk.Name
	}
	return names
}

func rowList(rs []model.TaskInstance) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "[id %d attempt %d %s superseded=%v host %s] ", r.ID, r.Attempt, r.State, r.Superseded, r.Host)
	}
	return b.String()
}

// AssertNoStuckRows checks the whole DB once every instance has ended: no
// workflow instance still submitted, running or on its way to a pause or
// stop, and no task instance submitted, dispatched, running or delayed.
func (c *Cluster) AssertNoStuckRows(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	insts, total, err := c.Store.InstanceList(ctx, store.InstanceFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if total > int64(len(insts)) {
		t.Fatalf("AssertNoStuckRows reads at most %d instances, the DB has %d", len(insts), total)
	}
	for _, w := range insts {
		if !w.State.Finished() {
			t.Errorf("workflow instance %d (%s) is stuck in %s", w.ID, w.Workflow, w.State)
		}
		tasks, err := c.Store.TaskList(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range tasks {
			switch tk.State {
			case model.TaskSubmitted, model.TaskDispatched, model.TaskRunning, model.TaskDelayed:
				t.Errorf("task instance %d (%s attempt %d of instance %d) is stuck in %s on %q",
					tk.ID, tk.Name, tk.Attempt, w.ID, tk.State, tk.Host)
			}
		}
	}
}

// WaitExecution waits until task of workflow instance id has started on a
// worker (its line is in the marker dir) and returns the execution; with
// several, the latest. The test fails after within.
func WaitExecution(t testing.TB, dir string, id int64, task string, within time.Duration) Execution {
	t.Helper()
	var got Execution
	err := wait.Poll(within, fmt.Sprintf("task %s of instance %d to start", task, id), func() bool {
		for _, e := range Executions(t, dir, id) {
			if e.Task == task {
				got = e
			}
		}
		return got.Task != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
