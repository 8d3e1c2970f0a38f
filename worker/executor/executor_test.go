package executor

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/internal/lifeline"
	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

// sent is one report the fake master received.
type sent struct {
	addr string
	msg  message.Message
}

// fakeMaster records reports and DB-acks them, in the order received, unless
// told to withhold. A task runs only once its ack is DB-acked.
type fakeMaster struct {
	mu       sync.Mutex
	got      []sent
	withhold func(addr string, id int64, k message.AckKind) bool // nil: DB-ack all
	acks     []message.DBAck                                     // not delivered yet
	draining bool                                                // a goroutine delivers acks
	e        *Executor
}

func (f *fakeMaster) Send(_ context.Context, addr string, m message.Message) error {
	var a message.DBAck
	switch m := m.(type) {
	case message.Ack:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindAck}
	case message.Running:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindRunning}
	case message.Result:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindResult}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, sent{addr, m})
	if f.withhold != nil && f.withhold(addr, a.TaskInstanceID, a.Kind) {
		return nil
	}
	// Acked from another goroutine, as the transport would (the sender must
	// never wait on the owner), and in order, as one connection would.
	f.acks = append(f.acks, a)
	if !f.draining {
		f.draining = true
		go f.drain()
	}
	return nil
}

// drain delivers queued DB-acks and returns when none is left.
func (f *fakeMaster) drain() {
	for {
		f.mu.Lock()
		if len(f.acks) == 0 {
			f.draining = false
			f.mu.Unlock()
			return
		}
		a := f.acks[0]
		f.acks = f.acks[1:]
		e := f.e
		f.mu.Unlock()
		e.DBAck(a)
	}
}

// hold withholds the DB-acks of the given kinds of reports sent to addr
// (none: DB-ack everything sent there again).
func (f *fakeMaster) hold(addr string, kinds ...message.AckKind) {
	f.holdIf(func(a string, _ int64, k message.AckKind) bool {
		return a == addr && slices.Contains(kinds, k)
	})
}

// holdIf withholds the DB-acks for which held is true.
func (f *fakeMaster) holdIf(held func(addr string, id int64, k message.AckKind) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.withhold = held
}

// reports returns what addr received for task id ("" addr: any).
func (f *fakeMaster) reports(addr string, id int64) []message.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []message.Message
	for _, s := range f.got {
		if (addr == "" || s.addr == addr) && taskOf(s.msg) == id {
			out = append(out, s.msg)
		}
	}
	return out
}

func (f *fakeMaster) count(addr string, id int64, typ message.Type) int {
	n := 0
	for _, m := range f.reports(addr, id) {
		if m.Type() == typ {
			n++
		}
	}
	return n
}

func (f *fakeMaster) result(id int64) (message.Result, bool) {
	for _, m := range f.reports("", id) {
		if r, ok := m.(message.Result); ok {
			return r, true
		}
	}
	return message.Result{}, false
}

func (f *fakeMaster) running(id int64) (message.Running, bool) {
	for _, m := range f.reports("", id) {
		if r, ok := m.(message.Running); ok {
			return r, true
		}
	}
	return message.Running{}, false
}

func taskOf(m message.Message) int64 {
	switch m := m.(type) {
	case message.Ack:
		return m.TaskInstanceID
	case message.Running:
		return m.TaskInstanceID
	case message.Result:
		return m.TaskInstanceID
	}
	return 0
}

// TestMain fails the run if goroutines outlive the tests: Stop must wait for
// everything the executor started.
func TestMain(m *testing.M) {
	builtin.Register()
	tasktype.MaybeRunChild() // sql tasks re-execute this binary
	os.Exit(leakcheck.Run(m))
}

const masterAddr = "master-1:5678"

type bundle struct {
	e      *Executor
	master *fakeMaster
	dir    string
}

