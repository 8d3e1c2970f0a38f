package standalone_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

func TestRetriesWithInterval(t *testing.T) {
	e := start(t, "")
	count := filepath.Join(e.dir, "count")
	// Fails on its first two runs, succeeds on the third.
	e.apply(fmt.Sprintf(`name: flaky
tasks:
  - name: f
    command: 'echo x >> %[1]s; [ "$(wc -l < %[1]s)" -ge 3 ]'
    retries: 2
    retry_interval: 300ms
  - {name: after, command: "true", depends_on: [f]}
  - name: hopeless
    command: "exit 4"
    retries: 1
`, count))
	iv := e.wait(e.run("flaky", nil), 30*time.Second)
	if iv.State != "failed" {
		t.Fatalf("instance %s, want failed (hopeless fails after its retry)", iv.State)
	}
	rows, _ := e.store().ListTaskInstances(context.Background(), iv.ID)
	var f []int
	var ends, starts []time.Time
	hopeless := 0
	for _, r := range rows {
		switch r.Name {
		case "f":
			f = append(f, r.Attempt)
			if r.Attempt < 3 && (r.State != "failed" || !r.Superseded) {
				t.Fatalf("attempt %d of f: %+v", r.Attempt, r)
			}
			if r.Attempt == 3 && (r.State != "succeeded" || r.Superseded) {
				t.Fatalf("last attempt of f: %+v", r)
			}
			starts = append(starts, *r.StartTime)
			ends = append(ends, *r.EndTime)
		case "hopeless":
			hopeless++
			if r.State != "failed" {
				t.Fatalf("hopeless: %+v", r)
			}
		}
	}
	if len(f) != 3 || hopeless != 2 || iv.count("after") != 0 {
		t.Fatalf("attempts of f %v, of hopeless %d, after ran %d times", f, hopeless, iv.count("after"))
	}
	for i := 1; i < 3; i++ {
		if gap := starts[i].Sub(ends[i-1]); gap < 300*time.Millisecond {
			t.Fatalf("attempt %d started %v after the previous ended; interval is 300ms", i+1, gap)
		}
	}
}

func TestTaskTimeouts(t *testing.T) {
	e := start(t, "")
	e.apply(`name: slow
failure_strategy: continue
tasks:
  - {name: killed, command: "sleep 30", timeout: 300ms, timeout_strategy: fail}
  - {name: warned, command: "sleep 0.5", timeout: 100ms, timeout_strategy: warn}
`)
	began := time.Now()
	iv := e.wait(e.run("slow", nil), 20*time.Second)
	if time.Since(began) > 15*time.Second {
		t.Fatalf("the timeout did not kill the task")
	}
	if iv.State != "failed" || iv.task("killed").State != "failed" || iv.task("warned").State != "succeeded" {
		t.Fatalf("instance %s, killed %s, warned %s", iv.State, iv.task("killed").State, iv.task("warned").State)
	}
}
