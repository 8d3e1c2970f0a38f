package executor

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/remote/message"
)

// hanging is an HTTP server whose handler never answers: it tells arrived
// of each request and returns only when the client goes away, so a task
// left running would hold it (and Close) forever.
type hanging struct {
	srv     *httptest.Server
	arrived chan struct{}
	gone    chan struct{} // a request's context ended: the client closed
}

func newHanging(t *testing.T) *hanging {
	h := &hanging{arrived: make(chan struct{}, 4), gone: make(chan struct{}, 4)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.arrived <- struct{}{}
		<-r.Context().Done()
		h.gone <- struct{}{}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hanging) wait(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("the server saw no %s", what)
	}
}

func httpDispatch(id int64, url string) message.Dispatch {
	d := dispatch(id, "")
	d.TaskType = "http"
	d.Payload = []byte(fmt.Sprintf(`{"method": "GET", "url": %q}`, url))
	return d
}

// TestInProcessKill: killing a running http task (pid 0, no process group)
// cancels its request at once and reports it killed on request, not
// "before start"; its connection is closed and its slot freed.
func TestInProcessKill(t *testing.T) {
	t.Parallel()
	h := newHanging(t)
	b := setup(t, Config{Slots: 1})
	b.mustDispatch(t, httpDispatch(1, h.srv.URL+"/hang"))
	if r := b.waitRunning(t, 1); r.PID != 0 {
		t.Fatalf("running report of an in-process task has pid %d", r.PID)
	}
	h.wait(t, h.arrived, "request")
	killed := time.Now()
	if r := b.e.Kill(1); !r.Found {
		t.Fatal("kill: task not found")
	}
	res := b.waitResult(t, 1)
	if took := time.Since(killed); took > time.Second {
		t.Errorf("the killed task took %v to end", took)
	}
	if res.State != "killed" || res.Message != "killed on request" || len(res.Outputs) != 0 {
		t.Fatalf("result = %+v, want killed on request", res)
	}
	h.wait(t, h.gone, "closed connection")
	// The slot is free: the next task runs.
	b.mustDispatch(t, dispatch(2, "true"))
	if res := b.waitResult(t, 2); res.State != "succeeded" {
		t.Fatalf("task after the kill: %+v", res)
	}
	wait.Until(t, 5*time.Second, "no task running or queued", func() bool {
		s := b.e.Stats()
		return s.Running == 0 && s.Queued == 0
	})
}

// TestInProcessTimeout: an http task past its timeout is cancelled and
// fails naming the timeout, promptly, without the KillGrace a process gets.
func TestInProcessTimeout(t *testing.T) {
	t.Parallel()
	h := newHanging(t)
	b := setup(t, Config{KillGrace: 10 * time.Second})
	d := httpDispatch(1, h.srv.URL+"/hang")
	d.TimeoutMillis = 300
	start := time.Now()
	b.mustDispatch(t, d)
	h.wait(t, h.arrived, "request")
	res := b.waitResult(t, 1)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a 300ms timeout ended the task after %v", took)
	}
	if res.State != "failed" || res.Message != "timed out after 300ms" {
		t.Fatalf("result = %+v, want failed: timed out after 300ms", res)
	}
	h.wait(t, h.gone, "closed connection")
}

// TestInProcessStop: Stop with an http task running cancels it, reports
// nothing (the next worker life re-runs it) and returns promptly.
func TestInProcessStop(t *testing.T) {
	t.Parallel()
	h := newHanging(t)
	b := setup(t, Config{KillGrace: 10 * time.Second})
	b.mustDispatch(t, httpDispatch(1, h.srv.URL+"/hang"))
	h.wait(t, h.arrived, "request")
	start := time.Now()
	b.e.Stop()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Stop took %v", took)
	}
	if _, ok := b.master.result(1); ok {
		t.Fatal("Stop reported a result for the task it cancelled")
	}
	h.wait(t, h.gone, "closed connection")
}
