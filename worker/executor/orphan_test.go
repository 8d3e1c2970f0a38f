package executor

import (
	"bytes"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/procfs"
)

// TestNoProcessOutlivesItsTask: a task that leaves a background child in
// its group and another in a session of its own (setsid), and exits, leaves
// nothing running once it is reported ended.
func TestNoProcessOutlivesItsTask(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.mustDispatch(t, dispatch(1, "sleep 1000 & echo $! > bg; setsid sleep 1000 & echo $! > escaped; exit 0"))
	if res := b.waitResult(t, 1); res.State != "succeeded" {
		t.Fatalf("result %+v", res)
	}
	work := filepath.Join(b.dir, "work", "7", "1")
	for _, name := range []string{"bg", "escaped"} {
		raw, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || pid <= 0 {
			t.Fatalf("%s pid %q", name, raw)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		wait.Until(t, 5*time.Second, name+" child "+strconv.Itoa(pid)+" to be gone after its task ended", func() bool {
			return !procfs.Alive(pid)
		})
	}
}

// TestLogIsCapped: a task printing past MaxLogBytes leaves a log of the cap
// and one marker line, and the task still runs to its end.
func TestLogIsCapped(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	b := setup(t, Config{MaxLogBytes: limit})
	b.mustDispatch(t, dispatch(1, "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo finished > marker"))
	if res := b.waitResult(t, 1); res.State != "succeeded" {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "work", "7", "1", "marker")); err != nil {
		t.Fatalf("the task did not run to its end: %v", err)
	}
	log, err := os.ReadFile(filepath.Join(b.dir, "logs", "7", "1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(log) > limit+200 {
		t.Fatalf("log is %d bytes, cap %d", len(log), limit)
	}
	head, tail, ok := bytes.Cut(log, []byte("\n[beluga: "))
	if !ok || len(head) != limit || !bytes.HasSuffix(tail, []byte("]\n")) || !strings.Contains(string(tail), "truncated") {
		t.Fatalf("log of %d bytes does not end with the marker at the cap: ...%q", len(log), log[max(0, len(log)-200):])
	}
}

// TestAdoptedOrphansAreReaped: as child subreaper the worker adopts a
// task's double-forked children; those that exit on their own are reaped by
// the task's end, not left as zombies.
func TestAdoptedOrphansAreReaped(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.mustDispatch(t, dispatch(1, "(sleep 0.1 & echo $! > orphan); sleep 0.5"))
	if res := b.waitResult(t, 1); res.State != "succeeded" {
		t.Fatalf("result %+v", res)
	}
	raw, err := os.ReadFile(filepath.Join(b.dir, "work", "7", "1", "orphan"))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(raw))
	if _, err := os.Stat("/proc/" + pid); err == nil {
		st, _ := os.ReadFile("/proc/" + pid + "/stat")
		t.Fatalf("the task's orphan %s is still in the process table: %s", pid, st)
	}
}
