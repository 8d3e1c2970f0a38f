package worker

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// TestSetsidChildDiesWithKilledWorker: a task's child that left the task's
// process group and session (setsid) dies too when the worker is killed
// with SIGKILL: the guard finds it by its task scope.
func TestSetsidChildDiesWithKilledWorker(t *testing.T) {
	t.Parallel()
	master := startMaster(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childWorkerEnv+"="+dir)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			stdin.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
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
	select {
	case addr = <-addrCh:
	case <-time.After(20 * time.Second):
		t.Fatal("the child worker did not print its address")
	}
	if addr == "" {
		t.Fatal("the child worker exited before printing its address")
	}
	rpc := remote.NewClient(nil, remote.Options{})
	if err := rpc.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rpc.Stop)
	r, err := rpc.Request(ctxT(t), addr, message.Dispatch{TaskInstanceID: 1, WorkflowInstanceID: 3, Name: "t1",
		Command: "setsid sleep 1000 & echo $! > escaped; wait", MasterAddr: master.addr(), Epoch: 1})
	if err != nil || !r.(message.DispatchReply).Accepted {
		t.Fatalf("dispatch: %v %+v", err, r)
	}
	var escaped int
	waitFor(t, "the setsid child's pid", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "work", "3", "1", "escaped"))
		escaped, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && escaped > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	waitFor(t, "the setsid child to run in a session of its own", func() bool {
		g, alive := procfs.Group(escaped)
		return alive && g == escaped
	})

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	_ = cmd.Wait()
	exited = true
	waitFor(t, "the setsid child "+strconv.Itoa(escaped)+" to die with the worker", func() bool { return !procfs.Alive(escaped) })
}