func setup(t *testing.T, cfg Config) *bundle {
	t.Helper()
	b := &bundle{master: &fakeMaster{}, dir: t.TempDir()}
	cfg.Host = "worker-1:1234"
	cfg.DataDir = b.dir
	if cfg.ResendInterval == 0 {
		cfg.ResendInterval = 50 * time.Millisecond
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = 500 * time.Millisecond
	}
	if cfg.RunningDelay == 0 {
		// Running at once: many tests follow a short task's every report.
		// The held Running has tests of its own.
		cfg.RunningDelay = -1
	}
	e, err := New(cfg, b.master, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.master.e = e
	b.e = e
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return b
}

func dispatch(id int64, cmd string) message.Dispatch {
	return message.Dispatch{
		TaskInstanceID:     id,
		WorkflowInstanceID: 7,
		Name:               "task" + strconv.FormatInt(id, 10),
		TaskType:           "shell",
		Command:            cmd,
		Attempt:            1,
		MasterAddr:         masterAddr,
		Epoch:              1,
	}
}

func (b *bundle) mustDispatch(t *testing.T, d message.Dispatch) {
	t.Helper()
	if r := b.e.Dispatch(d); !r.Accepted {
		t.Fatalf("dispatch %d refused: %s", d.TaskInstanceID, r.Reason)
	}
}

func (b *bundle) waitResult(t *testing.T, id int64) message.Result {
	t.Helper()
	var r message.Result
	wait.Until(t, 10*time.Second, fmt.Sprintf("result of task %d", id), func() bool {
		var ok bool
		r, ok = b.master.result(id)
		return ok
	})
	return r
}

// queuedForSlot reports whether task id is admitted and waits for a slot.
func (b *bundle) queuedForSlot(id int64) bool {
	in := false
	b.e.call(func() {
		in = slices.ContainsFunc(b.e.st.queue, func(t *task) bool { return t.d.TaskInstanceID == id })
	})
	return in
}

// pendingCount is the number of tasks with reports not DB-acked yet.
func (b *bundle) pendingCount() int {
	n := -1
	b.e.call(func() { n = len(b.e.st.pending) })
	return n
}

func (b *bundle) waitRunning(t *testing.T, id int64) message.Running {
	t.Helper()
	var r message.Running
	wait.Until(t, 10*time.Second, fmt.Sprintf("running of task %d", id), func() bool {
		var ok bool
		r, ok = b.master.running(id)
		return ok
	})
	return r
}

func TestRunLogEnvAndExitCode(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	d := dispatch(1, `echo "out $GREETING $BELUGA_TASK_NAME $BELUGA_ATTEMPT $BELUGA_WORKFLOW_INSTANCE_ID $BELUGA_TASK_INSTANCE_ID"; echo "err $PWD" >&2; exit 3`)
	// The BELUGA_* params come from the master, resolved in one place.
	d.Env = params.ForTask(params.TaskInputs{Task: d.Name, Attempt: 1, WorkflowInstance: 7, TaskInstance: 1,
		TaskParams: map[string]string{"GREETING": "hello world"}})
	b.mustDispatch(t, d)
	res := b.waitResult(t, 1)
	if res.State != "failed" || res.ExitCode != 3 || res.Host != "worker-1:1234" {
		t.Fatalf("result = %+v, want failed with exit code 3 from worker-1:1234", res)
	}
	if res.EndTime.Before(res.StartTime) || res.StartTime.IsZero() {
		t.Fatalf("result times start %v end %v", res.StartTime, res.EndTime)
	}
	msgs := b.master.reports(masterAddr, 1)
	ack, ok := msgs[0].(message.Ack)
	if !ok {
		t.Fatalf("first report is %T, want Ack", msgs[0])
	}
	// The next report is Running (a slow DB-ack may let a re-sent ack slip
	// in between).
	next := slices.IndexFunc(msgs, func(m message.Message) bool { return m.Type() != message.TypeAck })
	if _, ok := msgs[next].(message.Running); !ok {
		t.Fatalf("report after the ack is %T, want Running", msgs[next])
	}
	wantLog := filepath.Join(b.dir, "logs", "7", "1.log")
	if ack.LogPath != wantLog {
		t.Fatalf("log path %q, want %q", ack.LogPath, wantLog)
	}
	if p, ok := b.e.LogPath(1); !ok || p != wantLog {
		t.Fatalf("LogPath(1) = %q, %v", p, ok)
	}
	log, err := os.ReadFile(wantLog)
	if err != nil {
		t.Fatal(err)
	}
	workDir := filepath.Join(b.dir, "work", "7", "1")
	want := "out hello world task1 1 7 1\nerr " + workDir + "\n"
	if string(log) != want {
		t.Fatalf("log = %q, want %q", log, want)
	}
}

func TestSucceeded(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shell: "sh"})
	b.mustDispatch(t, dispatch(1, "true"))
	if res := b.waitResult(t, 1); res.State != "succeeded" || res.ExitCode != 0 {
		t.Fatalf("result = %+v, want succeeded", res)
	}
	// Every report DB-acked: nothing left pending, the task is remembered.
	wait.Until(t, 5*time.Second, "pending reports to drain", func() bool {
		n := -1
		b.e.call(func() { n = len(b.e.st.pending) })
		return n == 0
	})
}

