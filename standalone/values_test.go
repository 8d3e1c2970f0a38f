package standalone_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// detail is the part of an instance the values tests read.
type detail struct {
	State  string `json:"state"`
	Reason string `json:"reason"`
	Tasks  []struct {
		ID      int64             `json:"id"`
		Name    string            `json:"name"`
		State   string            `json:"state"`
		Params  map[string]string `json:"params"`
		Outputs map[string]string `json:"outputs"`
	} `json:"tasks"`
	Outputs []struct {
		Name, Value, Task string
	} `json:"outputs"`
}

func (e *env) detail(id int64) detail {
	var d detail
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &d)
	return d
}

// outputs lists the instance's outputs as task.name=value, space-separated.
func (d detail) outputs() string {
	var outs []string
	for _, o := range d.Outputs {
		outs = append(outs, o.Task+"."+o.Name+"="+o.Value)
	}
	return strings.Join(outs, " ")
}

// succeeded waits for the instance to finish and fails the test unless it
// succeeded, saying why and how each task ended.
func (e *env) succeeded(id int64, within time.Duration) (instanceView, detail) {
	e.t.Helper()
	iv := e.wait(id, within)
	d := e.detail(id)
	if iv.State != "succeeded" {
		e.t.Fatalf("instance %s (%s): %+v", iv.State, d.Reason, d.Tasks)
	}
	return iv, d
}

// fileText is the content of file p, trimmed of white space around it.
func fileText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestValuesAcrossTaskTypes: shell -> python -> http -> shell, each handing
// values on: a setValue line, $BELUGA_OUTPUT, an http JSON response; the
// http task sees ${rows} URL-escaped in its URL and raw in its body.
func TestValuesAcrossTaskTypes(t *testing.T) {
	t.Parallel()
	var gotURL, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotURL, gotBody = r.URL.String(), string(b)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data": {"id": "rep-%s", "n": 3}}`, r.URL.Query().Get("rows"))
	}))
	defer srv.Close()
	e := start(t, "")
	out := filepath.Join(e.dir, "final.txt")
	e.apply(`name: values
params: {greeting: from-workflow}
tasks:
  - name: extract
    command: |
      echo 'rows: ${setValue(rows=12 & 13)}'; echo "ignored line"
  - name: score
    type: python
    depends_on: [extract]
    command: |
      import os
      with open(os.environ["BELUGA_OUTPUT"], "a") as f:
          f.write("score=" + str(len(os.environ["rows"])) + "\n")
  - name: notify
    type: http
    method: POST
    depends_on: [score]
    url: ` + srv.URL + `/done?rows=${rows}
    headers: {Content-Type: application/json}
    body: '{"rows": "${rows}", "score": "${score}"}'
    expect_status: [200]
    outputs: {report_id: data.id, n: data.n}
  - name: final
    depends_on: [notify]
    command: echo "$rows|$score|$report_id|$n|$greeting" > ` + out + `
`)
	id := e.run("values", nil)
	_, d := e.succeeded(id, 60*time.Second)
	if got, want := fileText(t, out), "12 & 13|7|rep-12 & 13|3|from-workflow"; got != want {
		t.Errorf("final task saw %q, want %q", got, want)
	}
	if want := "/done?rows=12+%26+13"; gotURL != want {
		t.Errorf("http task requested %q, want %q", gotURL, want)
	}
	if want := `{"rows": "12 & 13", "score": "7"}`; gotBody != want {
		t.Errorf("http task sent %q, want %q", gotBody, want)
	}
	if got, want := d.outputs(), "extract.rows=12 & 13 notify.n=3 notify.report_id=rep-12 & 13 score.score=7"; got != want {
		t.Errorf("instance outputs %q, want %q", got, want)
	}
	for _, tk := range d.Tasks {
		if tk.Name == "final" && (tk.Params["report_id"] != "rep-12 & 13" || tk.Params["greeting"] != "from-workflow") {
			t.Errorf("final's params %v lack the upstream outputs", tk.Params)
		}
	}
}

