package executor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestSQLTaskRunsInAChild: a sql task (a tasktype.Child) runs in this
// binary re-executed (TestMain), with the task user and sandbox when
// isolation is on as root: its outputs come back, its pid is not the
// worker's.
func TestSQLTaskRunsInAChild(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "beluga-sqlchild-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	b := setup(t, Config{Shell: "sh", Slots: 1, TaskIsolation: "on"})
	d := dispatch(1, "")
	d.TaskType = "sql"
	payload, _ := json.Marshal(map[string]any{
		"datasource":  map[string]string{"name": "lite", "type": "sqlite", "database": filepath.Join(dir, "t.db")},
		"statements":  []map[string]string{{"sql": "SELECT 6*7 AS answer"}},
		"transaction": true,
	})
	d.Payload = payload
	b.mustDispatch(t, d)
	res := b.waitResult(t, 1)
	log := ""
	if p, ok := b.e.LogPath(1); ok {
		raw, _ := os.ReadFile(p)
		log = string(raw)
	}
	if res.State != "succeeded" || res.Outputs["answer"] != "42" {
		t.Fatalf("result %+v\nlog:\n%s", res, log)
	}
	if res.PID == 0 || res.PID == os.Getpid() {
		t.Fatalf("the sql task ran as pid %d (worker %d)", res.PID, os.Getpid())
	}
}