// gated returns a command that waits until the file gate exists, then
// sleeps a little, and the function that opens the gate.
func gated(t *testing.T) (string, func()) {
	gate := filepath.Join(sharedDir(t), "gate")
	return fmt.Sprintf("while [ ! -e %s ]; do sleep 0.01; done; sleep 0.05", gate), func() {
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sharedDir is a directory the test and its tasks both reach: as root a
// task runs as the task user, which cannot enter t.TempDir() (0700) and
// does not see it in its sandbox.
func sharedDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "beluga-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSlotsLimitConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Slots: 2})
	cmd, open := gated(t)
	for id := int64(1); id <= 5; id++ {
		b.mustDispatch(t, dispatch(id, cmd))
	}
	// Tasks start once their acks are DB-acked; until then they count as
	// queued, so the five are all counted from the start.
	if s := b.e.Stats(); s.Running+s.Queued != 5 || s.Capacity != 2 {
		t.Fatalf("stats after dispatch = %+v, want 5 running or queued", s)
	}
	wait.Until(t, 5*time.Second, "both slots in use", func() bool {
		s := b.e.Stats()
		return s.Running == 2 && s.Queued == 3
	})
	open()
	type span struct{ start, end time.Time }
	var spans []span
	for id := int64(1); id <= 5; id++ {
		r := b.waitResult(t, id)
		if r.State != "succeeded" {
			t.Fatalf("task %d: %+v", id, r)
		}
		spans = append(spans, span{r.StartTime, r.EndTime})
	}
	// At each start, count the spans covering it: never more than the slots.
	for _, s := range spans {
		n := 0
		for _, o := range spans {
			if !o.start.After(s.start) && o.end.After(s.start) {
				n++
			}
		}
		if n > 2 {
			t.Fatalf("%d tasks ran at once at %v, want at most 2", n, s.start)
		}
	}
	// FIFO: task 5 started after tasks 1 and 2.
	if !spans[4].start.After(spans[0].start) || !spans[4].start.After(spans[1].start) {
		t.Fatalf("queue not FIFO: %+v", spans)
	}
	wait.Until(t, 5*time.Second, "stats idle", func() bool {
		s := b.e.Stats()
		return s.Running == 0 && s.Queued == 0
	})
}

// startGroup dispatches a task that forks a background child and waits until
// the group has the shell and both sleeps; it returns the group's pids.
func startGroup(t *testing.T, b *bundle, d message.Dispatch) (int, []int) {
	t.Helper()
	b.mustDispatch(t, d)
	run := b.waitRunning(t, d.TaskInstanceID)
	var pids []int
	wait.Until(t, 5*time.Second, "shell and two sleeps in the group", func() bool {
		pids = procfs.GroupMembers(run.PID)
		return len(pids) >= 3
	})
	return run.PID, pids
}

// A task that ends within RunningDelay sends no Running report: its Result
// carries the start time and pid instead.
func TestShortTaskReportsOnlyResult(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{RunningDelay: time.Hour})
	b.mustDispatch(t, dispatch(1, "echo $$ > pid"))
	res := b.waitResult(t, 1)
	if res.State != "succeeded" || res.StartTime.IsZero() || res.EndTime.Before(res.StartTime) {
		t.Fatalf("result = %+v, want succeeded with its start and end times", res)
	}
	out, err := os.ReadFile(filepath.Join(b.dir, "work", "7", "1", "pid"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)); res.PID == 0 || strconv.Itoa(res.PID) != want {
		t.Fatalf("result pid %d, want the shell's %s", res.PID, want)
	}
	if _, ok := b.master.running(1); ok {
		t.Fatal("a task that ended within RunningDelay reported Running")
	}
	wait.Until(t, 5*time.Second, "the task settled", func() bool { return b.pendingCount() == 0 })
}

// A task still running after RunningDelay reports Running then, with its
// pid and start time.
func TestHeldRunningSentAfterDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{RunningDelay: 30 * time.Millisecond})
	b.mustDispatch(t, dispatch(1, "sleep 100"))
	run := b.waitRunning(t, 1)
	if run.PID == 0 || run.StartTime.IsZero() {
		t.Fatalf("running = %+v, want its pid and start time", run)
	}
	if d := time.Since(run.StartTime); d < 30*time.Millisecond {
		t.Fatalf("running reported %v after the start, want after RunningDelay", d)
	}
	b.e.Kill(1)
	if res := b.waitResult(t, 1); res.State != "killed" || res.PID != run.PID {
		t.Fatalf("result = %+v, want killed, pid %d", res, run.PID)
	}
}

// A kill of a running task whose Running report is still held kills its
// whole group: the executor has the process, whatever the master knows.
func TestKillWhileRunningHeld(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{RunningDelay: time.Hour})
	b.mustDispatch(t, dispatch(1, "sleep 100 & sleep 100; wait"))
	var pgid int
	wait.Until(t, 5*time.Second, "the task running", func() bool {
		b.e.call(func() {
			if tk := b.e.st.tasks[1]; tk.phase == phaseRunning {
				pgid = tk.pid
			}
		})
		return pgid > 0
	})
	var pids []int
	wait.Until(t, 5*time.Second, "shell and two sleeps in the group", func() bool {
		pids = procfs.GroupMembers(pgid)
		return len(pids) >= 3
	})
	if r := b.e.Kill(1); !r.Found {
		t.Fatalf("kill = %+v, want found", r)
	}
	res := b.waitResult(t, 1)
	if res.State != "killed" || res.PID != pgid || res.StartTime.IsZero() {
		t.Fatalf("result = %+v, want killed with pid %d and its start time", res, pgid)
	}
	wait.Until(t, 5*time.Second, "every process of the group to be gone", func() bool { return procfs.Gone(pgid, pids) })
	if _, ok := b.master.running(1); ok {
		t.Fatal("Running reported although RunningDelay had not passed")
	}
}

func TestKillKillsWholeGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	pgid, pids := startGroup(t, b, dispatch(1, "sleep 100 & sleep 100; wait"))
	if r := b.e.Kill(1); !r.Found || r.TaskInstanceID != 1 {
		t.Fatalf("kill = %+v, want found", r)
	}
	res := b.waitResult(t, 1)
	if res.State != "killed" {
		t.Fatalf("result = %+v, want killed", res)
	}
	wait.Until(t, 5*time.Second, "every process of the group to be gone", func() bool { return procfs.Gone(pgid, pids) })
	if r := b.e.Kill(999); r.Found {
		t.Fatalf("kill of unknown task found it")
	}
}

func TestKillSurvivorOfSIGTERMGetsSIGKILL(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{KillGrace: 100 * time.Millisecond})
	// The background child ignores SIGTERM; the shell exits on it.
	pgid, pids := startGroup(t, b, dispatch(1, "(trap '' TERM; sleep 100) & sleep 100; wait"))
	b.e.Kill(1)
	if res := b.waitResult(t, 1); res.State != "killed" {
		t.Fatalf("result = %+v, want killed", res)
	}
	wait.Until(t, 5*time.Second, "the SIGTERM-proof child to be gone", func() bool { return procfs.Gone(pgid, pids) })
}

func TestKillQueuedNeverStarts(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Slots: 1})
	b.mustDispatch(t, dispatch(1, "sleep 100"))
	b.mustDispatch(t, dispatch(2, "touch started"))
	b.waitRunning(t, 1)
	wait.Until(t, 5*time.Second, "task 2 admitted and queued for the slot", func() bool { return b.queuedForSlot(2) })
	if r := b.e.Kill(2); !r.Found {
		t.Fatal("queued task not found")
	}
	res := b.waitResult(t, 2)
	if res.State != "killed" || res.Message != "killed before start" {
		t.Fatalf("result = %+v, want killed before start", res)
	}
	b.e.Kill(1)
	b.waitResult(t, 1)
	if n := b.master.count("", 2, message.TypeRunning); n != 0 {
		t.Fatalf("killed queued task reported running %d times", n)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "work", "7", "2", "started")); !os.IsNotExist(err) {
		t.Fatalf("killed queued task ran: %v", err)
	}
	if s := b.e.Stats(); s.Queued != 0 {
		t.Fatalf("stats = %+v, want empty queue", s)
	}
}

func TestTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	d := dispatch(1, "sleep 100 & sleep 100; wait")
	d.TimeoutMillis = 1000
	pgid, pids := startGroup(t, b, d)
	res := b.waitResult(t, 1)
	if res.State != "failed" || !strings.HasPrefix(res.Message, "timed out after 1s") {
		t.Fatalf("result = %+v, want failed: timed out after 1s", res)
	}
	wait.Until(t, 5*time.Second, "every process of the group to be gone", func() bool { return procfs.Gone(pgid, pids) })
}

func TestResendUntilDBAckedAndSetMaster(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResendInterval: 20 * time.Millisecond})
	// The ack is DB-acked (the task may run); running and result are not.
	b.master.hold(masterAddr, message.KindRunning, message.KindResult)
	b.mustDispatch(t, dispatch(1, "true"))
	wait.Until(t, 5*time.Second, "running and result re-sent to a master that does not DB-ack them", func() bool {
		return b.master.count(masterAddr, 1, message.TypeRunning) >= 3 &&
			b.master.count(masterAddr, 1, message.TypeResult) >= 3
	})
	// Order is kept per task: the first ack, running and result go out in
	// that order (re-sends may come in between).
	first := map[message.Type]int{}
	for i, m := range b.master.reports(masterAddr, 1) {
		if _, seen := first[m.Type()]; !seen {
			first[m.Type()] = i
		}
	}
	if !(first[message.TypeAck] < first[message.TypeRunning] && first[message.TypeRunning] < first[message.TypeResult]) {
		t.Fatalf("first reports out of order: %v", first)
	}

	const second = "master-2:5678"
	b.e.SetMaster(second)
	wait.Until(t, 5*time.Second, "un-acked reports redirected to the new master", func() bool {
		return b.master.count(second, 1, message.TypeRunning) >= 1 &&
			b.master.count(second, 1, message.TypeResult) >= 1
	})
	// The second master DB-acks: nothing is sent anywhere any more.
	wait.Until(t, 5*time.Second, "pending reports to drain", func() bool { return b.pendingCount() == 0 })
	if n := b.master.count(second, 1, message.TypeAck); n != 0 {
		t.Fatalf("the DB-acked ack was sent %d times to the new master", n)
	}
	before := len(b.master.reports("", 1))
	deadline := time.Now().Add(100 * time.Millisecond) // five resend intervals
	for time.Now().Before(deadline) {
		if n := len(b.master.reports("", 1)); n != before {
			t.Fatalf("%d reports sent after every report was DB-acked", n-before)
		}
		time.Sleep(10 * time.Millisecond) // time is the subject: nothing may be sent for five intervals
	}
}

func TestDuplicateDispatchRunsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	d := dispatch(1, "echo run >> count")
	b.mustDispatch(t, d)
	r := b.e.Dispatch(d)
	if !r.Accepted || !strings.Contains(r.Reason, "duplicate") {
		t.Fatalf("duplicate reply = %+v, want accepted as duplicate", r)
	}
	b.waitResult(t, 1)
	wait.Until(t, 5*time.Second, "task settled", func() bool {
		n := -1
		b.e.call(func() { n = len(b.e.st.pending) })
		return n == 0
	})
	if r := b.e.Dispatch(d); !r.Accepted {
		t.Fatalf("duplicate of finished task refused: %+v", r)
	}
	if s := b.e.Stats(); s.Running != 0 || s.Queued != 0 {
		t.Fatalf("duplicate started something: %+v", s)
	}
	out, err := os.ReadFile(filepath.Join(b.dir, "work", "7", "1", "count"))
	if err != nil || string(out) != "run\n" {
		t.Fatalf("task ran %q (err %v), want once", out, err)
	}
	// Running may be re-sent (it was not DB-acked yet at the duplicate), but
	// always for the same process.
	pids := map[int]bool{}
	for _, m := range b.master.reports("", 1) {
		if r, ok := m.(message.Running); ok {
			pids[r.PID] = true
		}
	}
	if len(pids) != 1 {
		t.Fatalf("running reported for %d processes, want 1", len(pids))
	}
}

func TestDBAckKillDropsTask(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	pgid, pids := startGroup(t, b, dispatch(1, "sleep 100 & sleep 100; wait"))
	b.e.DBAck(message.DBAck{TaskInstanceID: 1, Kind: message.KindRunning, Kill: true})
	wait.Until(t, 5*time.Second, "the dropped task's group to be gone", func() bool { return procfs.Gone(pgid, pids) })
	wait.Until(t, 5*time.Second, "slot freed", func() bool { return b.e.Stats().Running == 0 })
	if _, ok := b.master.result(1); ok {
		t.Fatal("a dropped task reported a result")
	}
	// Given here again by the master (the other worker failed, say): a new
	// assignment that runs, once, after its ack is persisted.
	if r := b.e.Dispatch(dispatch(1, "echo again >> count")); !r.Accepted {
		t.Fatalf("dispatch of a task dropped earlier refused: %+v", r)
	}
	b.waitResult(t, 1)
}

func TestDispatchRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	noMaster := dispatch(5, "true")
	noMaster.MasterAddr = ""
	stale := dispatch(6, "true")
	stale.Epoch = 0
	cases := []struct {
		name string
		d    message.Dispatch
	}{
		{"no master", noMaster}, // before any dispatch names a master
		{"zero id", dispatch(0, "true")},
		{"empty", dispatch(2, "")},
		{"type", func() message.Dispatch { d := dispatch(3, "true"); d.TaskType = "spark"; return d }()},
		{"env name", func() message.Dispatch { d := dispatch(4, "true"); d.Env = map[string]string{"A=B": "x"}; return d }()},
		{"nul", dispatch(7, "echo \x00")},
		{"neg timeout", func() message.Dispatch { d := dispatch(8, "true"); d.TimeoutMillis = -1; return d }()},
		{"neg workflow", func() message.Dispatch { d := dispatch(9, "true"); d.WorkflowInstanceID = -1; return d }()},
		{"stale epoch", stale},
	}
	for _, c := range cases {
		if c.name == "stale epoch" {
			b.mustDispatch(t, dispatch(1, "true")) // epoch 1 seen
		}
		if r := b.e.Dispatch(c.d); r.Accepted || r.Reason == "" {
			t.Errorf("%s: reply %+v, want refused with a reason", c.name, r)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	f := &fakeMaster{}
	for name, cfg := range map[string]Config{
		"no host": {},
		"shell":   {Host: "h", Shell: "zsh-nope"},
		"slots":   {Host: "h", Slots: -1},
		"resend":  {Host: "h", ResendInterval: -1},
	} {
		if _, err := New(cfg, f, nil); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	if _, err := New(Config{Host: "h"}, nil, nil); err == nil {
		t.Error("New accepted a nil sender")
	}
}

func TestStopKillsSilentlyAndLeaksNothing(t *testing.T) {
	// The forking threads live for the process: started before counting.
	lifeline.Do(func() {})
	_ = forkThreads.Start()
	before := runtime.NumGoroutine()
	b := &bundle{master: &fakeMaster{}, dir: t.TempDir()}
	e, err := New(Config{Host: "w", DataDir: b.dir, Slots: 1, KillGrace: 200 * time.Millisecond}, b.master, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.e, b.master.e = e, e
	e.Stop() // before Start: harmless
	if err := e.Start(context.Background()); err != ErrStopped {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}

	e, _ = New(Config{Host: "w", DataDir: b.dir, Slots: 1, KillGrace: 200 * time.Millisecond}, b.master, zaptest.NewLogger(t))
	b.e, b.master.e = e, e
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pgid, pids := startGroup(t, b, dispatch(1, "(trap '' TERM; sleep 100) & sleep 100; wait"))
	b.mustDispatch(t, dispatch(2, "touch started")) // queued behind the slot
	e.Stop()
	if !procfs.Gone(pgid, pids) {
		t.Fatalf("processes of group %d alive after Stop", pgid)
	}
	e.Stop() // twice: harmless
	if r := e.Dispatch(dispatch(3, "true")); r.Accepted {
		t.Fatal("dispatch accepted after Stop")
	}
	if _, ok := b.master.result(1); ok {
		t.Fatal("Stop reported a result for the task it killed")
	}
	if _, err := os.Stat(filepath.Join(b.dir, "work", "7", "2", "started")); !os.IsNotExist(err) {
		t.Fatalf("queued task ran during Stop: %v", err)
	}
	wait.Until(t, 5*time.Second, "goroutines to exit", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

func TestRememberedIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Remembered: 2})
	for id := int64(1); id <= 3; id++ {
		b.mustDispatch(t, dispatch(id, "true"))
		b.waitResult(t, id)
		wait.Until(t, 5*time.Second, "task settled", func() bool {
			n := -1
			b.e.call(func() { n = len(b.e.st.pending) })
			return n == 0
		})
	}
	if _, ok := b.e.LogPath(1); ok {
		t.Fatal("task 1 still remembered beyond Remembered=2")
	}
	for _, id := range []int64{2, 3} {
		if _, ok := b.e.LogPath(id); !ok {
			t.Fatalf("task %d forgotten", id)
		}
	}
}

func TestExistingLogIsAppendedAndSparesCleaned(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	logPath := filepath.Join(b.dir, "logs", "7", "1.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, []byte("earlier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 5*time.Second, "the spare pool to fill", func() bool { return len(b.e.spares.files) > 0 })
	b.mustDispatch(t, dispatch(1, "echo later"))
	b.waitResult(t, 1)
	if got, _ := os.ReadFile(logPath); string(got) != "earlier\nlater\n" {
		t.Fatalf("log = %q, want the earlier content kept", got)
	}
	b.e.Stop()
	if _, err := os.Stat(filepath.Join(b.dir, ".spare")); !os.IsNotExist(err) {
		t.Fatalf("spare dir left after Stop: %v", err)
	}
}

// notStarted fails t if task id shows any sign of having run: a Running or
// Result report, a log file or a work dir.
func (b *bundle) notStarted(t *testing.T, id int64) {
	t.Helper()
	if n := b.master.count("", id, message.TypeRunning); n != 0 {
		t.Fatalf("task %d reported running %d times", id, n)
	}
	if _, ok := b.master.result(id); ok {
		t.Fatalf("task %d reported a result", id)
	}
	name := strconv.FormatInt(id, 10)
	for _, p := range []string{filepath.Join(b.dir, "logs", "7", name+".log"), filepath.Join(b.dir, "work", "7", name)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("task %d started: %s exists (%v)", id, p, err)
		}
	}
}

func TestUnackedAckNeverStartsAndIsResent(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResendInterval: 20 * time.Millisecond})
	b.master.hold(masterAddr, message.KindAck)
	b.mustDispatch(t, dispatch(1, "echo ran"))
	wait.Until(t, 5*time.Second, "the ack re-sent while not DB-acked", func() bool {
		return b.master.count(masterAddr, 1, message.TypeAck) >= 3
	})
	b.notStarted(t, 1)
	// Awaiting admission counts as queued: it is this worker's work.
	if s := b.e.Stats(); s.Running != 0 || s.Queued != 1 {
		t.Fatalf("stats = %+v, want 0 running, 1 queued", s)
	}
	if b.queuedForSlot(1) {
		t.Fatal("task queued for a slot before its ack was DB-acked")
	}
	b.master.hold(masterAddr) // the next re-sent ack is DB-acked
	if res := b.waitResult(t, 1); res.State != "succeeded" {
		t.Fatalf("result = %+v, want succeeded", res)
	}
	if got, _ := os.ReadFile(filepath.Join(b.dir, "logs", "7", "1.log")); string(got) != "ran\n" {
		t.Fatalf("log = %q, want one run", got)
	}
	// Running came only after the ack was DB-acked, i.e. after the first ack.
	msgs := b.master.reports(masterAddr, 1)
	run := slices.IndexFunc(msgs, func(m message.Message) bool { return m.Type() == message.TypeRunning })
	if run < 3 {
		t.Fatalf("running was report %d, want after the three re-sent acks", run)
	}
}

