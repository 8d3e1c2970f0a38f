package clustertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sleeper is a Process running `sleep 60` in a temp dir.
func sleeper(t *testing.T) *Process {
	t.Helper()
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := &Process{Name: "sleeper", Dir: dir, LogPath: filepath.Join(dir, "sleeper.log"), bin: bin, args: []string{"60"}}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill9)
	return p
}

// procState is the state letter of /proc/PID/stat (R, S, T for stopped...).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

func TestProcessLifecycle(t *testing.T) {
	p := sleeper(t)
	pid := p.Pid()
	if pid == 0 || !p.Running() {
		t.Fatal("not running after start")
	}
	p.Pause()
	if !p.Paused() || procState(t, pid) != "T" {
		t.Fatalf("after Pause: paused=%v state %s", p.Paused(), procState(t, pid))
	}
	p.Resume()
	if p.Paused() || procState(t, pid) == "T" {
		t.Fatalf("after Resume: paused=%v state %s", p.Paused(), procState(t, pid))
	}
	p.Kill9()
	if p.Running() || p.Pid() != 0 {
		t.Fatal("running after Kill9")
	}
	if err := p.Wait(time.Second); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Wait after Kill9: %v, want killed", err)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if p.Pid() == 0 || p.Pid() == pid {
		t.Fatalf("Restart: pid %d (was %d)", p.Pid(), pid)
	}
	if err := p.Wait(50 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "still runs") {
		t.Fatalf("Wait on a running process: %v", err)
	}
	p.Pause()
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("Stop of a paused process: %v, want terminated by SIGTERM", err)
	}
	if log := p.Log(); strings.Count(log, "=== clustertest: start") != 2 {
		t.Fatalf("log should record both starts:\n%s", log)
	}
}

func TestEnvIsCleanedAndSet(t *testing.T) {
	t.Setenv("BELUGA_FAILPOINT", "from-the-shell")
	dir := t.TempDir()
	p := &Process{Name: "env", Dir: dir, LogPath: filepath.Join(dir, "env.log"), bin: "/usr/bin/env"}
	p.SetEnv("BELUGA_X=1")
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	log := p.Log()
	if strings.Contains(log, "from-the-shell") || !strings.Contains(log, "\nBELUGA_X=1\n") {
		t.Fatalf("child environment:\n%s", log)
	}
}

func TestMarkerLines(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", Marker(dir, "true")+"; "+Marker(dir, ""))
	cmd.Env = append(os.Environ(), "BELUGA_WORKFLOW_INSTANCE_ID=7", "BELUGA_TASK_INSTANCE_ID=42",
		"BELUGA_TASK_NAME=load", "BELUGA_ATTEMPT=2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := Executions(t, dir, 7)
	want := Execution{WorkflowInstanceID: 7, TaskInstanceID: 42, Task: "load", Attempt: 2}
	if len(got) != 2 || got[0] != want || got[1] != want {
		t.Fatalf("executions %+v, want twice %+v", got, want)
	}
	if n := len(Executions(t, dir, 8)); n != 0 {
		t.Fatalf("instance 8 has %d executions", n)
	}
	if n := len(Executions(t, t.TempDir(), 0)); n != 0 {
		t.Fatalf("an empty marker dir has %d executions", n)
	}
}
