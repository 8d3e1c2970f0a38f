package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildBeluga compiles this command for tests that need real processes.
func buildBeluga(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "beluga")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serving starts a beluga standalone and returns it with its API address
// once it printed that it serves.
func serving(t *testing.T, bin, dir string) (*exec.Cmd, string) {
	t.Helper()
	return servingWith(t, bin, dir, nil)
}

// servingWith is serving with prep changing the command before it starts
// (its user, environment, stderr).
func servingWith(t *testing.T, bin, dir string, prep func(*exec.Cmd)) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "standalone", "--data-dir", dir, "--listen", "127.0.0.1:0", "--log-level", "warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if prep != nil {
		prep(cmd)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(filepath.Join(dir, "admin-password"))
	fresh := statErr != nil
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	first := make(chan bool, 1)
	go func() {
		re := regexp.MustCompile(`API and UI on http://(\S+) \(`)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				// The first start says where the admin's password is.
				first <- strings.Contains(sc.Text(), "its password is in "+filepath.Join(dir, "admin-password"))
				addr <- m[1]
			}
		}
		close(addr)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("standalone on %s exited before serving: %s", dir, stderr.String())
		}
		if said := <-first; said != fresh {
			t.Fatalf("first start %v, but the start line naming the admin password: %v", fresh, said)
		}
		login(t, a, dir)
		return cmd, a
	case <-time.After(60 * time.Second):
		t.Fatalf("standalone on %s did not serve within 60s: %s", dir, stderr.String())
	}
	return nil, ""
}

// refused runs args, which must exit 2 on its own, and returns its stderr.
func refused(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("beluga %s: %v, want exit 2; stderr: %s", strings.Join(args, " "), err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("beluga %s started on a data dir another process holds; stderr: %s", strings.Join(args, " "), stderr.String())
	}
	return stderr.String()
}

// tokens are the admin tokens of the standalones serving started, by address.
var tokens sync.Map

// login logs in as admin with the password the standalone on dir made and
// keeps the token for call.
func login(t *testing.T, addr, dir string) {
	t.Helper()
	pw, err := os.ReadFile(filepath.Join(dir, "admin-password"))
	if err != nil {
		t.Fatalf("no generated admin password: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "admin-password")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin-password mode %v", fi.Mode())
	}
	body := `{"username":"admin","password":"` + strings.TrimSpace(string(pw)) + `"}`
	res, err := http.Post("http://"+addr+"/api/v1/login", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var lr struct{ Token string }
	if err := json.NewDecoder(res.Body).Decode(&lr); err != nil || res.StatusCode != 200 || lr.Token == "" {
		t.Fatalf("login as admin: %d %v", res.StatusCode, err)
	}
	tokens.Store(addr, lr.Token)
}

func call(t *testing.T, method, url, body string, want int) string {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if tok, ok := tokens.Load(req.URL.Host); ok {
		req.Header.Set("Authorization", "Bearer "+tok.(string))
	}
	req.Header.Set("Content-Type", "application/json")
	if strings.Contains(url, "/workflows/") && method == "PUT" {
		req.Header.Set("Content-Type", "application/yaml")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, b, want)
	}
	return string(b)
}

// TestDataDirIsExclusive: a second standalone or worker on a data dir that
// a standalone holds exits 2 naming the holder's pid; after a kill -9 of
// the holder mid-task (its task and task guard may still be exiting), a
// standalone started at once on the same dir serves.
func TestDataDirIsExclusive(t *testing.T) {
	bin := buildBeluga(t)
	dir := filepath.Join(t.TempDir(), "data")
	first, base := serving(t, bin, dir)
	holder := "pid " + strconv.Itoa(first.Process.Pid)
	for _, args := range [][]string{
		{"standalone", "--data-dir", dir, "--listen", "127.0.0.1:0"},
		{"worker", "--data-dir", dir, "--zk", "127.0.0.1:1", "--cluster-secret-file", secretFile(t)},
	} {
		if msg := refused(t, bin, args...); !strings.Contains(msg, "in use by another process") || !strings.Contains(msg, holder) {
			t.Fatalf("beluga %s: message %q does not name the holder (%s)", args[0], msg, holder)
		}
	}

	api := "http://" + base + "/api/v1"
	call(t, "POST", api+"/projects", `{"name":"demo"}`, http.StatusCreated)
	// The task leaves a process outside its group, which neither the task
	// guard nor the parent-death signal ends: it would hold an inherited
	// lock for as long as it lives.
	started, escaped := filepath.Join(t.TempDir(), "started"), filepath.Join(t.TempDir(), "escaped")
	t.Cleanup(func() {
		if b, err := os.ReadFile(escaped); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	cmd := fmt.Sprintf(`setsid sh -c 'echo $$ > %s; exec sleep 120' & while [ ! -s %[1]s ]; do sleep 0.01; done; touch %s; sleep 300`, escaped, started)
	call(t, "PUT", api+"/projects/demo/workflows/long", fmt.Sprintf("name: long\ntasks:\n  - {name: s, command: %q}\n", cmd), http.StatusCreated)
	call(t, "POST", api+"/projects/demo/workflows/long/runs", `{}`, http.StatusCreated)
	wait.Until(t, 30*time.Second, "the task to start (the file it writes)", func() bool { _, err := os.Stat(started); return err == nil })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	serving(t, bin, dir) // at once: nothing the dead process started may hold the lock
}
