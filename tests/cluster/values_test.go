package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

func rawJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestValuesAcrossLeaderKill runs the pipeline, sql -> python ->
// http -> shell, with a shell root beside the sql one, each handing values
// on (sql's first row, a setValue line, $BELUGA_OUTPUT, a JSON response),
// and kills -9 the leader while the python task runs, held by a gate file.
// The sql task runs on a MariaDB datasource whose password the api sealed
// and the worker opened with the cluster's key file. The python result
// reaches the new leader, which dispatches the http task with the outputs
// taken from the DB: the run succeeds, every task ran once (the sql task
// records its executions with an INSERT in its transaction, the http server
// its requests), the last task saw every value, and the outputs are intact
// in the DB and in the API.
func TestValuesAcrossLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	gate := filepath.Join(marks, "gate")
	final := filepath.Join(marks, "final.txt")
	runs := filepath.Join(marks, "runs")

	// The http task's server: each request is an execution of "notify".
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		f, err := os.OpenFile(runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "%s %s notify %s\n", q.Get("wf"), q.Get("ti"), q.Get("at"))
			f.Close()
		}
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data": {"id": "rep-%s-%s"}}`, q.Get("rows"), q.Get("score"))
	}))
	defer srv.Close()

	python := fmt.Sprintf(`import os, time
e = os.environ
with open(%q, "a") as f:
    f.write("%%s %%s %%s %%s\n" %% (e["BELUGA_WORKFLOW_INSTANCE_ID"], e["BELUGA_TASK_INSTANCE_ID"], e["BELUGA_TASK_NAME"], e["BELUGA_ATTEMPT"]))
deadline = time.time() + 120
while not os.path.exists(%q):
    if time.time() > deadline:
        raise SystemExit("the gate never opened")
    time.sleep(0.05)
with open(e["BELUGA_OUTPUT"], "a") as f:
    f.write("score=%%d\n" %% (int(e["rows"]) * 2))
`, runs, gate)
	admin, password := warehouse(t, c)
	c.Apply(t, spec.Workflow{Name: "values", Params: map[string]string{"day": "20260101"}, Tasks: []spec.Task{
		{Name: "count", Type: "sql", Fields: map[string]json.RawMessage{
			"datasource": rawJSON(t, "wh"),
			"sql": rawJSON(t, []string{
				"INSERT INTO e2e_runs VALUES (${BELUGA_WORKFLOW_INSTANCE_ID}, ${BELUGA_TASK_INSTANCE_ID}, ${BELUGA_TASK_NAME}, ${BELUGA_ATTEMPT})",
				"SELECT SUM(n) AS `rows` FROM e2e_orders WHERE day = ${day}",
			}),
		}},
		task(marks, "extract", `echo '${setValue(label=a b&c)}'`),
		{Name: "score", Type: "python", Command: python, DependsOn: []string{"count", "extract"}},
		{Name: "notify", Type: "http", DependsOn: []string{"score"}, Fields: map[string]json.RawMessage{
			"url": rawJSON(t, srv.URL+"/report?rows=${rows}&score=${score}&label=${label}"+
				"&wf=${BELUGA_WORKFLOW_INSTANCE_ID}&ti=${BELUGA_TASK_INSTANCE_ID}&at=${BELUGA_ATTEMPT}"),
			"outputs": rawJSON(t, map[string]string{"report_id": "data.id"}),
		}},
		task(marks, "final", `echo "$rows|$score|$report_id|$label" > `+final, "notify"),
	}})
	id := c.Run(t, "values")
	clustertest.WaitExecution(t, marks, id, "score", finishWithin)
	old := c.Leader()
	if old == nil {
		t.Fatal("no leader while the python task runs")
	}
	killed := time.Now()
	old.Kill9()
	lead := c.WaitLeader(t, failoverWithin, old)
	t.Logf("%s leads %v after the kill of %s", lead.Name, time.Since(killed).Round(time.Millisecond), old.Name)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	c.WaitFinished(t, id, finishWithin)
	recordSQLRuns(t, admin, runs)
	c.AssertRanOnce(t, id, marks)
	b, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), "21|42|rep-21-42|a b&c"; got != want {
		t.Fatalf("the last task saw %q, want %q", got, want)
	}

	want := map[string]map[string]string{
		"count":   {"rows": "21"},
		"extract": {"label": "a b&c"},
		"score":   {"score": "42"},
		"notify":  {"report_id": "rep-21-42"},
	}
	for name, rows := range c.Tasks(t, id) {
		last := rows[len(rows)-1]
		if fmt.Sprint(last.Outputs) != fmt.Sprint(want[name]) && !(len(want[name]) == 0 && len(last.Outputs) == 0) {
			t.Fatalf("DB: task %s has outputs %v, want %v", name, last.Outputs, want[name])
		}
		if name == "final" && (last.Params["report_id"] != "rep-21-42" || last.Params["score"] != "42") {
			t.Fatalf("DB: final ran with params %v", last.Params)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := c.Client.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range d.Outputs {
		got = append(got, o.Task+"."+o.Name+"="+o.Value)
	}
	if g, w := strings.Join(got, " "), "count.rows=21 extract.label=a b&c notify.report_id=rep-21-42 score.score=42"; g != w {
		t.Fatalf("API: instance outputs %q, want %q", g, w)
	}
	for _, p := range c.Processes() {
		if b, _ := os.ReadFile(p.LogPath); strings.Contains(string(b), password) {
			t.Fatalf("the log of %s shows the datasource password", p.Name)
		}
	}
	c.AssertNoStuckRows(t)
}

// warehouse makes the sql task's datasource "wh": a database user with a
// password on the cluster's MariaDB (the api seals the password with the
// cluster's key file, a worker opens it), the table the task counts (21 on
// the workflow's day) and the table it records its executions in. It returns an admin connection and the password.
func warehouse(t *testing.T, c *clustertest.Cluster) (*sql.DB, string) {
	t.Helper()
	u, err := url.Parse(c.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	pass, _ := u.User.Password()
	admin, err := sql.Open("mysql", u.User.Username()+":"+pass+"@tcp("+u.Host+")/"+dbName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	user, password := fmt.Sprintf("wh%d", os.Getpid()), fmt.Sprintf("Pw-wh-%d", time.Now().UnixNano())
	for _, h := range []string{"127.0.0.1", "localhost"} {
		for _, q := range []string{
			"DROP USER IF EXISTS '" + user + "'@'" + h + "'",
			"CREATE USER '" + user + "'@'" + h + "' IDENTIFIED BY '" + password + "'",
			"GRANT ALL ON " + dbName + ".* TO '" + user + "'@'" + h + "'",
		} {
			if _, err := admin.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { _, _ = admin.Exec("DROP USER IF EXISTS '" + user + "'@'" + h + "'") })
	}
	for _, q := range []string{
		"CREATE TABLE e2e_orders (day VARCHAR(8), n INT)",
		"INSERT INTO e2e_orders VALUES ('20260101', 20), ('20260101', 1), ('20251231', 100)",
		"CREATE TABLE e2e_runs (wf VARCHAR(20), ti VARCHAR(20), task VARCHAR(64), attempt VARCHAR(8))",
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := strings.Cut(u.Host, ":")
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Client.PutDatasource(ctx, "wh", client.DatasourceSpec{Type: "mysql", Host: host, Port: p,
		Database: dbName, User: user, Password: &password}); err != nil {
		t.Fatalf("put datasource: %v", err)
	}
	return admin, password
}

// recordSQLRuns appends the executions the sql task recorded in e2e_runs
// to the marker file, where AssertRanOnce counts them.
func recordSQLRuns(t *testing.T, admin *sql.DB, runs string) {
	t.Helper()
	rows, err := admin.Query("SELECT wf, ti, task, attempt FROM e2e_runs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines strings.Builder
	for rows.Next() {
		var wf, ti, name, attempt string
		if err := rows.Scan(&wf, &ti, &name, &attempt); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&lines, "%s %s %s %s\n", wf, ti, name, attempt)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines.String()); err != nil {
		t.Fatal(err)
	}
}
