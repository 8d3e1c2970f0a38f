// Package mariadbtest gives tests a real MariaDB/MySQL database. It uses the
// server named by BELUGA_TEST_MYSQL_DSN when set (a mysql:// URL without a
// database name, e.g. mysql://root@127.0.0.1:3306/); otherwise it starts one
// private mariadbd from the installed package, in a temp dir on a free port,
// shared by the tests of one binary. Each call gets its own fresh database.
//
// Tests that take the database away mid-run (kill, restart) start a server
// of their own with Start instead, so the shared one stays up for others.
package mariadbtest

import (
	"database/sql"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // driver for setup statements

	"github.com/beluga-scheduler/beluga/internal/lifeline"
	"github.com/beluga-scheduler/beluga/testkit/freeport"
)

var (
	shared  *Server // the server locate started, for Cleanup
	once    sync.Once
	server  *url.URL
	srvErr  error
	counter atomic.Int64
)

// URL returns a mysql:// URL of a new empty database, dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	u, drop, err := NewDatabase()
	if err != nil {
		t.Fatalf("mariadb for tests: %v", err)
	}
	t.Cleanup(drop)
	return u
}

// NewDatabase creates a fresh database on the shared server and returns its
// URL and a function that drops it. Benchmarks use it outside tests.
func NewDatabase() (string, func(), error) {
	once.Do(func() { server, srvErr = locate() })
	if srvErr != nil {
		return "", nil, srvErr
	}
	return newDatabase(server)
}

func newDatabase(server *url.URL) (string, func(), error) {
	name := fmt.Sprintf("beluga_t%d_%d", os.Getpid(), counter.Add(1))
	db, err := sql.Open("mysql", dsn(server, ""))
	if err != nil {
		return "", nil, err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4"); err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	drop := func() {
		db, err := sql.Open("mysql", dsn(server, ""))
		if err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Close()
		}
	}
	u := *server
	u.Path = "/" + name
	return u.String(), drop, nil
}

func dsn(u *url.URL, dbname string) string {
	pass, _ := u.User.Password()
	return fmt.Sprintf("%s:%s@tcp(%s)/%s", u.User.Username(), pass, u.Host, dbname)
}

func locate() (*url.URL, error) {
	if raw := os.Getenv("BELUGA_TEST_MYSQL_DSN"); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "mysql" {
			return nil, fmt.Errorf("BELUGA_TEST_MYSQL_DSN=%q: want mysql://user:pass@host:port/", raw)
		}
		return u, nil
	}
	// The shared server lives until the test binary exits (parent-death
	// signal); Cleanup, from TestMain, also removes its data. Data dirs of
	// binaries that died without it are swept here.
	sweep()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	s, err := StartProcess(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	shared = s
	return s.url, nil
}

const (
	dirPrefix = "beluga-mariadb-"
	ownerFile = "owner.pid" // the test binary whose shared server uses the dir
)

// SharedPid is the pid of the shared server this binary started, or 0 (none
// yet, or BELUGA_TEST_MYSQL_DSN's), for benchmarks that count its CPU.
func SharedPid() int {
	if shared == nil {
		return 0
	}
	return shared.Pid()
}

// Cleanup stops the shared server, if this binary started one, and removes
// its data dir (a few hundred MB). Call it from TestMain after m.Run, and
// from benchmark programs before they exit.
func Cleanup() {
	if shared == nil {
		return
	}
	shared.Stop()
	os.RemoveAll(shared.dir)
}

// sweep removes shared-server dirs whose test binary is gone (it was killed,
// or ran before Cleanup existed). A dir without an owner is left alone for
// its first minute: its binary may be about to write the owner file.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			if fi, serr := os.Stat(d); serr == nil && time.Since(fi.ModTime()) > time.Minute {
				os.RemoveAll(d)
			}
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || syscall.Kill(pid, 0) != nil {
			os.RemoveAll(d)
		}
	}
}

// Server is one private mariadbd, a child of the test binary.
type Server struct {
	dir  string
	bin  string
	port int
	url  *url.URL

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the running process has been reaped
	running bool
}

