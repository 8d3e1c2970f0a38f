// Package mariadbtest gives tests a real MariaDB/MySQL database. It uses the
// server named by BELUGA_TEST_MYSQL_DSN when set (a mysql:// URL without a
// database name, e.g. mysql://root@127.0.0.1:3306/); otherwise it starts one
// private mariadbd from the installed package, in a temp dir on a free port,
// shared by the tests of one binary. Each call gets its own fresh database.
package mariadbtest

import (
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // driver for setup statements
)

var (
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
	return startPrivate()
}

// startPrivate runs mariadbd as a child of the test binary. It is killed by
// the parent-death signal when the test binary exits, so no Cleanup is
// needed across the tests that share it.
func startPrivate() (*url.URL, error) {
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		if _, err2 := os.Stat("/usr/sbin/mariadbd"); err2 != nil {
			return nil, fmt.Errorf("mariadbd not found: install Debian's mariadb-server or set BELUGA_TEST_MYSQL_DSN")
		}
		bin = "/usr/sbin/mariadbd"
	}
	dir, err := os.MkdirTemp("", "beluga-mariadb-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--no-defaults", "--datadir="+data, "--user=root",
		fmt.Sprintf("--port=%d", port), "--bind-address=127.0.0.1", "--socket="+filepath.Join(dir, "sock"),
		"--skip-log-bin", "--innodb-buffer-pool-size=128M", "--innodb-flush-log-at-trx-commit=2",
		"--max-connections=500", "--log-error="+filepath.Join(dir, "error.log"))
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // reaped; death is noticed by the ping below
	u := &url.URL{Scheme: "mysql", User: url.User("root"), Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, err := sql.Open("mysql", dsn(u, ""))
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		if err == nil {
			return u, nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return nil, fmt.Errorf("mariadbd did not come up on port %d: %v\n%s", port, err, tail(string(log)))
		}
		time.Sleep(100 * time.Millisecond) // polling a starting server: nothing to wait on
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
