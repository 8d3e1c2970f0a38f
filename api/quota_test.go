package api

import (
	"context"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// heldLogs is a LogReader whose reads wait until released: reads in
// flight, as a slow worker or a large log keeps them.
type heldLogs struct {
	started chan struct{}
	release chan struct{}
}

func (h *heldLogs) ReadLog(ctx context.Context, _ model.TaskInstance, _, _ int64) ([]byte, error) {
	h.started <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return []byte("log\n"), nil
}

// TestLogReadsPerUserQuota: a user holding quota.log_reads_per_user reads
// in flight gets 429 naming the setting for one more; another user's read
// goes through, and the user reads again once one ended. Before, every
// read was admitted (40 reads of a 100 MB log took 832 MB).
func TestLogReadsPerUserQuota(t *testing.T) {
	t.Parallel()
	logs := &heldLogs{started: make(chan struct{}, 16), release: make(chan struct{})}
	b := setup(t, options{logs: logs})
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	tasks := []*model.TaskInstance{{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning,
		Attempt: 1, Host: "w1:1234", LogPath: "/logs/1.log"}}
	if err := b.store.TaskInsert(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/task-instances/" + itoa(tasks[0].ID) + "/log"
	b.send("PUT", "/api/v1/settings/"+settingLogReadsPerUser, `{"value":2}`).want(t, http.StatusOK)
	tok := b.tokenOf("reader", "user")
	b.send("PUT", "/api/v1/projects/p/grants/reader", `{"level":"view"}`).want(t, http.StatusOK)

	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.as(tok, "GET", path, "").want(t, http.StatusOK)
		}()
	}
	for range 2 {
		wait.Signal(t, 10*time.Second, "the reads within the quota to start", logs.started)
	}
	e := b.as(tok, "GET", path, "").wantError(t, http.StatusTooManyRequests, CodeTooManyRequests)
	if !strings.Contains(e.Message, settingLogReadsPerUser) {
		t.Fatalf("message %q does not name %s", e.Message, settingLogReadsPerUser)
	}
	// Another user (the admin) is not held up by this user's reads.
	done := make(chan struct{})
	go func() { defer close(done); b.get(path).want(t, http.StatusOK) }()
	<-logs.started
	close(logs.release)
	<-done
	wg.Wait()
	b.as(tok, "GET", path, "").want(t, http.StatusOK)
}

// TestSpecUploadBudget: while spec bodies worth quota.spec_upload_bytes are
// being read, one more is refused with 429 naming the setting, so a user
// cannot make the server hold many large specs at once (six 8 MiB specs
// took 1.2 GB before); once the body in flight ends, uploads go on.
func TestSpecUploadBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")
	b.send("PUT", "/api/v1/settings/"+settingUploadBytes, `{"value":1048576}`).want(t, http.StatusOK)
	tok := b.tokenOf("ed", "user")
	b.send("PUT", "/api/v1/projects/p/grants/ed", `{"level":"edit"}`).want(t, http.StatusOK)

	// A body that declares 900 KiB and sends it slowly holds the budget.
	// If a "second" below reached the server first, that one held the
	// budget and this one was refused (the server is right): start it
	// again.
	slow := func() (*io.PipeWriter, chan int) {
		pr, pw := io.Pipe()
		req, err := http.NewRequest("PUT", b.srv.URL+"/api/v1/projects/p/workflows/big", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 900 << 10
		req.Header.Set("Content-Type", "application/yaml")
		req.Header.Set("Authorization", "Bearer "+tok)
		first := make(chan int, 1)
		go func() {
			res, err := b.srv.Client().Do(req)
			if err != nil {
				first <- 0
				return
			}
			res.Body.Close()
			first <- res.StatusCode
		}()
		if _, err := pw.Write([]byte("tasks:\n")); err != nil { // the client is sending it now
			t.Fatal(err)
		}
		return pw, first
	}
	pw, first := slow()
	spec := "tasks:\n  - name: a\n    command: echo a\n" + "# " + strings.Repeat("x", 200<<10) + "\n"
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := b.request("PUT", "/api/v1/projects/p/workflows/second", "", "application/yaml", strings.NewReader(spec),
			"Authorization", "Bearer "+tok)
		if r.status == http.StatusTooManyRequests {
			if e := r.wantError(t, http.StatusTooManyRequests, CodeTooManyRequests); !strings.Contains(e.Message, settingUploadBytes) {
				t.Fatalf("message %q does not name %s", e.Message, settingUploadBytes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a 200 KiB spec beside a 900 KiB one in flight under a 1 MiB budget: %d %s, want 429", r.status, r.body)
		}
		select {
		case st := <-first:
			if st != http.StatusTooManyRequests {
				t.Fatalf("the slow 900 KiB upload ended with %d before its body was sent; want it held, or 429 when a second held the budget first", st)
			}
			pw.CloseWithError(io.ErrUnexpectedEOF) // its client may still be sending
			pw, first = slow()
		default:
			// Its handler may not have started yet: try again.
		}
	}
	pw.CloseWithError(io.ErrUnexpectedEOF)
	<-first
	// The slow body's handler gives its bytes back when it returns, which
	// may be just after its client saw the end.
	for deadline := time.Now().Add(10 * time.Second); ; {
		r := b.request("PUT", "/api/v1/projects/p/workflows/second", "", "application/yaml", strings.NewReader(spec),
			"Authorization", "Bearer "+tok)
		if r.status == http.StatusOK || r.status == http.StatusCreated {
			break
		}
		if r.status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("upload after the budget was given back: %d %s", r.status, r.body)
		}
	}
	// Out of bounds: 400 naming the setting, nothing stored.
	r := b.send("PUT", "/api/v1/settings/"+settingUploadBytes, `{"value":5}`)
	if e := r.wantError(t, http.StatusBadRequest, CodeBadRequest); !strings.Contains(e.Message, settingUploadBytes) {
		t.Fatalf("message %q", e.Message)
	}
	// Settings are for admins.
	b.as(tok, "GET", "/api/v1/settings", "").wantError(t, http.StatusForbidden, CodeForbidden)
}

