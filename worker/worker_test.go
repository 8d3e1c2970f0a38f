package worker

import (
	"context"
	"errors"
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
	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
	"github.com/beluga-scheduler/beluga/worker/executor"
)

// TestMain lets the test binary serve as a task guard and as the worker
// process of TestTasksDieWithKilledWorker, then fails the run if goroutines
// outlive the tests: every worker, fake master and client a test starts is
// stopped by its cleanup.
func TestMain(m *testing.M) {
	builtin.Register()
	tasktype.MaybeRunChild() // sql tasks re-execute this binary
	MaybeRunGuard()
	// Tests' tasks share gate and marker files with the test.
	os.Setenv(executor.TaskIsolationEnv, "off")
	if dir := os.Getenv(childWorkerEnv); dir != "" {
		os.Exit(runChildWorker(dir))
	}
	os.Exit(leakcheck.Run(m))
}

// fakeMaster is a remote.Server that records the worker's reports and
// answers each with a DB-ack push, unless withholding that kind. A task runs
// only once its ack is DB-acked.
type fakeMaster struct {
	srv *remote.Server

	mu       sync.Mutex
	got      []message.Message
	withhold []message.AckKind
	takeBack map[int64]bool // answer these tasks' acks with Kill
	gone     []int64        // LogGone's answer, whatever was asked
	asked    [][]int64      // the LogGone questions
}

func startMaster(t *testing.T) *fakeMaster {
	t.Helper()
	f := &fakeMaster{}
	f.srv = remote.NewServer("127.0.0.1:0", f.handle, remote.Options{})
	if err := f.srv.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.srv.Stop)
	return f
}

func (f *fakeMaster) addr() string { return f.srv.Addr() }

func (f *fakeMaster) handle(p remote.Peer, reqID uint64, m message.Message) {
	var a message.DBAck
	switch m := m.(type) {
	case message.LogGone:
		f.mu.Lock()
		f.asked = append(f.asked, m.InstanceIDs)
		gone := f.gone
		f.mu.Unlock()
		_ = p.Send(reqID, message.LogGoneReply{Gone: gone})
		return
	case message.Ack:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindAck}
	case message.Running:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindRunning}
	case message.Result:
		a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindResult}
	default:
		return
	}
	f.mu.Lock()
	f.got = append(f.got, m)
	hold := slices.Contains(f.withhold, a.Kind)
	a.Kill = f.takeBack[a.TaskInstanceID]
	f.mu.Unlock()
	if !hold || a.Kill {
		_ = p.Send(0, a)
	}
}

// hold withholds the DB-acks of these kinds of reports (none: DB-ack all).
func (f *fakeMaster) hold(kinds ...message.AckKind) {
	f.mu.Lock()
	f.withhold = kinds
	f.mu.Unlock()
}

// takeBackTask makes the master answer task id's reports with a Kill DB-ack,
// as for a dispatch it retried on another worker.
func (f *fakeMaster) takeBackTask(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.takeBack == nil {
		f.takeBack = map[int64]bool{}
	}
	f.takeBack[id] = true
}

func (f *fakeMaster) reports(id int64) []message.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []message.Message
	for _, m := range f.got {
		if taskOf(m) == id {
			out = append(out, m)
		}
	}
	return out
}

