package datasource

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/testkit/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Cleanup()
	os.Exit(code)
}

func TestRedact(t *testing.T) {
	base := errors.New("dial: user=etl password=p@ss/w%rd and p%40ss%2Fw%25rd")
	got := Redact(base, "p@ss/w%rd")
	if strings.Contains(got.Error(), "p@ss") || strings.Contains(got.Error(), "p%40ss") || !errors.Is(got, base) {
		t.Fatalf("redacted %q", got)
	}
	if Redact(nil, "x") != nil || Redact(base, "") != base {
		t.Fatal("nil error or empty password changed")
	}
}

func TestTestPostgres(t *testing.T) {
	d := pgtest.DB(t)
	c := Config{Type: Postgres, Host: d.Host, Port: d.Port, Database: d.Name, User: d.User, Params: map[string]string{"sslmode": "disable"}}
	if err := Test(context.Background(), c); err != nil {
		t.Fatalf("test of a live database: %v", err)
	}
	c.Database = "no_such_db_here"
	c.Password = "Secret-XYZ"
	err := Test(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "no_such_db_here") || strings.Contains(err.Error(), "Secret-XYZ") {
		t.Fatalf("test of a missing database: %v", err)
	}
	if err := (Config{Type: Postgres, Host: "h", User: "u", Params: map[string]string{"sslmode": "sometimes"}}).Validate(); err == nil || !IsFieldError(err) {
		t.Fatalf("bad sslmode: %v", err)
	}
}

// TestMySQLReadsNoWorkerFile (docs/security.md, item 4): a MySQL datasource
// cannot turn on the driver's LOAD DATA LOCAL INFILE for every file (the
// sql task runs in the worker, which can read the server's files): the
// param is refused, and the config the task connects with never has it.
func TestMySQLReadsNoWorkerFile(t *testing.T) {
	for _, k := range []string{"allowAllFiles", "allowallfiles"} {
		err := (Config{Type: MySQL, Host: "h", User: "u", Params: map[string]string{k: "true"}}).Validate()
		if err == nil || !IsFieldError(err) || !strings.Contains(err.Error(), "worker's files") {
			t.Fatalf("%s=true: %v", k, err)
		}
	}
	mc, err := Config{Type: MySQL, Host: "h", User: "u", Params: map[string]string{"allowAllFiles": "true"}}.mysqlConfig()
	if err != nil || mc.AllowAllFiles {
		t.Fatalf("mysql config with allowAllFiles=true in its params: AllowAllFiles %v, %v", mc != nil && mc.AllowAllFiles, err)
	}
}
