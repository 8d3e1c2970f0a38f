//go:build linux

package pgtest

import (
	"database/sql"
	"os"
	"strconv"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// TestPrivateServer starts a private server even though one may run at
// 5432, so the fallback path is exercised where the machine has one.
func TestPrivateServer(t *testing.T) {
	s, err := startPrivate()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	db, err := sql.Open("pgx", s.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SHOW server_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Logf("private postgres %s on port %d", v, s.Port)
}

func TestDB(t *testing.T) {
	d := DB(t)
	db, err := sql.Open("pgx", "postgres://"+d.User+"@"+d.Host+":"+itoa(d.Port)+"/"+d.Name+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE x (a int)"); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