func (f *fakeMaster) count(id int64, typ message.Type) int {
	n := 0
	for _, m := range f.reports(id) {
		if m.Type() == typ {
			n++
		}
	}
	return n
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

func waitReport[M message.Message](t *testing.T, f *fakeMaster, id int64) M {
	t.Helper()
	var out M
	wait.Until(t, 10*time.Second, fmt.Sprintf("%T of task %d", out, id), func() bool {
		for _, m := range f.reports(id) {
			if r, ok := m.(M); ok {
				out = r
				return true
			}
		}
		return false
	})
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// bundle is one worker under test, a fake master and a client playing the
// master's dispatcher.
type bundle struct {
	w      *Worker
	master *fakeMaster
	rpc    *remote.Client
	dir    string
}

func setup(t *testing.T, cfg Config) *bundle {
	t.Helper()
	b := &bundle{master: startMaster(t), dir: t.TempDir()}
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = b.dir
	if cfg.ResendInterval == 0 {
		cfg.ResendInterval = 50 * time.Millisecond
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = 300 * time.Millisecond
	}
	if cfg.RunningDelay == 0 {
		cfg.RunningDelay = -1 // these tests follow a short task's every report
	}
	w, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	b.w = w
	t.Cleanup(w.Stop)
	b.rpc = remote.NewClient(nil, remote.Options{})
	if err := b.rpc.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.rpc.Stop)
	return b
}

func (b *bundle) dispatchMsg(id int64, cmd string) message.Dispatch {
	return message.Dispatch{
		TaskInstanceID:     id,
		WorkflowInstanceID: 3,
		Name:               "t" + strconv.FormatInt(id, 10),
		TaskType:           "shell",
		Command:            cmd,
		Attempt:            2,
		MasterAddr:         b.master.addr(),
		Epoch:              1,
	}
}

func (b *bundle) request(t *testing.T, m message.Message) message.Message {
	t.Helper()
	r, err := b.rpc.Request(ctxT(t), b.w.Addr(), m)
	if err != nil {
		t.Fatalf("request %T: %v", m, err)
	}
	return r
}

func (b *bundle) dispatch(t *testing.T, d message.Dispatch) message.DispatchReply {
	t.Helper()
	r, ok := b.request(t, d).(message.DispatchReply)
	if !ok {
		t.Fatalf("dispatch reply is %T", r)
	}
	return r
}

func (b *bundle) mustDispatch(t *testing.T, d message.Dispatch) {
	t.Helper()
	if r := b.dispatch(t, d); !r.Accepted {
		t.Fatalf("dispatch %d refused: %s", d.TaskInstanceID, r.Reason)
	}
}

// startGroup runs `sleep 100 & sleep 100; wait` (or cmd) and returns the
// group id and its pids once the shell and both sleeps run.
func (b *bundle) startGroup(t *testing.T, d message.Dispatch) (int, []int) {
	t.Helper()
	b.mustDispatch(t, d)
	run := waitReport[message.Running](t, b.master, d.TaskInstanceID)
	var pids []int
	wait.Until(t, 10*time.Second, "the shell and both sleeps", func() bool {
		pids = procfs.GroupMembers(run.PID)
		return len(pids) >= 3
	})
	return run.PID, pids
}

func TestRunReportsLogAndEnv(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	d := b.dispatchMsg(1, `echo "param=$P name=$BELUGA_TASK_NAME attempt=$BELUGA_ATTEMPT"; echo "to stderr" >&2; exit 4`)
	// The master resolves every param, BELUGA_* among them (params.ForTask).
	d.Env = params.ForTask(params.TaskInputs{Task: d.Name, Attempt: d.Attempt, TaskParams: map[string]string{"P": "v1"}})
	b.mustDispatch(t, d)
	res := waitReport[message.Result](t, b.master, 1)
	if res.State != "failed" || res.ExitCode != 4 {
		t.Fatalf("result = %+v, want failed, exit code 4", res)
	}
	// The first ack, running and result arrive in that order (a slow DB-ack
	// may let a re-sent ack slip in between).
	first := map[message.Type]int{}
	for i, m := range b.master.reports(1) {
		if _, seen := first[m.Type()]; !seen {
			first[m.Type()] = i
		}
	}
	if first[message.TypeAck] != 0 || first[message.TypeRunning] > first[message.TypeResult] {
		t.Fatalf("reports out of order: %+v", b.master.reports(1))
	}
	ack := b.master.reports(1)[0].(message.Ack)
	if ack.Host != b.w.Host() || ack.Host != b.w.Addr() {
		t.Fatalf("ack host %q, worker host %q addr %q", ack.Host, b.w.Host(), b.w.Addr())
	}
	if want := filepath.Join(b.dir, "logs", "3", "1.log"); ack.LogPath != want {
		t.Fatalf("log path %q, want %q", ack.LogPath, want)
	}
	for _, m := range b.master.reports(1) {
		if got := wfOf(m); got != 3 {
			t.Fatalf("%T carries workflow instance %d, want 3", m, got)
		}
	}
	const want = "param=v1 name=t1 attempt=2\nto stderr\n"
	// By task id, by path, and a range.
	for _, req := range []message.LogRequest{
		{TaskInstanceID: 1},
		{LogPath: ack.LogPath},
	} {
		r, ok := b.request(t, req).(message.LogResponse)
		if !ok || string(r.Data) != want || !r.EOF {
			t.Fatalf("log %+v = %+v, want %q and EOF", req, r, want)
		}
	}
	r := b.request(t, message.LogRequest{TaskInstanceID: 1, Offset: 6, Limit: 2}).(message.LogResponse)
	if string(r.Data) != "v1" || r.EOF {
		t.Fatalf("log range = %q eof %v, want \"v1\" not eof", r.Data, r.EOF)
	}
	if _, ok := b.request(t, message.Ping{}).(message.Pong); !ok {
		t.Fatal("ping not answered with pong")
	}
}

func TestLogRequestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	for _, req := range []message.LogRequest{
		{TaskInstanceID: 42},     // unknown task
		{LogPath: "/etc/passwd"}, // outside the log dir
		{LogPath: filepath.Join(b.dir, "logs", "..", "secret.log")}, // escapes it
		{LogPath: filepath.Join(b.dir, "logs", "9", "9.log")},       // no such log
		{LogPath: "relative.log"},
	} {
		_, err := b.rpc.Request(ctxT(t), b.w.Addr(), req)
		var re *remote.RemoteError
		if !errors.As(err, &re) {
			t.Fatalf("log request %+v: err %v, want an Error reply", req, err)
		}
	}
	if _, err := b.rpc.Request(ctxT(t), b.w.Addr(), message.Pong{}); err == nil {
		t.Fatal("unsupported request answered without error")
	}
}

