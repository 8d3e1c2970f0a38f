package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/internal/clustertest"
)

func rawJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestValuesAcrossLeaderKill runs shell -> python -> http -> shell, each
// handing values on (a setValue line, $BELUGA_OUTPUT, a JSON response),
// and kills -9 the leader while the python task runs, held by a gate file.
// The python result reaches the new leader, which dispatches the http task
// with python's output taken from the DB: the run succeeds, every task ran
// once (the http server records its requests as executions), the last task
// saw every value, and the outputs are intact in the DB and in the API.
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
	c.Apply(t, spec.Workflow{Name: "values", Tasks: []spec.Task{
		task(marks, "extract", `echo '${setValue(rows=21)}'; echo '${setValue(label=a b&c)}'`),
		{Name: "score", Type: "python", Command: python, DependsOn: []string{"extract"}},
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
	c.AssertRanOnce(t, id, marks)
	b, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), "21|42|rep-21-42|a b&c"; got != want {
		t.Fatalf("the last task saw %q, want %q", got, want)
	}

	want := map[string]map[string]string{
		"extract": {"rows": "21", "label": "a b&c"},
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
	if g, w := strings.Join(got, " "), "extract.label=a b&c extract.rows=21 notify.report_id=rep-21-42 score.score=42"; g != w {
		t.Fatalf("API: instance outputs %q, want %q", g, w)
	}
	c.AssertNoStuckRows(t)
}
