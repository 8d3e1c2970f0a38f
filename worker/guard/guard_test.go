package guard

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

// TestMain lets the test binary serve as its own guard process, then fails
// the run if goroutines outlive the tests.
func TestMain(m *testing.M) {
	MaybeRun()
	os.Exit(leakcheck.Run(m))
}

// tree starts `sh -c 'sleep 300 & sleep 300; wait'` as its own process
// group and returns the group id once the shell and both sleeps run. The
// cleanup kills whatever is left.
func tree(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	wait.Until(t, 10*time.Second, "the shell and both sleeps", func() bool { return members(pgid) >= 3 })
	return pgid
}

// members counts live, non-zombie processes in group pgid.
func members(pgid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + en.Name() + "/stat")
		if err != nil || pid <= 0 {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 3 && f[0] != "Z" && f[0] != "X" && f[2] == strconv.Itoa(pgid) {
			n++
		}
	}
	return n
}

// table is a shared table as the worker leaves it.
func table(groups ...int32) *bytes.Reader {
	var b []byte
	for _, g := range groups {
		b = binary.NativeEndian.AppendUint32(b, uint32(g))
	}
	return bytes.NewReader(b)
}

// nopCloser makes a buffer the ready descriptor.
type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

// TestServe runs the guard's loop in-process: at end of file on the pipe it
// kills the groups in the table, skipping free and bad entries.
func TestServe(t *testing.T) {
	kept, other := tree(t), tree(t)
	tab := table(0, int32(kept), -5, 0)
	var ready, stderr bytes.Buffer
	if code := serve(strings.NewReader("ignored"), tab, nopCloser{&ready}, &stderr); code != 0 {
		t.Fatalf("serve = %d", code)
	}
	if ready.Len() != 1 {
		t.Fatalf("ready got %d bytes, want 1", ready.Len())
	}
	wait.Until(t, 10*time.Second, "the registered group to die", func() bool { return members(kept) == 0 })
	if n := members(other); n != 3 {
		t.Fatalf("unregistered group has %d live members, want 3", n)
	}
	if !strings.Contains(stderr.String(), "killed 1 task process group") {
		t.Fatalf("stderr = %q", stderr.String())
	}
	if code := serve(strings.NewReader(""), nil, nil, &stderr); code == 0 {
		t.Fatal("serve without its descriptors succeeded")
	}
}

// TestStopKillsRegistered uses a real guard process (this test binary):
// closing the pipe, as the worker's death would, kills what is registered.
func TestStopKillsRegistered(t *testing.T) {
	kept, removed := tree(t), tree(t)
	g := New(1, zaptest.NewLogger(t))
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Add(kept)
	g.Add(removed)
	g.Add(-1) // ignored
	g.Remove(removed)
	g.Remove(12345678) // never added: ignored
	if n := g.Len(); n != 1 {
		t.Fatalf("Len = %d, want 1", n)
	}
	g.Stop()
	wait.Until(t, 10*time.Second, "the registered group to die", func() bool { return members(kept) == 0 })
	if n := members(removed); n != 3 {
		t.Fatalf("removed group has %d live members, want 3", n)
	}
	g.Stop() // twice: harmless
	if err := g.Start(context.Background()); err == nil {
		t.Fatal("Start after Stop succeeded")
	}
}

// TestTableGrows: more groups than the first page holds are all guarded.
func TestTableGrows(t *testing.T) {
	g := New(1, zaptest.NewLogger(t))
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	// Above any pid (the kernel's limit is 2^22): registered, never hit.
	const n = 3000
	for i := 0; i < n; i++ {
		g.Add(math.MaxInt32 - i)
	}
	pgid := tree(t)
	g.Add(pgid)
	for i := 0; i < n; i += 2 {
		g.Remove(math.MaxInt32 - i)
	}
	if got := g.Len(); got != n/2+1 {
		t.Fatalf("Len = %d, want %d", got, n/2+1)
	}
	g.Stop()
	wait.Until(t, 10*time.Second, "the group registered past the first page to die", func() bool { return members(pgid) == 0 })
}

// TestReplacedWhenKilled: a guard process killed by someone is replaced
// and told the registered groups again.
func TestReplacedWhenKilled(t *testing.T) {
	pgid := tree(t)
	g := New(1, zaptest.NewLogger(t))
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	g.Add(pgid)
	g.mu.Lock()
	first := g.proc
	g.mu.Unlock()
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 10*time.Second, "a new guard process", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.proc != first && g.ctl != nil
	})
	g.Add(pgid) // already there: a no-op
	if n := members(pgid); n != 3 {
		t.Fatalf("group has %d live members after the guard was replaced, want 3", n)
	}
	g.Stop()
	wait.Until(t, 10*time.Second, "the group to die with the new guard", func() bool { return members(pgid) == 0 })
}

func TestStartErrors(t *testing.T) {
	// A binary that does not answer the marker: no ready byte.
	g := New(1, nil)
	g.exe = "/bin/true"
	if err := g.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "MaybeRunGuard") {
		t.Fatalf("Start with /bin/true = %v, want an error naming MaybeRunGuard", err)
	}
	g.Stop()

	// A binary that never answers: ctx ends the wait.
	script := filepath.Join(t.TempDir(), "mute")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	g = New(1, nil)
	g.exe = script
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := g.Start(ctx); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Start with a mute binary = %v, want a deadline error", err)
	}

	hooked.Store(false)
	defer hooked.Store(true)
	if err := New(1, nil).Start(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Start without MaybeRun = %v, want ErrUnavailable", err)
	}
	New(1, nil).Stop() // before Start: harmless
}