// Start runs a private server of the test's own, always from the installed
// package (BELUGA_TEST_MYSQL_DSN is not used: the test means to stop it),
// and kills it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartProcess(t.TempDir())
	if err != nil {
		t.Fatalf("mariadb for tests: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mariadbd %s error log (tail):\n%s", s.url.Host, s.LogTail(20))
		}
		s.Stop()
	})
	return s
}

// StartProcess is Start without testing.TB, for benchmark programs: the
// server lives in dir (created if missing, left in place) until Stop.
func StartProcess(dir string) (*Server, error) {
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		if _, err2 := os.Stat("/usr/sbin/mariadbd"); err2 != nil {
			return nil, fmt.Errorf("mariadbd not found: install Debian's mariadb-server or set BELUGA_TEST_MYSQL_DSN")
		}
		bin = "/usr/sbin/mariadbd"
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "data"), "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	port, err := freeport.One()
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, port: port,
		url: &url.URL{Scheme: "mysql", User: url.User("root"), Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/"}}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// start launches mariadbd on the server's port and data and waits until it
// answers.
func (s *Server) start() error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return nil
	}
	cmd := exec.Command(s.bin, "--no-defaults", "--datadir="+filepath.Join(s.dir, "data"), "--user=root",
		fmt.Sprintf("--port=%d", s.port), "--bind-address=127.0.0.1", "--socket="+filepath.Join(s.dir, "sock"),
		"--skip-log-bin", "--innodb-buffer-pool-size=128M", "--innodb-flush-log-at-trx-commit=2",
		"--max-connections=500", "--log-error="+s.errorLog())
	cmd.SysProcAttr = childAttr()
	if err := lifeline.Start(cmd); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("start mariadbd: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit is noticed through exited
		close(exited)
	}()
	s.cmd, s.exited, s.running = cmd, exited, true
	s.mu.Unlock()

	// A starting server says nothing when it is ready: it is pinged, until
	// it answers or exits.
	var err error
	dead := false
	perr := wait.Poll(60*time.Second, "mariadbd to come up", func() bool {
		var db *sql.DB
		if db, err = sql.Open("mysql", dsn(s.url, "")); err == nil {
			err = db.Ping()
			db.Close()
		}
		select {
		case <-exited:
			dead = err != nil
		default:
		}
		return err == nil || dead
	})
	switch {
	case dead:
		return fmt.Errorf("mariadbd on port %d exited at start:\n%s", s.port, s.LogTail(20))
	case perr != nil:
		return fmt.Errorf("mariadbd did not come up on port %d: %v\n%s", s.port, err, s.LogTail(20))
	}
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.url.Host }

// Pid is the running mariadbd's process id (0 when it is not running), for
// benchmarks that count the server's own CPU.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return 0
	}
	return s.cmd.Process.Pid
}

// NewDatabase creates a fresh database on this server; see the package
// function of the same name.
func (s *Server) NewDatabase() (string, func(), error) { return newDatabase(s.url) }

// URL returns a mysql:// URL of a new empty database on this server,
// dropped when t ends (if the server still runs then).
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	u, drop, err := s.NewDatabase()
	if err != nil {
		t.Fatalf("mariadb for tests: %v", err)
	}
	t.Cleanup(drop)
	return u
}

// Stop kills the server (SIGKILL, as a crash would) and waits until it is
// gone. Safe when it is not running.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // its own group: mariadbd and nothing else
	<-s.exited
	s.running = false
}

// Pause stops the server with SIGSTOP: connections stay open and every
// statement hangs, as on a wedged database host. Resume undoes it; Stop
// (SIGKILL) works on a paused server too.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return fmt.Errorf("mariadbd on port %d is not running", s.port)
	}
	return syscall.Kill(-s.cmd.Process.Pid, sig)
}

// Restart kills the server if it runs and starts it again on the same port
// and data (InnoDB recovers what was committed), then waits until it
// answers. Clients see their connections broken and reconnect.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

func (s *Server) errorLog() string { return filepath.Join(s.dir, "error.log") }

// LogTail returns the last n lines of the server's error log.
func (s *Server) LogTail(n int) string {
	b, _ := os.ReadFile(s.errorLog())
	return tail(string(b), n)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