func TestDuplicateDispatchResendsAckAtOnce(t *testing.T) {
	t.Parallel()
	// No resend tick within the test: every extra ack comes from a duplicate.
	b := setup(t, Config{ResendInterval: time.Hour})
	b.master.hold(masterAddr, message.KindAck)
	d := dispatch(1, "echo ran")
	b.mustDispatch(t, d)
	wait.Until(t, 5*time.Second, "the first ack", func() bool { return b.master.count(masterAddr, 1, message.TypeAck) == 1 })
	if r := b.e.Dispatch(d); !r.Accepted || !strings.Contains(r.Reason, "duplicate") {
		t.Fatalf("duplicate reply = %+v, want accepted as duplicate", r)
	}
	wait.Until(t, 5*time.Second, "the ack re-sent on the duplicate", func() bool {
		return b.master.count(masterAddr, 1, message.TypeAck) == 2
	})
	b.notStarted(t, 1)
	b.master.hold(masterAddr)
	b.mustDispatch(t, d) // re-sends the ack, DB-acked this time
	b.waitResult(t, 1)
	if got, _ := os.ReadFile(filepath.Join(b.dir, "logs", "7", "1.log")); string(got) != "ran\n" {
		t.Fatalf("log = %q, want one run", got)
	}
}

func TestDBAckKillBeforeAdmissionNeverRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResendInterval: 20 * time.Millisecond})
	b.master.hold(masterAddr, message.KindAck)
	b.mustDispatch(t, dispatch(1, "echo ran"))
	wait.Until(t, 5*time.Second, "the ack", func() bool { return b.master.count(masterAddr, 1, message.TypeAck) >= 1 })
	b.e.DBAck(message.DBAck{TaskInstanceID: 1, Kind: message.KindAck, Kill: true})
	// A late plain DB-ack (a stale leader's) must not start it either.
	b.e.DBAck(message.DBAck{TaskInstanceID: 1, Kind: message.KindAck})
	if s := b.e.Stats(); s.Running != 0 || s.Queued != 0 {
		t.Fatalf("stats = %+v, want nothing running or queued", s)
	}
	if n := b.pendingCount(); n != 0 {
		t.Fatalf("%d tasks still pending after the drop", n)
	}
	// At most the ack the sender held already goes out; no more re-sends.
	before := b.master.count(masterAddr, 1, message.TypeAck)
	deadline := time.Now().Add(100 * time.Millisecond) // five resend intervals
	for time.Now().Before(deadline) {
		if n := b.master.count(masterAddr, 1, message.TypeAck); n > before+1 {
			t.Fatalf("ack re-sent %d times after the drop", n-before)
		}
		time.Sleep(10 * time.Millisecond) // time is the subject: nothing may be sent for five intervals
	}
	b.notStarted(t, 1)
}

func TestKillBeforeAdmissionReportsKilled(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResendInterval: 20 * time.Millisecond})
	b.master.hold(masterAddr, message.KindAck)
	b.mustDispatch(t, dispatch(1, "echo ran"))
	if r := b.e.Kill(1); !r.Found {
		t.Fatal("task awaiting admission not found")
	}
	res := b.waitResult(t, 1)
	if res.State != "killed" || res.Message != "killed before start" || res.WorkflowInstanceID != 7 {
		t.Fatalf("result = %+v, want killed before start of workflow instance 7", res)
	}
	if s := b.e.Stats(); s.Running != 0 || s.Queued != 0 {
		t.Fatalf("stats = %+v, want nothing running or queued", s)
	}
	// The master persists the ack after all: the task still never starts.
	b.master.hold(masterAddr)
	b.e.DBAck(message.DBAck{TaskInstanceID: 1, Kind: message.KindAck})
	wait.Until(t, 5*time.Second, "ack and result DB-acked", func() bool { return b.pendingCount() == 0 })
	if n := b.master.count("", 1, message.TypeRunning); n != 0 {
		t.Fatalf("killed task reported running %d times", n)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "logs", "7", "1.log")); !os.IsNotExist(err) {
		t.Fatalf("killed task started: %v", err)
	}
	if s := b.e.Stats(); s.Running != 0 || s.Queued != 0 {
		t.Fatalf("stats = %+v after the DB-ack, want nothing running or queued", s)
	}
}

