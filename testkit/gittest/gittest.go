// Package gittest makes real Git repositories for tests with the git
// binary: a bare repository on disk (what a sync reads, by path or file
// URL) and a working clone that commits and pushes to it.
package gittest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Repo is a bare repository and a clone that pushes to it.
type Repo struct {
	t    *testing.T
	Bare string // the bare repository's path
	work string
}

// New makes an empty bare repository (branch main) and its clone.
func New(t *testing.T) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git binary is needed: %v", err)
	}
	dir := t.TempDir()
	r := &Repo{t: t, Bare: filepath.Join(dir, "repo.git"), work: filepath.Join(dir, "work")}
	r.git(dir, "init", "-q", "--bare", "-b", "main", r.Bare)
	r.git(dir, "init", "-q", "-b", "main", r.work)
	r.git(r.work, "remote", "add", "origin", r.Bare)
	return r
}

// Commit writes files (path in the repository -> content; "" removes the
// file, if there is one), commits them with msg, pushes to branch and returns the commit.
// The clone first takes what others pushed to branch (a write-back).
func (r *Repo) Commit(branch, msg string, files map[string]string) string {
	r.t.Helper()
	r.git(r.work, "fetch", "-q", "origin")
	if r.has("refs/remotes/origin/" + branch) {
		r.git(r.work, "reset", "-q", "--hard", "origin/"+branch)
	}
	for p, content := range files {
		full := filepath.Join(r.work, filepath.FromSlash(p))
		if content == "" {
			if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git(r.work, "add", "-A")
	r.git(r.work, "-c", "user.name=Test", "-c", "user.email=test@beluga.local", "commit", "-q", "--allow-empty", "-m", msg)
	r.git(r.work, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return strings.TrimSpace(r.git(r.work, "rev-parse", "HEAD"))
}

func (r *Repo) has(ref string) bool {
	return exec.Command("git", "-C", r.work, "rev-parse", "-q", "--verify", ref).Run() == nil
}

// Show is a file at branch's head in the bare repository ("" when it
// has none), and Head the author, email and message of its head commit.
func (r *Repo) Show(branch, path string) string {
	r.t.Helper()
	out, err := exec.Command("git", "--git-dir", r.Bare, "show", branch+":"+path).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

func (r *Repo) Head(branch string) (author, email, message string) {
	r.t.Helper()
	out := r.git(r.Bare, "log", "-1", "--format=%an%x00%ae%x00%B", branch)
	parts := strings.SplitN(out, "\x00", 3)
	return parts[0], parts[1], strings.TrimSpace(parts[2])
}

func (r *Repo) git(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	// The user's and the system's Git config stay out of the test.
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Serve serves the bare repository over HTTP (Git's smart protocol, by
// git http-backend) at URL/repo.git, to callers with the basic auth user
// and password given (fetches and pushes), and returns URL.
func (r *Repo) Serve(user, password string) string {
	r.t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		r.t.Fatal(err)
	}
	backend := &cgi.Handler{Path: git, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(r.Bare), "GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			// pushes too (a write-back), to the authenticated caller
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, req)
	}))
	r.t.Cleanup(srv.Close)
	return srv.URL
}

// SSH is a private sshd serving the bare repository to one key.
type SSH struct {
	URL         string // ssh://root@127.0.0.1:PORT/<bare>
	Key         string // the client's private key (OpenSSH format)
	KnownHosts  string // the server's host key as a known_hosts line
	Fingerprint string // its SHA256: fingerprint
	OtherHost   string // a known_hosts line of another key for the same host
}

// ServeSSH serves the bare repository over SSH with a real sshd (OpenSSH,
// started privately on a free loopback port, its own host key, one
// authorized client key; stopped at the test's end). The test fails when
// sshd is missing (scripts/deps.sh installs it).
func (r *Repo) ServeSSH() SSH {
	r.t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr != nil {
			r.t.Fatalf("sshd (openssh-server) is needed: %v", err)
		}
		sshd = "/usr/sbin/sshd"
	}
	dir := r.t.TempDir()
	keygen := func(name string) {
		cmd := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", filepath.Join(dir, name))
		if out, err := cmd.CombinedOutput(); err != nil {
			r.t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	keygen("host")
	keygen("client")
	keygen("other")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			r.t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(read("client.pub")+"\n"), 0o600); err != nil {
		r.t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cfg := fmt.Sprintf("ListenAddress 127.0.0.1:%d\nHostKey %s\nAuthorizedKeysFile %s\nPidFile %s\n"+
		"PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"+
		"PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nAllowUsers %s\nLogLevel ERROR\n",
		port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"), currentUser(r.t))
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		r.t.Fatal(err)
	}
	_ = os.MkdirAll("/run/sshd", 0o755) // its privilege separation directory
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start sshd: %v", err)
	}
	r.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("sshd did not listen on %s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling a deadline-bounded condition
	}
	hostPub := strings.Fields(read("host.pub"))
	otherPub := strings.Fields(read("other.pub"))
	fp, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", filepath.Join(dir, "host.pub")).Output()
	if err != nil {
		r.t.Fatal(err)
	}
	user := currentUser(r.t)
	return SSH{
		URL:         fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", user, port, r.Bare),
		Key:         read("client") + "\n",
		KnownHosts:  fmt.Sprintf("[127.0.0.1]:%d %s %s", port, hostPub[0], hostPub[1]),
		Fingerprint: strings.Fields(string(fp))[1],
		OtherHost:   fmt.Sprintf("[127.0.0.1]:%d %s %s", port, otherPub[0], otherPub[1]),
	}
}

func currentUser(t *testing.T) string {
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
