package standalone_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/datasource"
)

// TestPipelineAcrossAllTypes: the pipeline, sql -> python -> http ->
// shell, against a SQLite datasource. sql's first row becomes outputs (and
// the run is recorded by an INSERT in the same transaction); python reads
// them and exports a value each way; http posts them all in a JSON body and
// exports a path of the answer; shell sees every value. Each task ran once:
// one row in the sql task's table, one request to the server.
func TestPipelineAcrossAllTypes(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	var gotBody atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		b, _ := io.ReadAll(r.Body)
		gotBody.Store(string(b))
		var in struct{ N, Note, Score, Tag string }
		if err := json.Unmarshal(b, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data": {"id": "rep-%s-%s-%s"}}`, in.N, in.Score, in.Tag)
	}))
	defer srv.Close()

	e := start(t, "")
	lite := filepath.Join(t.TempDir(), "wh.db")
	db, err := datasource.Open(datasource.Config{Type: datasource.SQLite, Database: lite})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE orders (day TEXT, note TEXT)",
		"INSERT INTO orders VALUES ('20260101', 'a&b c'), ('20260101', 'a'), ('20260102', 'zz')",
		"CREATE TABLE runs (task_instance TEXT, attempt TEXT)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	e.do("PUT", "/api/v1/datasources/lite", `{"type":"sqlite","database":"`+lite+`"}`, http.StatusCreated, nil)

	out := filepath.Join(e.dir, "final.txt")
	e.apply(`name: pipeline
tasks:
  - name: count
    type: sql
    datasource: lite
    sql:
      - INSERT INTO runs VALUES (${BELUGA_TASK_INSTANCE_ID}, ${BELUGA_ATTEMPT})
      - SELECT COUNT(*) AS n, MAX(note) AS note FROM orders WHERE day = ${bizdate}
  - name: score
    type: python
    depends_on: [count]
    command: |
      import os
      e = os.environ
      with open(e["BELUGA_OUTPUT"], "a") as f:
          f.write("score=%d\n" % (int(e["n"]) * 10))
      print("${setValue(tag=" + e["note"].upper() + ")}")
  - name: notify
    type: http
    method: POST
    depends_on: [score]
    url: ` + srv.URL + `/report?n=${n}
    headers: {Content-Type: application/json}
    body: '{"n": "${n}", "note": "${note}", "score": "${score}", "tag": "${tag}"}'
    outputs: {report_id: data.id}
  - name: final
    depends_on: [notify]
    command: echo "$n|$note|$score|$tag|$report_id" > ` + out + `
`)
	id := e.run("pipeline", map[string]string{"bizdate": "20260101"})
	iv, d := e.succeeded(id, 60*time.Second)
	if got, want := fileText(t, out), "2|a&b c|20|A&B C|rep-2-20-A&B C"; got != want {
		t.Errorf("final task saw %q, want %q", got, want)
	}
	if got, want := gotBody.Load(), `{"n": "2", "note": "a&b c", "score": "20", "tag": "A&B C"}`; got != want {
		t.Errorf("http task sent %q, want %q", got, want)
	}

	// Once each: the task rows, the server's requests, the sql task's row.
	for _, name := range []string{"count", "score", "notify", "final"} {
		if n := iv.count(name); n != 1 {
			t.Errorf("task %s has %d task instances, want 1", name, n)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the http server got %d requests, want 1", n)
	}
	var ti, attempt string
	var rows int
	if err := db.QueryRow("SELECT COUNT(*), MAX(task_instance), MAX(attempt) FROM runs").Scan(&rows, &ti, &attempt); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(iv.task("count").ID); rows != 1 || ti != want || attempt != "1" {
		t.Errorf("runs table: %d rows, task instance %s attempt %s; want 1 row of %s attempt 1", rows, ti, attempt, want)
	}

	if got, want := d.outputs(), "count.n=2 count.note=a&b c notify.report_id=rep-2-20-A&B C score.score=20 score.tag=A&B C"; got != want {
		t.Errorf("instance outputs %q, want %q", got, want)
	}
	for _, tk := range d.Tasks {
		if tk.Name == "final" && (tk.Params["n"] != "2" || tk.Params["report_id"] != "rep-2-20-A&B C" || tk.Params["tag"] != "A&B C") {
			t.Errorf("final's params %v lack the upstream outputs", tk.Params)
		}
	}
}
