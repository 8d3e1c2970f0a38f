package procfs

import (
	"bytes"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEnviron(t *testing.T) {
	self, err := Environ(os.Getpid())
	if err != nil || !bytes.Contains(self, []byte("PATH=")) {
		t.Fatalf("own environment %q, %v", self, err)
	}
	if user, inExec := execState(os.Getpid()); !user || inExec {
		t.Fatalf("own exec state user=%v inExec=%v", user, inExec)
	}

	// A live process with an empty environment is not taken for one in
	// an exec: its read comes back empty, with env_start set.
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitExec(t, cmd.Process.Pid)
	if env, err := Environ(cmd.Process.Pid); err != nil || len(env) != 0 {
		t.Fatalf("empty environment read as %q, %v", env, err)
	}
	if user, inExec := execState(cmd.Process.Pid); !user || inExec {
		t.Fatalf("empty-environment process: user=%v inExec=%v", user, inExec)
	}

	if _, err := Environ(1 << 30); err == nil {
		t.Fatal("a pid that cannot exist has an environment")
	}
}

// TestKernelThreadIsNoUserProcess: kernel threads (env_start 0, like a
// process mid-exec) are not waited for.
func TestKernelThreadIsNoUserProcess(t *testing.T) {
	comm, err := os.ReadFile("/proc/2/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "kthreadd" {
		t.Skip("pid 2 is not kthreadd in this pid namespace")
	}
	if user, _ := execState(2); user {
		t.Fatal("kthreadd taken for a user process")
	}
}

// waitExec waits until pid runs the command it was started with (its
// comm is no longer the parent's).
func waitExec(t *testing.T, pid int) {
	t.Helper()
	var b []byte
	var err error
	wait.UntilErr(t, 10*time.Second, fmt.Sprintf("process %d to exec sleep", pid), func() error {
		b, err = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == "sleep" {
			return nil
		}
		return fmt.Errorf("comm %q %v", b, err)
	})
}
