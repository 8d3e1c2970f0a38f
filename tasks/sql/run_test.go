package sql

import (
	"bytes"
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/datasource"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
)

// target is one real database a sql task runs against.
type target struct {
	ds      tasktype.Datasource
	keyFile string
	// slow is a statement that runs for long; running counts the server's
	// sessions still running it (nil: the database has no server).
	slow    string
	running func(t *testing.T) int
}

func sqliteTarget(t *testing.T) target {
	return target{ds: tasktype.Datasource{Name: "lite", Type: "sqlite", Database: filepath.Join(t.TempDir(), "t.db")},
		slow: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) AS n FROM c"}
}

var userSeq atomic.Int64

// mysqlTarget logs in as a user with a password, sealed as the API seals
// it, which the task opens with the key file.
func mysqlTarget(t *testing.T) target {
	raw := mariadbtest.URL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	admin, err := dbsql.Open("mysql", "root@tcp("+u.Host+")/"+db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	user := fmt.Sprintf("etl%d_%d", os.Getpid(), userSeq.Add(1))
	const pw = "pa'ss;word"
	for _, h := range []string{"127.0.0.1", "localhost"} {
		for _, q := range []string{
			fmt.Sprintf("CREATE USER '%s'@'%s' IDENTIFIED BY 'pa''ss;word'", user, h),
			fmt.Sprintf("GRANT ALL ON %s.* TO '%s'@'%s'", db, user, h),
		} {
			if _, err := admin.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	key := filepath.Join(t.TempDir(), "secret.key")
	box, err := secret.EnsureKeyFile(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.SealFor(pw, datasource.SealContext("wh"))
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	p, _ := strconv.Atoi(port)
	return target{
		ds:      tasktype.Datasource{Name: "wh", Type: "mysql", Host: host, Port: p, Database: db, User: user, PasswordSealed: sealed},
		keyFile: key,
		slow:    "SELECT BENCHMARK(1000000000000, MD5('x')) AS b",
		running: func(t *testing.T) int {
			var n int
			if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT BENCHMARK(%'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}

func pgTarget(t *testing.T) target {
	d := pgtest.DB(t)
	admin, err := dbsql.Open("pgx", fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", d.User, net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), d.Name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return target{
		ds:   tasktype.Datasource{Name: "pg", Type: "postgres", Host: d.Host, Port: d.Port, Database: d.Name, User: d.User, Params: map[string]string{"sslmode": "disable"}},
		slow: "SELECT count(*) AS n FROM generate_series(1, 1000000000000)",
		running: func(t *testing.T) int {
			var n int
			if err := admin.QueryRow("SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT count(*) AS n FROM generate_series(%' AND pid <> pg_backend_pid()").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}

// runTask resolves a spec as the master would and runs it as the worker
// would.
func (tg target) runTask(t *testing.T, ctx context.Context, fields string, ps map[string]string) (tasktype.Outcome, string) {
	t.Helper()
	var f map[string]json.RawMessage
	if err := json.Unmarshal([]byte(fields), &f); err != nil {
		t.Fatal(err)
	}
	f["datasource"] = json.RawMessage(strconv.Quote(tg.ds.Name))
	s, problems := Type.Decode(f)
	if len(problems) > 0 {
		t.Fatalf("spec %s: %v", fields, problems)
	}
	p, err := Type.Payload(s, tasktype.Inputs{Params: ps, Datasource: func(name string) (tasktype.Datasource, error) {
		if name != tg.ds.Name {
			return tasktype.Datasource{}, fmt.Errorf("datasource %q: not found", name)
		}
		return tg.ds, nil
	}})
	if err != nil {
		t.Fatalf("payload: %v", err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return runChild(t, ctx, tasktype.Job{Name: "q", Payload: raw, Config: map[string]string{SecretKeyFileConfig: tg.keyFile}})
}

// runChild runs a job as the worker does: Input here, then this test
// binary re-executed as the task's child process (TestMain), its input on
// stdin, its log from stdout and stderr, its result on descriptor 3; a
// cancelled ctx sends it SIGTERM, as a kill or a timeout does.
func runChild(t *testing.T, ctx context.Context, j tasktype.Job) (tasktype.Outcome, string) {
	t.Helper()
	in, err := Type.Child.Input(j)
	if err != nil {
		return tasktype.Outcome{Err: err}, ""
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer resR.Close()
	var log bytes.Buffer
	cmd := exec.CommandContext(ctx, os.Args[0], tasktype.ChildCommand(Type.Name))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &log, &log
	cmd.ExtraFiles = []*os.File{resW}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	resW.Close()
	res, rerr := io.ReadAll(resR)
	werr := cmd.Wait()
	var r tasktype.ChildResult
	if rerr != nil || json.Unmarshal(res, &r) != nil {
		t.Fatalf("child result %q (%v), exit %v\n%s", res, rerr, werr, log.String())
	}
	if (werr == nil) != (r.Error == "") {
		t.Fatalf("child exit %v with result error %q", werr, r.Error)
	}
	out := tasktype.Outcome{Outputs: r.Outputs}
	if r.Error != "" {
		out.Err = errors.New(r.Error)
	}
	return out, log.String()
}

func TestSQLite(t *testing.T)   { t.Parallel(); exercise(t, sqliteTarget(t)) }
func TestMariaDB(t *testing.T)  { t.Parallel(); exercise(t, mysqlTarget(t)) }
func TestPostgres(t *testing.T) { t.Parallel(); exercise(t, pgTarget(t)) }

const injection = `x'); DROP TABLE t; --`

func exercise(t *testing.T, tg target) {
	ctx := context.Background()
	ps := map[string]string{"who": injection, "id": "1"}

	t.Run("statements, binds and outputs", func(t *testing.T) {
		out, log := tg.runTask(t, ctx, `{"sql":[
			"CREATE TABLE t (id INT, who VARCHAR(100))",
			"INSERT INTO t (id, who) VALUES (${id}, ${who})",
			"SELECT COUNT(*) AS n, MAX(who) AS who, MAX(id) AS top FROM t"]}`, ps)
		if out.Err != nil {
			t.Fatalf("run: %v\n%s", out.Err, log)
		}
		// The injection attempt is a value: stored as it is, the table intact.
		if out.Outputs["n"] != "1" || out.Outputs["who"] != injection || out.Outputs["top"] != "1" {
			t.Fatalf("outputs %v\n%s", out.Outputs, log)
		}
		for _, want := range []string{"1 rows affected", "n", "who", "(1 row)", "(2 bind parameters)", "committed"} {
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %q:\n%s", want, log)
			}
		}
		if strings.Contains(log, injection) && !strings.Contains(log, "|"+injection) && !strings.Contains(log, injection+"|") {
			t.Errorf("the param value appears in the statement text:\n%s", log)
		}
	})

	t.Run("a failing list rolls back", func(t *testing.T) {
		out, log := tg.runTask(t, ctx, `{"sql":["INSERT INTO t (id, who) VALUES (2, 'b')", "SELECT * FROM no_such_table"]}`, ps)
		if out.Err == nil || !strings.Contains(out.Err.Error(), "sql statement 2") || !strings.Contains(log, "rolled back") {
			t.Fatalf("err %v\n%s", out.Err, log)
		}
		out, log = tg.runTask(t, ctx, `{"sql":"SELECT COUNT(*) AS n FROM t"}`, nil)
		if out.Err != nil || out.Outputs["n"] != "1" {
			t.Fatalf("after rollback: %v %v\n%s", out.Outputs, out.Err, log)
		}
		out, _ = tg.runTask(t, ctx, `{"transaction":false,"sql":["INSERT INTO t (id, who) VALUES (2, 'b')", "SELECT * FROM no_such_table"]}`, ps)
		if out.Err == nil {
			t.Fatal("the bad statement succeeded")
		}
		out, log = tg.runTask(t, ctx, `{"sql":"SELECT COUNT(*) AS n FROM t"}`, nil)
		if out.Err != nil || out.Outputs["n"] != "2" {
			t.Fatalf("transaction false: %v %v\n%s", out.Outputs, out.Err, log)
		}
	})

	t.Run("first 1000 rows logged", func(t *testing.T) {
		out, log := tg.runTask(t, ctx, `{"sql":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1500) SELECT x FROM c"}`, nil)
		if out.Err != nil || out.Outputs["x"] != "1" {
			t.Fatalf("%v %v", out.Outputs, out.Err)
		}
		if !strings.Contains(log, "first 1000 rows shown") || strings.Contains(log, "\n1001\n") || !strings.Contains(log, "\n1000\n") {
			t.Fatalf("log:\n%s", log[max(0, len(log)-300):])
		}
	})

	t.Run("unnamed column is not an output", func(t *testing.T) {
		out, log := tg.runTask(t, ctx, `{"sql":"SELECT COUNT(*) + 0, 7 AS seven FROM t"}`, nil)
		if out.Err != nil || out.Outputs["seven"] != "7" || len(out.Outputs) != 1 || !strings.Contains(log, "not an output") {
			t.Fatalf("%v %v\n%s", out.Outputs, out.Err, log)
		}
	})

	t.Run("timeout cancels on the server", func(t *testing.T) {
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		start := time.Now()
		out, log := tg.runTask(t, tctx, `{"sql":`+strconv.Quote(tg.slow)+`}`, nil)
		if out.Err == nil {
			t.Fatalf("the slow statement succeeded\n%s", log)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("the task took %s to end after its timeout", d)
		}
		if tg.running == nil {
			return
		}
		if wait.Poll(10*time.Second, "the statement to end on the server", func() bool { return tg.running(t) == 0 }) != nil {
			t.Fatalf("the statement still runs on the server 10s after the task was cancelled\n%s", log)
		}
	})

	if tg.ds.PasswordSealed != "" {
		t.Run("password needs the key", func(t *testing.T) {
			noKey := tg
			noKey.keyFile = ""
			out, _ := noKey.runTask(t, ctx, `{"sql":"SELECT 1 AS one"}`, nil)
			if out.Err == nil || !strings.Contains(out.Err.Error(), "--secret-key-file") {
				t.Fatalf("no key: %v", out.Err)
			}
			other := tg
			other.keyFile = filepath.Join(t.TempDir(), "other.key")
			if _, err := secret.EnsureKeyFile(other.keyFile); err != nil {
				t.Fatal(err)
			}
			out, _ = other.runTask(t, ctx, `{"sql":"SELECT 1 AS one"}`, nil)
			if out.Err == nil || !strings.Contains(out.Err.Error(), "does not open with this key") {
				t.Fatalf("wrong key: %v", out.Err)
			}
		})
	}
}
