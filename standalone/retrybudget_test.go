package standalone_test

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/common/store"
)

// waitAttempts polls until the instance is finished with n attempts of task.
func (e *env) waitAttempts(id int64, task string, n int) instanceView {
	e.t.Helper()
	var iv instanceView
	wait.UntilErr(e.t, 30*time.Second, fmt.Sprintf("instance %d failed with %d attempts of %s", id, n, task), func() error {
		iv = instanceView{}
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
		if iv.State != "failed" || iv.count(task) != n {
			return fmt.Errorf("%s with %d: %+v", iv.State, iv.count(task), iv.Tasks)
		}
		return nil
	})
	return iv
}

// attempts returns the attempt numbers of task, in row order.
func attempts(iv instanceView, task string) []int {
	var out []int
	for _, t := range iv.Tasks {
		if t.Name == task {
			out = append(out, t.Attempt)
		}
	}
	return out
}

// TestRecoverAndRerunRenewRetries: a task with retries: 1 that always fails
// gets two attempts per run; recover_failed and rerun each give it a new
// budget (two more attempts), numbered on.
func TestRecoverAndRerunRenewRetries(t *testing.T) {
	e := start(t, "")
	e.apply(fmt.Sprintf(`name: hopeless
tasks:
  - {name: bad, retries: 1, command: "echo x >> %s; false"}
`, filepath.Join(e.dir, "runs")))
	id := e.run("hopeless", nil)
	e.waitAttempts(id, "bad", 2)
	e.act("instance", id, "recover_failed", http.StatusAccepted)
	e.waitAttempts(id, "bad", 4)
	e.act("instance", id, "rerun", http.StatusAccepted)
	iv := e.waitAttempts(id, "bad", 6)
	if got := fmt.Sprint(attempts(iv, "bad")); got != "[1 2 3 4 5 6]" {
		t.Fatalf("attempt numbers %s", got)
	}
	if got := runsOf(t, filepath.Join(e.dir, "runs")); got != "x,x,x,x,x,x" {
		t.Fatalf("executions %s, want 6", got)
	}
}

// TestRetryBudgetSurvivesRestart: the budget a recovery started is read
// from the DB by the master that takes over. With retries: 2, a restart
// while the recovery's first retry waits out its interval still leaves the
// task exactly its two retries: attempts 4, 5, 6 after attempts 1-3.
func TestRetryBudgetSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	e := startOn(t, dir, "")
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	e.apply(`name: hopeless
tasks:
  - {name: bad, retries: 2, retry_interval: 2s, command: "false"}
`)
	id := e.run("hopeless", nil)
	e.waitAttempts(id, "bad", 3)
	e.act("instance", id, "recover_failed", http.StatusAccepted)
	if tk := e.waitTask(id, "bad", "delayed"); tk.Attempt != 5 {
		t.Fatalf("delayed attempt %d, want 5", tk.Attempt)
	}
	e.sa.Stop()
	st, err := store.Open(context.Background(), config.Config{DataDir: dir}.DBURL(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.TaskList(context.Background(), id)
	st.Close()
	if err != nil || len(rows) == 0 {
		t.Fatalf("rows after stop: %v %v", rows, err)
	}
	if last := rows[len(rows)-1]; last.Attempt != 5 || last.State != "delayed" {
		t.Fatalf("stopped too late: the retry was no longer waiting: %+v", last)
	}

	e = startOn(t, dir, "")
	iv := e.waitAttempts(id, "bad", 6)
	if got := fmt.Sprint(attempts(iv, "bad")); got != "[1 2 3 4 5 6]" {
		t.Fatalf("attempt numbers %s", got)
	}
}
