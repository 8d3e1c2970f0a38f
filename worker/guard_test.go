package worker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// childWorkerEnv makes the test binary run a worker (TestMain): its value is
// the data dir.
const childWorkerEnv = "BELUGA_TEST_CHILD_WORKER"

// childCgroupEnv, when set, is the child worker's CgroupDir (default off).
const childCgroupEnv = "BELUGA_TEST_CHILD_CGROUP"

// runChildWorker runs a guarded worker, prints its address on stdout and
// serves until stdin closes (or it is killed, which is the point).
func runChildWorker(dir string) int {
	signal.Ignore(syscall.SIGINT) // only the test ends it
	log, _ := zap.NewDevelopment()
	cg := os.Getenv(childCgroupEnv)
	if cg == "" {
		cg = "off"
	}
	w, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, TaskGuard: GuardOn, CgroupDir: cg}, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(w.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	w.Stop()
	return 0
}

// syncBuffer is a bytes.Buffer for a child's stderr, read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// childWorker is a guarded worker running in a child process of the test
// binary (runChildWorker), with one task dispatched to it.
type childWorker struct {
	master *fakeMaster
	dir    string // the child worker's data dir
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited bool
}

// startChildWorker runs a guarded worker in a child process (with its
// cgroups under cgroupBase, or off for "") and dispatches it task 1 of
// workflow instance 3, running command. The child is killed at cleanup
// unless kill did it already.
func startChildWorker(t *testing.T, cgroupBase, command string) *childWorker {
	t.Helper()
	w := &childWorker{master: startMaster(t), dir: t.TempDir()}
	w.cmd = exec.Command(os.Args[0], "-test.run=^$")
	w.cmd.Env = append(os.Environ(), childWorkerEnv+"="+w.dir, childCgroupEnv+"="+cgroupBase)
	var stderr syncBuffer
	w.cmd.Stderr = &stderr
	w.cmd.WaitDelay = 5 * time.Second // the guard holds stderr until it exits
	var err error
	w.stdin, err = w.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !w.exited {
			w.stdin.Close()
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("child worker's stderr:\n%s", stderr.String())
		}
	})
	addrCh := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addrCh <- strings.TrimSpace(line)
	}()
	var addr string
	addr = wait.Signal(t, 20*time.Second, "the child worker to print its address", addrCh)
	if addr == "" {
		t.Fatal("the child worker exited before printing its address")
	}

	rpc := remote.NewClient(nil, remote.Options{})
	if err := rpc.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rpc.Stop)
	r, err := rpc.Request(ctxT(t), addr, message.Dispatch{TaskInstanceID: 1, WorkflowInstanceID: 3, Name: "t1",
		Command: command, MasterAddr: w.master.addr(), Epoch: 1})
	if err != nil || !r.(message.DispatchReply).Accepted {
		t.Fatalf("dispatch: %v %+v", err, r)
	}
	return w
}

// kill kills the child worker with SIGKILL and reaps it.
func (w *childWorker) kill(t *testing.T) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.stdin.Close()
	_ = w.cmd.Wait()
	w.exited = true
}

// TestTasksDieWithKilledWorker runs a worker in a child process, gives it a
// task whose shell forks a grandchild, kills the worker with SIGKILL and
// checks that the shell and the grandchild die too: the master will run the
// task elsewhere, so nothing of it may go on here.
func TestTasksDieWithKilledWorker(t *testing.T) {
	t.Parallel()
	w := startChildWorker(t, "", "sleep 300 & echo $! > grandchild; wait")
	master, dir := w.master, w.dir
	shell := waitReport[message.Running](t, master, 1).PID
	var grandchild int
	wait.Until(t, 10*time.Second, "the grandchild's pid", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "work", "3", "1", "grandchild"))
		grandchild, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && grandchild > 0
	})
	// Whatever happens below, no sleep 300 outlives the test.
	t.Cleanup(func() { _ = syscall.Kill(-shell, syscall.SIGKILL) })
	if !procfs.Alive(shell) || !procfs.Alive(grandchild) {
		t.Fatalf("shell %d alive %v, grandchild %d alive %v: want both running", shell, procfs.Alive(shell), grandchild, procfs.Alive(grandchild))
	}

	w.kill(t)
	killed := time.Now()
	wait.UntilErr(t, 3*time.Second, "the shell and its grandchild to die with the worker", func() error {
		if procfs.Alive(shell) || procfs.Alive(grandchild) {
			return fmt.Errorf("shell %d alive %v, grandchild %d alive %v", shell, procfs.Alive(shell), grandchild, procfs.Alive(grandchild))
		}
		return nil
	})
	t.Logf("shell and grandchild gone %v after the worker was killed", time.Since(killed).Round(time.Millisecond))
}