func TestStopWhileAwaitingAdmission(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Slots: 3, KillGrace: 300 * time.Millisecond})
	// Task 1 runs and ignores SIGTERM, so the owner lives through KillGrace
	// of the Stop; tasks 2 and 3 await admission, with free slots.
	b.master.holdIf(func(_ string, id int64, _ message.AckKind) bool { return id != 1 })
	b.mustDispatch(t, dispatch(1, "trap '' TERM; sleep 100"))
	pgid := b.waitRunning(t, 1).PID
	for id := int64(2); id <= 3; id++ {
		b.mustDispatch(t, dispatch(id, "echo ran"))
	}
	wait.Until(t, 5*time.Second, "acks of tasks 2 and 3", func() bool {
		return b.master.count(masterAddr, 2, message.TypeAck) >= 1 && b.master.count(masterAddr, 3, message.TypeAck) >= 1
	})
	if s := b.e.Stats(); s.Running != 1 || s.Queued != 2 {
		t.Fatalf("stats = %+v, want 1 running, 2 queued", s)
	}
	// Stop is called while the owner is busy, and the owner handles a DB-ack
	// before it gets to beginStop: that must admit nothing.
	stopped := make(chan struct{})
	b.e.call(func() {
		go func() { b.e.Stop(); close(stopped) }()
		<-b.e.stopCh
		b.e.dbAck(message.DBAck{TaskInstanceID: 2, Kind: message.KindAck})
	})
	// Nor one handled after beginStop, while task 1 is still being killed.
	b.e.DBAck(message.DBAck{TaskInstanceID: 3, Kind: message.KindRunning})
	wait.Signal(t, 10*time.Second, "Stop to return", stopped)
	b.e.DBAck(message.DBAck{TaskInstanceID: 2, Kind: message.KindAck}) // after Stop: ignored
	if groupAlive(pgid) {
		t.Fatalf("group %d of task 1 alive after Stop", pgid)
	}
	if _, ok := b.master.result(1); ok {
		t.Fatal("Stop reported a result for the task it killed")
	}
	for id := int64(2); id <= 3; id++ {
		b.notStarted(t, id)
	}
	if s := b.e.Stats(); s.Running != 0 || s.Queued != 0 {
		t.Fatalf("stats after Stop = %+v, want nothing running or queued", s)
	}
}

// wfOf returns the workflow instance id a report carries.
func wfOf(m message.Message) int64 {
	switch m := m.(type) {
	case message.Ack:
		return m.WorkflowInstanceID
	case message.Running:
		return m.WorkflowInstanceID
	case message.Result:
		return m.WorkflowInstanceID
	}
	return -1
}

func TestReportsCarryWorkflowInstanceID(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.master.holdIf(func(_ string, id int64, k message.AckKind) bool { return id == 2 && k == message.KindAck })
	wf := map[int64]int64{1: 41, 2: 42, 3: 43}
	for id, cmd := range map[int64]string{1: "true", 2: "true", 3: "exit 1"} {
		d := dispatch(id, cmd)
		d.WorkflowInstanceID = wf[id]
		b.mustDispatch(t, d)
	}
	b.e.Kill(2) // a result built before start
	want := map[int64][]message.Type{
		1: {message.TypeAck, message.TypeRunning, message.TypeResult},
		2: {message.TypeAck, message.TypeResult},
		3: {message.TypeAck, message.TypeRunning, message.TypeResult},
	}
	for id, types := range want {
		b.waitResult(t, id)
		for _, typ := range types {
			if b.master.count("", id, typ) == 0 {
				t.Fatalf("task %d: no report of type %d", id, typ)
			}
		}
		for _, m := range b.master.reports("", id) {
			if got := wfOf(m); got != wf[id] {
				t.Fatalf("task %d: %T carries workflow instance %d, want %d", id, m, got, wf[id])
			}
		}
	}
}

func TestQueueKeepsDispatchOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Slots: 1})
	cmd, open := gated(t)
	// Task 1 holds the slot; the acks of 2, 3 and 4 are DB-acked in reverse.
	b.master.holdIf(func(_ string, id int64, k message.AckKind) bool { return id != 1 && k == message.KindAck })
	b.mustDispatch(t, dispatch(1, cmd))
	b.waitRunning(t, 1)
	for id := int64(2); id <= 4; id++ {
		b.mustDispatch(t, dispatch(id, "true"))
	}
	for id := int64(4); id >= 2; id-- {
		b.e.DBAck(message.DBAck{TaskInstanceID: id, Kind: message.KindAck})
	}
	if s := b.e.Stats(); s.Running != 1 || s.Queued != 3 {
		t.Fatalf("stats = %+v, want 1 running, 3 queued", s)
	}
	open()
	var starts []time.Time
	for id := int64(2); id <= 4; id++ {
		starts = append(starts, b.waitResult(t, id).StartTime)
	}
	if !starts[0].Before(starts[1]) || !starts[1].Before(starts[2]) {
		t.Fatalf("start times %v: want tasks 2, 3, 4 in dispatch order", starts)
	}
}
