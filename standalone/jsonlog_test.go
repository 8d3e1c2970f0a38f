package standalone_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/standalone"
)

// syncBuffer is a log sink for the test (zap writes from many goroutines).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Sync() error { return nil }

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestJSONLogLinesNameTheirTask runs a workflow (a success, a failure
// retried, a task that cannot be dispatched, a stop) with the json log at
// debug level and checks that every line about a task carries instance_id,
// task_id, workflow and project, and every line about an instance the
// three besides task_id.
func TestJSONLogLinesNameTheirTask(t *testing.T) {
	var sink syncBuffer
	enc := zap.NewProductionEncoderConfig()
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), &sink, zapcore.DebugLevel))
	c := config.Defaults()
	c.DataDir, c.API.Listen, c.Worker.Slots = t.TempDir(), "127.0.0.1:0", 4
	sa, err := standalone.Start(context.Background(), c, log)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	marker := filepath.Join(t.TempDir(), "marker")
	e.apply(`name: logged
tasks:
  - {name: a, command: "echo hi"}
  - {name: b, command: "test -f ` + marker + ` || { touch ` + marker + `; exit 1; }", retries: 1, depends_on: [a]}
  - {name: c, command: "exit 3", depends_on: [a]}
`)
	id := e.run("logged", nil)
	if iv := e.wait(id, time.Minute); iv.State != "failed" {
		t.Fatalf("run %s, want failed (c exits 3): %+v", iv.State, iv.Tasks)
	}
	e.apply("name: long\ntasks:\n  - {name: s, command: \"sleep 30\"}\n")
	long := e.run("long", nil)
	e.waitTask(long, "s", "running")
	e.act("instances", long, "stop", http.StatusAccepted)
	e.wait(long, time.Minute)
	sa.Stop()

	lines, tasks := 0, 0
	sc := bufio.NewScanner(strings.NewReader(sink.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a json line: %s", sc.Bytes())
		}
		lines++
		aboutTask, aboutInstance := false, false
		for k := range m {
			switch k {
			case "task_id", "task", "task_instance_id", "task_name":
				aboutTask = true
			case "instance_id", "workflow_instance_id":
				aboutInstance = true
			}
		}
		need := []string{}
		if aboutTask {
			tasks++
			need = []string{"instance_id", "task_id", "workflow", "project"}
		} else if aboutInstance {
			need = []string{"instance_id", "workflow", "project"}
		}
		for _, k := range need {
			if v, ok := m[k]; !ok || v == "" || v == float64(0) {
				t.Errorf("line lacks %s: %s", k, sc.Bytes())
				break
			}
		}
	}
	if tasks < 3 {
		t.Fatalf("only %d of %d lines are about a task: the run should have logged more", tasks, lines)
	}
}
