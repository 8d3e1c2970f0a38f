package standalone_test

import (
	dbsql "database/sql"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
)

// TestSQLOutputsReachShell: a sql task's first row becomes outputs that a
// downstream shell task sees as environment variables; a param spliced
// toward injection stays a value. On SQLite, and on MariaDB as a user with
// a password the API sealed with the standalone's own key file and the
// worker opened with it.
func TestSQLOutputsReachShell(t *testing.T) {
	e := start(t, "")
	if fi, err := os.Stat(filepath.Join(e.dir, "secret.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("standalone key file: %v %v", fi, err)
	}
	lite := filepath.Join(t.TempDir(), "wh.db")
	if err := os.WriteFile(lite, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.do("PUT", "/api/v1/datasources/lite", `{"type":"sqlite","database":"`+lite+`"}`, http.StatusCreated, nil)

	raw := mariadbtest.URL(t)
	u, _ := url.Parse(raw)
	dbName := strings.TrimPrefix(u.Path, "/")
	admin, err := dbsql.Open("mysql", "root@tcp("+u.Host+")/"+dbName)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	user := fmt.Sprintf("e2e%d", os.Getpid())
	for _, h := range []string{"127.0.0.1", "localhost"} {
		for _, q := range []string{"CREATE USER '" + user + "'@'" + h + "' IDENTIFIED BY 'Pw-e2e'", "GRANT ALL ON " + dbName + ".* TO '" + user + "'@'" + h + "'"} {
			if _, err := admin.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	host, port, _ := strings.Cut(u.Host, ":")
	e.do("PUT", "/api/v1/datasources/wh", `{"type":"mysql","host":"`+host+`","port":`+port+`,"database":"`+dbName+`","user":"`+user+`","password":"Pw-e2e"}`, http.StatusCreated, nil)
	var tr struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	e.do("POST", "/api/v1/datasources/wh/test", "", http.StatusOK, &tr)
	if !tr.OK {
		t.Fatalf("test of wh: %s", tr.Error)
	}

	for _, ds := range []string{"lite", "wh"} {
		t.Run(ds, func(t *testing.T) {
			wf := "counts_" + ds
			e.apply(`name: ` + wf + `
tasks:
  - name: load
    type: sql
    datasource: ` + ds + `
    sql:
      - CREATE TABLE orders_` + ds + ` (day VARCHAR(16), note VARCHAR(100))
      - INSERT INTO orders_` + ds + ` VALUES (${bizdate}, ${note})
      - INSERT INTO orders_` + ds + ` VALUES ('other', 'x')
      - SELECT COUNT(*) AS n, MAX(note) AS note_back FROM orders_` + ds + ` WHERE day = ${bizdate}
    params: {note: "it's'); DROP TABLE orders_` + ds + `; --"}
  - name: report
    command: echo "rows=$n back=$note_back"
    depends_on: [load]
`)
			iv := e.wait(e.run(wf, map[string]string{"bizdate": "20260101"}), 60*time.Second)
			if iv.State != "succeeded" {
				var log string
				e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("load").ID), "", http.StatusOK, &log)
				t.Fatalf("instance %+v\nload log:\n%s", iv, log)
			}
			var log string
			e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("report").ID), "", http.StatusOK, &log)
			if want := "rows=1 back=it's'); DROP TABLE orders_" + ds + "; --"; !strings.Contains(log, want) {
				t.Fatalf("report log %q lacks %q", log, want)
			}
			e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("load").ID), "", http.StatusOK, &log)
			if !strings.Contains(log, "committed") || strings.Contains(log, "Pw-e2e") {
				t.Fatalf("load log:\n%s", log)
			}
		})
	}
	// Used by the latest versions now: delete is refused; a missing one at apply is a 400.
	e.do("DELETE", "/api/v1/datasources/wh", "", http.StatusConflict, nil)
	e.do("PUT", "/api/v1/projects/demo/workflows/nowhere", "name: nowhere\ntasks:\n  - name: a\n    type: sql\n    datasource: nope\n    sql: select 1\n", http.StatusBadRequest, nil)
}