// TestSettingDefaultsMatchSeeds: the defaults the code falls back on are
// the values migration 0030 seeds, and GET /api/v1/settings shows them.
func TestSettingDefaultsMatchSeeds(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	rows, err := b.store.SettingList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(settingDefs) {
		t.Fatalf("%d seeded settings, %d defined", len(rows), len(settingDefs))
	}
	for _, r := range rows {
		d, ok := settingDefs[r.Name]
		if !ok || r.Value != itoa(d.def) {
			t.Errorf("seeded %s = %s; the code's default is %d (defined: %v)", r.Name, r.Value, d.def, ok)
		}
	}
	var got List[SettingValue]
	b.get("/api/v1/settings").want(t, http.StatusOK).json(t, &got)
	if len(got.Items) != len(settingDefs) {
		t.Fatalf("GET /api/v1/settings: %+v", got.Items)
	}
	for _, s := range got.Items {
		if s.Value != s.Default {
			t.Errorf("%s: value %d, default %d on a fresh database", s.Name, s.Value, s.Default)
		}
	}
}

// TestVersionsPerWorkflowQuota: a workflow keeps at most
// quota.versions_per_workflow versions; an apply that would make one more
// is a 400 naming the setting and stores nothing, while re-applying the
// latest spec unchanged still answers 200. Another workflow is not held.
func TestVersionsPerWorkflowQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")
	b.send("PUT", "/api/v1/settings/"+model.SettingVersionsPerWorkflow, `{"value":2}`).want(t, http.StatusOK)
	tok := b.tokenOf("ed", "user")
	b.send("PUT", "/api/v1/projects/p/grants/ed", `{"level":"edit"}`).want(t, http.StatusOK)
	apply := func(name, cmd string) resp {
		return b.request("PUT", "/api/v1/projects/p/workflows/"+name, "", "application/yaml",
			strings.NewReader("tasks:\n  - name: a\n    command: "+cmd+"\n"), "Authorization", "Bearer "+tok)
	}
	apply("w", "echo 1").want(t, http.StatusCreated)
	apply("w", "echo 2").want(t, http.StatusCreated)
	e := apply("w", "echo 3").wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, model.SettingVersionsPerWorkflow) || !strings.Contains(e.Message, "2 versions") {
		t.Fatalf("message %q does not name the setting and the count", e.Message)
	}
	apply("w", "echo 2").want(t, http.StatusOK) // the latest, unchanged
	var vs List[Workflow]
	b.send("GET", "/api/v1/projects/p/workflows/w/versions", "").want(t, http.StatusOK).json(t, &vs)
	if len(vs.Items) != 2 {
		t.Fatalf("%d versions stored, want 2", len(vs.Items))
	}
	apply("other", "echo 1").want(t, http.StatusCreated)
}
