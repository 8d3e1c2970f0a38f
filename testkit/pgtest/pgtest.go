//go:build linux

// Package pgtest gives tests a real PostgreSQL database. It uses the server
// at 127.0.0.1:5432 when one answers there for user postgres without a
// password (trust auth; BELUGA_TEST_PG_ADDR names another host:port);
// otherwise it initdb's a private one from /usr/lib/postgresql/*/bin in a
// temp dir on a free port, shared by the tests of one binary. Each call
// gets its own fresh database, dropped when the test ends.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx" for setup statements

	"github.com/beluga-scheduler/beluga/internal/lifeline"
	"github.com/beluga-scheduler/beluga/testkit/freeport"
)

// Server is where the databases are made.
type Server struct {
	Host string
	Port int
	User string

	dir string
	cmd *exec.Cmd
}

var (
	once    sync.Once
	shared  *Server
	srvErr  error
	counter atomic.Int64
)

// Database is one fresh database on the shared server.
type Database struct {
	Host, User, Name string
	Port             int
}

// DB returns a fresh database, dropped when t ends.
func DB(t testing.TB) Database {
	t.Helper()
	d, drop, err := newDatabase()
	if err != nil {
		t.Fatalf("postgres for tests: %v", err)
	}
	t.Cleanup(drop)
	return d
}

// NewDatabase makes a fresh database outside a test (a cluster a benchmark
// program launches) and returns its URL and the func that drops it.
func NewDatabase() (url string, drop func(), err error) {
	d, drop, err := newDatabase()
	return d.URL(), drop, err
}

func newDatabase() (Database, func(), error) {
	once.Do(func() { shared, srvErr = locate() })
	if srvErr != nil {
		return Database{}, nil, srvErr
	}
	name := fmt.Sprintf("beluga_t%d_%d", os.Getpid(), counter.Add(1))
	admin, err := sql.Open("pgx", shared.dsn("postgres"))
	if err != nil {
		return Database{}, nil, err
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		return Database{}, nil, fmt.Errorf("create database: %w", err)
	}
	drop := func() {
		db, err := sql.Open("pgx", shared.dsn("postgres"))
		if err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			db.Close()
		}
	}
	return Database{Host: shared.Host, Port: shared.Port, User: shared.User, Name: name}, drop, nil
}

func (s *Server) dsn(db string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", s.User, net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), db)
}

func ping(s *Server) error {
	db, err := sql.Open("pgx", s.dsn("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func locate() (*Server, error) {
	addr := os.Getenv("BELUGA_TEST_PG_ADDR")
	if addr == "" {
		addr = "127.0.0.1:5432"
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("BELUGA_TEST_PG_ADDR=%q: %w", addr, err)
	}
	port, _ := strconv.Atoi(p)
	running := &Server{Host: host, Port: port, User: "postgres"}
	if err := ping(running); err == nil {
		return running, nil
	} else if os.Getenv("BELUGA_TEST_PG_ADDR") != "" {
		return nil, fmt.Errorf("postgres at %s: %w", addr, err)
	}
	return startPrivate()
}

// startPrivate runs initdb and postgres from the newest installed version,
// as the postgres system user when the tests run as root (initdb refuses
// root). The server dies with the test binary.
func startPrivate() (*Server, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return nil, errors.New("no PostgreSQL running at 127.0.0.1:5432 and no initdb under /usr/lib/postgresql/*/bin: install Debian's postgresql")
	}
	sort.Slice(bins, func(i, j int) bool { return version(bins[i]) < version(bins[j]) })
	binDir := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "beluga-pg-")
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and no postgres user to run initdb as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(binDir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freeport.One()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(binDir, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir, "-c", "fsync=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := lifeline.Start(cmd); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() { _ = cmd.Wait(); logf.Close() }() // reaped; its death shows as a failed ping
	s := &Server{Host: "127.0.0.1", Port: port, User: "postgres", dir: dir, cmd: cmd}
	// A starting server says nothing when it is ready: it is pinged.
	if wait.Poll(60*time.Second, "private postgres to come up", func() bool { err = ping(s); return err == nil }) != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "log"))
		return nil, fmt.Errorf("private postgres did not come up on port %d: %v\n%s", port, err, b)
	}
	return s, nil
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// Cleanup stops a private server this binary started and removes its dir.
// Call it from TestMain after m.Run.
func Cleanup() {
	if shared != nil {
		shared.stop()
	}
}

// stop ends a private server (fast shutdown, then SIGKILL) and removes its
// dir; a server this package did not start is left alone.
func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT)
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(s.cmd.Process.Pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the child is reaped by its goroutine
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	os.RemoveAll(s.dir)
}

// URL is the database's postgres:// URL.
func (d Database) URL() string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", d.User, net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), d.Name)
}

// URL returns the URL of a fresh database, dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	return DB(t).URL()
}

// SharedPid is the pid of the private server the tests of this binary
// started, 0 when they use one already running.
func SharedPid() int {
	if shared == nil || shared.cmd == nil {
		return 0
	}
	return shared.cmd.Process.Pid
}
