package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// seedFanout applies a fan-out of n tasks (f0..), with a join after them
// if join, in p, claims a run and writes a row for each f: the first done
// succeeded, the rest queued, as a running fan-out looks.
func seedFanout(t *testing.T, b *bundle, p string, n, done int, join bool) Instance {
	t.Helper()
	ctx := context.Background()
	b.mustProject(p)
	var spec strings.Builder
	names := make([]string, n)
	spec.WriteString("name: fan\ntasks:\n")
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
		fmt.Fprintf(&spec, "  - {name: %s, command: \"true\"}\n", names[i])
	}
	if join {
		fmt.Fprintf(&spec, "  - {name: join, command: \"true\", depends_on: [%s]}\n", strings.Join(names, ", "))
	}
	b.putSpec(p, "fan", "application/yaml", spec.String()).want(t, http.StatusCreated)
	var inst Instance
	b.send("POST", "/api/v1/projects/"+p+"/workflows/fan/runs", "").want(t, http.StatusCreated).json(t, &inst)
	if _, err := b.store.InstanceClaimCommands(ctx, "master-1:5678", 1, 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	tasks := make([]*model.TaskInstance, n)
	for i := range tasks {
		tasks[i] = &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: names[i], Type: "shell",
			State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now}
		if i < done {
			tasks[i].State, tasks[i].StartTime, tasks[i].EndTime = model.TaskSucceeded, &now, &now
		}
	}
	if err := b.store.TaskInsert(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	return inst
}

// pageReads GETs path through h (over b's store), counting its store reads.
func pageReads(t *testing.T, b *bundle, h http.Handler, path string) (InstanceDetail, int64, int64) {
	t.Helper()
	ctx, reads := store.CountReads(context.Background())
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1"+path, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	var d InstanceDetail
	resp{status: rec.Code, body: rec.Body.Bytes()}.json(t, &d)
	return d, reads.Statements.Load(), reads.Rows.Load()
}

// A page of 50 tasks of a running fan-out, with their waits, reads as many
// rows from the store whether the instance has 200 or 4,000 queued tasks:
// the waits of the page's queued tasks are counted in the database, not
// derived from every unsettled row (a 100,000-task instance took 1.6 s).
// (With a task that has no attempt yet, the pending tasks still read the
// names of the unsettled rows: the join's wait lists them.)
func TestInstancePageReadsDoNotScale(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	small := seedFanout(t, b, "small", 400, 200, false)
	large := seedFanout(t, b, "large", 8000, 4000, false)
	h := NewHandler(Deps{Store: b.store, Log: zap.NewNop()})
	var rows [2]int64
	for i, c := range []struct {
		inst  Instance
		n     int
		older int // queued tasks of the older instance: ahead of this one's
	}{{small, 400, 0}, {large, 8000, 200}} {
		// Page 2 of the queued half: its tasks wait in the queue.
		path := fmt.Sprintf("/api/v1/instances/%d?tasks_limit=50&tasks_offset=%d", c.inst.ID, c.n/2+50)
		d, stmts, n := pageReads(t, b, h, path)
		if len(d.Tasks) != 50 || d.Tasks[0].Name != fmt.Sprintf("f%d", c.n/2+50) {
			t.Fatalf("%d-task instance: page of %d tasks from %+v", c.n, len(d.Tasks), d.Tasks[0])
		}
		for j, tk := range d.Tasks {
			w := tk.Wait
			if w == nil || w.Cause != string(model.WaitQueue) || w.Ahead == nil || *w.Ahead != c.older+50+j {
				t.Fatalf("%d-task instance: task %s wait %+v, want queued behind %d", c.n, tk.Name, w, c.older+50+j)
			}
		}
		if d.PendingTotal != 0 {
			t.Fatalf("%d-task instance: pending %d %+v, want none", c.n, d.PendingTotal, d.Pending)
		}
		rows[i] = n
		t.Logf("%d-task instance: %d statements, %d rows read", c.n, stmts, n)
	}
	if rows[1] > rows[0]+10 {
		t.Fatalf("a page of the 8,000-task instance read %d rows, of the 400-task one %d: the reads grow with the instance", rows[1], rows[0])
	}
}
