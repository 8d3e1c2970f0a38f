package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestTaskCannotReadTheWorkersSecret (docs/security.md, items 1 and 6): a
// task on a worker of a cluster cannot read the worker's cluster secret
// file (kept, as an operator would, 0600 in a directory anyone may enter),
// nor the worker's /proc cmdline (which names that file) and environ, nor
// its data dir; and it runs neither as root nor as the worker's user.
func TestTaskCannotReadTheWorkersSecret(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the worker switches tasks to the task user only as root")
	}
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, SessionTimeout: sessionTimeout,
		Env: map[string][]string{"worker-1": {"BELUGA_WORKER_TASK_ISOLATION=on"}}})
	// The secret file as an operator keeps it: 0600 in a directory anyone
	// may enter (the test's temp dirs are 0700). The worker restarts so
	// that its sandbox covers its data dir only, not the whole test dir:
	// the file's mode and the task's user alone keep it.
	for d := c.Dir; d != "/tmp" && d != "/" && d != "."; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secretFile := c.SecretFile
	if err := c.Workers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(finishWithin); err != nil {
		t.Fatal(err)
	}
	w := c.Workers[0]
	pid := strconv.Itoa(w.Pid())
	read := map[string]string{
		"secret-file": secretFile,
		"cmdline":     "/proc/" + pid + "/cmdline",
		"environ":     "/proc/" + pid + "/environ",
		// In the sandbox the path exists, on an empty tmpfs.
		"data-dir-ls": w.Dir + "' | grep -qx '" + filepath.Base(w.LogPath),
	}
	var script strings.Builder
	script.WriteString("echo \"uid $(id -u)\"\n")
	for name, p := range read {
		cmd := "cat"
		if name == "data-dir-ls" {
			cmd = "ls -A"
		}
		fmt.Fprintf(&script, "if %s '%s' >/dev/null 2>&1; then echo 'READ %s'; else echo 'denied %s'; fi\n", cmd, p, name, name)
	}
	c.Apply(t, spec.Workflow{Name: "probe", Tasks: []spec.Task{{Name: "p", Command: script.String()}}})
	iv := c.WaitFinished(t, c.Run(t, "probe"), finishWithin)
	p := c.Tasks(t, iv.ID)["p"][0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	if _, err := c.Client.TaskLog(ctx, p.ID, 0, &out); err != nil {
		t.Fatal(err)
	}
	denied := 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		switch {
		case strings.HasPrefix(line, "uid "):
			if uid := strings.TrimPrefix(line, "uid "); uid == "0" {
				t.Errorf("the task ran as root")
			}
		case strings.HasPrefix(line, "READ "):
			t.Errorf("the task got through to the worker's %s", strings.TrimPrefix(line, "READ "))
		case strings.HasPrefix(line, "denied "):
			denied++
		}
	}
	if denied != len(read) {
		t.Errorf("%d probes denied, want %d; log:\n%s", denied, len(read), out.String())
	}
}