func TestSlots(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Slots: 2})
	// Tasks wait for the gate, so the slots stay full until it opens.
	gate := filepath.Join(t.TempDir(), "gate")
	cmd := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.01; done; sleep 0.05", gate)
	for id := int64(1); id <= 5; id++ {
		b.mustDispatch(t, b.dispatchMsg(id, cmd))
	}
	// A task starts once its ack is DB-acked; until then it counts as queued.
	if s := b.w.Stats(); s.Running+s.Queued != 5 || s.Capacity != 2 {
		t.Fatalf("stats after dispatch = %+v, want 5 running or queued, capacity 2", s)
	}
	wait.Until(t, 10*time.Second, "2 running, 3 queued", func() bool {
		s := b.w.Stats()
		return s.Running == 2 && s.Queued == 3
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	type span struct{ start, end time.Time }
	var spans []span
	for id := int64(1); id <= 5; id++ {
		r := waitReport[message.Result](t, b.master, id)
		spans = append(spans, span{r.StartTime, r.EndTime})
	}
	for _, s := range spans {
		n := 0
		for _, o := range spans {
			if !o.start.After(s.start) && o.end.After(s.start) {
				n++
			}
		}
		if n > 2 {
			t.Fatalf("%d tasks running at %v, want at most 2", n, s.start)
		}
	}
}

func TestKillGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	pgid, pids := b.startGroup(t, b.dispatchMsg(1, "sleep 100 & sleep 100; wait"))
	kr, ok := b.request(t, message.Kill{TaskInstanceID: 1}).(message.KillResult)
	if !ok || !kr.Found {
		t.Fatalf("kill reply %+v, want found", kr)
	}
	if res := waitReport[message.Result](t, b.master, 1); res.State != "killed" {
		t.Fatalf("result = %+v, want killed", res)
	}
	wait.Until(t, 10*time.Second, "the task's processes to be gone", func() bool { return procfs.Gone(pgid, pids) })
	if kr := b.request(t, message.Kill{TaskInstanceID: 77}).(message.KillResult); kr.Found {
		t.Fatal("kill of an unknown task found it")
	}
}

func TestTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	d := b.dispatchMsg(1, "sleep 100 & sleep 100; wait")
	d.TimeoutMillis = 300
	pgid, pids := b.startGroup(t, d)
	res := waitReport[message.Result](t, b.master, 1)
	if res.State != "failed" || !strings.Contains(res.Message, "timed out after 300ms") {
		t.Fatalf("result = %+v, want failed, timed out", res)
	}
	wait.Until(t, 10*time.Second, "the task's processes to be gone", func() bool { return procfs.Gone(pgid, pids) })
}

func TestResendAndSetMaster(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResendInterval: 30 * time.Millisecond})
	// The ack is DB-acked (the task may run); running and result are not.
	b.master.hold(message.KindRunning, message.KindResult)
	b.mustDispatch(t, b.dispatchMsg(1, "true"))
	wait.Until(t, 10*time.Second, "reports re-sent while not DB-acked", func() bool {
		return b.master.count(1, message.TypeRunning) >= 3 && b.master.count(1, message.TypeResult) >= 3
	})
	second := startMaster(t)
	b.w.SetMaster(second.addr())
	wait.Until(t, 10*time.Second, "un-acked reports redirected to the second master", func() bool {
		return second.count(1, message.TypeRunning) >= 1 && second.count(1, message.TypeResult) >= 1
	})
	if n := second.count(1, message.TypeAck); n != 0 {
		t.Fatalf("the DB-acked ack went %d times to the second master", n)
	}
	// The second master DB-acks everything: the first hears nothing more.
	var first int
	wait.Until(t, 10*time.Second, "the first master to stop receiving", func() bool {
		n := len(b.master.reports(1))
		settled := n == first
		first = n
		if !settled {
			time.Sleep(100 * time.Millisecond) // time is the subject: > 3 resend intervals between looks
		}
		return settled
	})
}

func TestDuplicateDispatchRunsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	d := b.dispatchMsg(1, "echo ran >> count; sleep 0.1")
	b.mustDispatch(t, d)
	r := b.dispatch(t, d)
	if !r.Accepted || !strings.Contains(r.Reason, "duplicate") {
		t.Fatalf("duplicate reply %+v, want accepted as duplicate", r)
	}
	waitReport[message.Result](t, b.master, 1)
	if r := b.dispatch(t, d); !r.Accepted {
		t.Fatalf("duplicate after the end refused: %+v", r)
	}
	out, err := os.ReadFile(filepath.Join(b.dir, "work", "3", "1", "count"))
	if err != nil || string(out) != "ran\n" {
		t.Fatalf("count file %q (%v), want one run", out, err)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}, nil); err == nil {
		t.Fatal("New accepted an empty Listen")
	}
	if _, err := New(Config{Listen: "127.0.0.1:0", Shell: "fish"}, nil); err == nil {
		t.Fatal("New accepted shell fish")
	}
	w, err := New(Config{Listen: "256.0.0.1:0", DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctxT(t)); err == nil {
		t.Fatal("Start bound a bad address")
	}
	w.Stop()
	w.Stop()
}

// TestStopMidTask is not parallel: it checks that Stop leaves no goroutine
// of the worker or its transport, which needs no other worker around.
func TestStopMidTask(t *testing.T) {
	b := setup(t, Config{Slots: 1, KillGrace: 200 * time.Millisecond})
	pgid, pids := b.startGroup(t, b.dispatchMsg(1, "(trap '' TERM; sleep 100) & sleep 100; wait"))
	b.mustDispatch(t, b.dispatchMsg(2, "touch started")) // queued
	b.w.Stop()
	if !procfs.Gone(pgid, pids) {
		t.Fatalf("processes of task group %d still alive after Stop", pgid)
	}
	if n := b.master.count(1, message.TypeResult); n != 0 {
		t.Fatalf("Stop reported %d results for the task it killed", n)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "work", "3", "2", "started")); !os.IsNotExist(err) {
		t.Fatalf("queued task ran: %v", err)
	}
	if _, err := b.rpc.Request(ctxT(t), b.w.Addr(), message.Ping{}); err == nil {
		t.Fatal("stopped worker still answers")
	}
	b.w.Stop() // twice: harmless
	wait.Until(t, 10*time.Second, "worker goroutines to exit", func() bool { return len(workerGoroutines()) == 0 })
}

