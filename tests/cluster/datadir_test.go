package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/freeport"
)

// TestWorkerDataDirAndLogsAcrossRestart: a second worker on a running
// worker's data dir exits 2 naming it; the worker killed -9 mid-task and
// restarted at once on another port starts (its lock died with it) and
// serves the log of a task it ran before.
func TestWorkerDataDirAndLogsAcrossRestart(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, SessionTimeout: sessionTimeout})
	w := c.Workers[0]
	marks := t.TempDir()
	c.Apply(t, spec.Workflow{Name: "talk", Tasks: []spec.Task{{Name: "say", Command: "echo said before the restart"}}})
	said := c.WaitFinished(t, c.Run(t, "talk"), finishWithin)
	say := c.Tasks(t, said.ID)["say"][0]
	readLog := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var b bytes.Buffer
		_, err := c.Client.TaskLog(ctx, say.ID, 0, &b)
		return b.String(), err
	}
	if got, err := readLog(); err != nil || got != "said before the restart\n" {
		t.Fatalf("log before the restart: %q, %v", got, err)
	}

	// A second worker on the same data dir.
	bin, err := clustertest.Build()
	if err != nil {
		t.Fatal(err)
	}
	args := w.Args()
	for i := range args {
		if args[i] == "--listen" {
			args[i+1] = "127.0.0.1:0"
		}
	}
	var stderr bytes.Buffer
	second := exec.Command(bin, args...)
	second.Stderr = &stderr
	done := make(chan error, 1)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "pid "+strconv.Itoa(w.Pid())) {
			t.Fatalf("second worker on %s: %v, want exit 2 naming pid %d; stderr: %s", w.Dir, err, w.Pid(), stderr.String())
		}
	case <-time.After(20 * time.Second):
		_ = second.Process.Kill()
		<-done
		t.Fatalf("a second worker started on %s; stderr: %s", w.Dir, stderr.String())
	}

	// kill -9 mid-task, then start again at once on another port.
	c.Apply(t, spec.Workflow{Name: "long", Tasks: []spec.Task{task(marks, "s", sleep(time.Minute))}})
	long := c.Run(t, "long")
	clustertest.WaitExecution(t, marks, long, "s", finishWithin)
	port, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	old := w.Addr
	w.Kill9()
	w.MoveTo(fmt.Sprintf("127.0.0.1:%d", port))
	if err := w.Restart(); err != nil {
		t.Fatal(err)
	}
	c.Eventually(t, failoverWithin, "the worker to serve on its new port", func() bool {
		v, err := c.View()
		if err != nil || !w.Running() {
			return false
		}
		for _, n := range v.Workers {
			if n.Address == w.Addr {
				return true
			}
		}
		return false
	})
	if !w.Running() {
		t.Fatalf("the worker restarted at once on its data dir exited: %s", w.LogTail(20))
	}
	if got, err := readLog(); err != nil || got != "said before the restart\n" {
		t.Fatalf("log of a task run on %s, worker now on %s: %q, %v", old, w.Addr, got, err)
	}
}