// TestValuesRunParamsWinAndConflictsFail: a run's startup param beats an
// upstream output; two upstreams at the same distance exporting different
// values for a name fail the task downstream, naming both.
func TestValuesRunParamsWinAndConflictsFail(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	out := filepath.Join(e.dir, "seen.txt")
	e.apply(`name: prec
tasks:
  - name: a
    command: echo '${setValue(x=from-a)}'
  - name: b
    depends_on: [a]
    command: echo "$x" > ` + out + `
`)
	id := e.run("prec", map[string]string{"x": "from-run"})
	if iv := e.wait(id, 30*time.Second); iv.State != "succeeded" {
		t.Fatalf("instance %s", iv.State)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "from-run" {
		t.Errorf("b saw x=%q, want the run's from-run", b)
	}
	e.apply(`name: clash
tasks:
  - name: left
    command: echo '${setValue(x=1)}'
  - name: right
    command: echo '${setValue(x=2)}'
  - name: join
    depends_on: [left, right]
    command: "true"
`)
	id = e.run("clash", nil)
	iv := e.wait(id, 30*time.Second)
	d := e.detail(id)
	if iv.State != "failed" || !strings.Contains(d.Reason, "upstream tasks left and right") {
		t.Fatalf("instance %s, reason %q: want failed naming left and right", iv.State, d.Reason)
	}
}

// TestValuesBadOutputFailsTheTask: a name that is not an identifier, or a
// value over 64 KiB, fails the task with a message naming the line.
func TestValuesBadOutputFailsTheTask(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	e.apply(`name: badname
tasks:
  - name: a
    command: echo hello; echo '${setValue(1x=v)}'
`)
	id := e.run("badname", nil)
	e.wait(id, 30*time.Second)
	if d := e.detail(id); d.State != "failed" || !strings.Contains(d.Reason, `stdout line 2: name "1x" is not an identifier`) {
		t.Fatalf("instance %s, reason %q", d.State, d.Reason)
	}
	e.apply(`name: big
tasks:
  - name: a
    type: python
    command: |
      import os
      open(os.environ["BELUGA_OUTPUT"], "w").write("ok=1\nbig=" + "x" * 70000 + "\n")
`)
	id = e.run("big", nil)
	e.wait(id, 30*time.Second)
	if d := e.detail(id); d.State != "failed" || !strings.Contains(d.Reason, "$BELUGA_OUTPUT line 2") || !strings.Contains(d.Reason, "over the limit") {
		t.Fatalf("instance %s, reason %q", d.State, d.Reason)
	}
}

// TestOutputsSurviveRetryAndRecovery: a task that fails after its upstream
// exported a value sees that value on its retry and, after recover_failed,
// on the attempt the recovery starts, while the upstream is not run again.
func TestOutputsSurviveRetryAndRecovery(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	runs, fixed := filepath.Join(e.dir, "runs"), filepath.Join(e.dir, "fixed")
	seen := filepath.Join(e.dir, "seen")
	e.apply(fmt.Sprintf(`name: outputs_kept
tasks:
  - name: produce
    command: echo produce >> %[1]s; echo '${setValue(token=tok-42)}'
  - name: consume
    depends_on: [produce]
    retries: 1
    retry_interval: 0s
    command: echo "$token" >> %[3]s; [ -f %[2]s ]
`, runs, fixed, seen))
	id := e.run("outputs_kept", nil)
	if iv := e.wait(id, 60*time.Second); iv.State != "failed" {
		t.Fatalf("first run: %s", iv.State)
	}
	if err := os.WriteFile(fixed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.act("instance", id, "recover_failed", http.StatusAccepted)
	e.waitTask(id, "consume", "succeeded")
	if iv := e.wait(id, 60*time.Second); iv.State != "succeeded" {
		t.Fatalf("after recover_failed: %s", iv.State)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	// The first attempt, its retry and the recovery's attempt: each saw it.
	if got := strings.Fields(string(b)); len(got) != 3 || got[0] != "tok-42" || got[1] != "tok-42" || got[2] != "tok-42" {
		t.Fatalf("consume saw %q, want tok-42 on each of 3 attempts", got)
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "produce") != 1 {
		t.Fatalf("produce ran %d times, want once", strings.Count(string(b), "produce"))
	}
	d := e.detail(id)
	for _, tk := range d.Tasks {
		if tk.Name == "consume" && tk.State == "succeeded" && tk.Params["token"] != "tok-42" {
			t.Fatalf("the recovered attempt's params: %v", tk.Params)
		}
	}
}