// workerGoroutines returns the stacks of goroutines running worker or
// executor code.
func workerGoroutines() []string {
	buf := make([]byte, 1<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "beluga/worker.(*Worker)") || strings.Contains(g, "beluga/worker/executor.") {
			out = append(out, g)
		}
	}
	return out
}

func TestAckNotDBAckedNeverStarts(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResendInterval: 30 * time.Millisecond})
	b.master.hold(message.KindAck)
	b.mustDispatch(t, b.dispatchMsg(1, "echo ran"))
	wait.Until(t, 10*time.Second, "the ack re-sent while not DB-acked", func() bool { return b.master.count(1, message.TypeAck) >= 3 })
	if n := b.master.count(1, message.TypeRunning); n != 0 {
		t.Fatalf("task reported running %d times before its ack was DB-acked", n)
	}
	logPath := filepath.Join(b.dir, "logs", "3", "1.log")
	if _, err := os.Stat(logPath); !os.IsNotExist(err) {
		t.Fatalf("task started before its ack was DB-acked: %v", err)
	}
	if s := b.w.Stats(); s.Running != 0 || s.Queued != 1 {
		t.Fatalf("stats = %+v, want 0 running, 1 queued", s)
	}
	b.master.hold()
	if res := waitReport[message.Result](t, b.master, 1); res.State != "succeeded" {
		t.Fatalf("result = %+v, want succeeded", res)
	}
	if got, _ := os.ReadFile(logPath); string(got) != "ran\n" {
		t.Fatalf("log = %q, want one run", got)
	}
}

func TestTakenBackBeforeAdmissionNeverRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.master.takeBackTask(1)
	d := b.dispatchMsg(1, "echo ran >> count")
	b.mustDispatch(t, d)
	wait.Until(t, 10*time.Second, "the task dropped", func() bool {
		s := b.w.Stats()
		return b.master.count(1, message.TypeAck) > 0 && s.Running == 0 && s.Queued == 0
	})
	if n := len(b.master.reports(1)) - b.master.count(1, message.TypeAck); n != 0 {
		t.Fatalf("a task taken back sent %d reports besides its ack", n)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "logs", "3", "1.log")); !os.IsNotExist(err) {
		t.Fatalf("a task taken back started: %v", err)
	}

	// The master gives the task here again (its retry found no other
	// worker): a new assignment, accepted, run once after its ack persists.
	b.master.mu.Lock()
	delete(b.master.takeBack, 1)
	b.master.mu.Unlock()
	if r := b.dispatch(t, d); !r.Accepted {
		t.Fatalf("dispatch of a task taken back earlier refused: %+v", r)
	}
	waitReport[message.Result](t, b.master, 1)
	out, err := os.ReadFile(filepath.Join(b.dir, "work", "3", "1", "count"))
	if err != nil || string(out) != "ran\n" {
		t.Fatalf("count file %q (%v), want one run", out, err)
	}
}

// TestConnectionResetKeepsLiveDispatches: the master's connection to the
// worker breaks (the master closes it, as after a failed send) while
// dispatches on it run; they still run to their results, and dispatches on
// a new connection are accepted.
func TestConnectionResetKeepsLiveDispatches(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Slots: 4})
	for id := int64(1); id <= 3; id++ {
		b.mustDispatch(t, b.dispatchMsg(id, "sleep 0.3"))
	}
	for id := int64(1); id <= 3; id++ {
		waitReport[message.Running](t, b.master, id)
	}
	b.rpc.Forget(b.w.Addr())
	b.mustDispatch(t, b.dispatchMsg(4, "true"))
	for id := int64(1); id <= 4; id++ {
		if r := waitReport[message.Result](t, b.master, id); r.State != "succeeded" {
			t.Fatalf("task %d after the reset: %+v", id, r)
		}
	}
	if r := b.dispatch(t, b.dispatchMsg(2, "true")); !r.Accepted || !strings.Contains(r.Reason, "duplicate") {
		t.Fatalf("re-dispatch of a live task after the reset: %+v, want accepted as a duplicate", r)
	}
}
