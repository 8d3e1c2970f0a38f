package standalone_test

import (
	"net/http"
	"testing"
	"time"
)

// TestForceSuccessKeepsTheRunsDuration: a task that failed in a few
// milliseconds and was force-succeeded a while later keeps its own end
// time (its duration is the run's, not the operator's wait); the force is
// in the instance history.
func TestForceSuccessKeepsTheRunsDuration(t *testing.T) {
	e := start(t, "")
	e.apply(`name: quick
tasks:
  - {name: bad, command: "false"}
  - {name: next, command: "true", depends_on: [bad]}
`)
	id := e.run("quick", nil)
	if iv := e.wait(id, 30*time.Second); iv.State != "failed" {
		t.Fatalf("instance %s, want failed", iv.State)
	}
	failed := e.waitTask(id, "bad", "failed")
	time.Sleep(time.Second) // time is the subject: the operator looks into it before forcing, and the run keeps that time
	e.act("task", failed.ID, "force_success", http.StatusAccepted)
	e.waitTask(id, "next", "succeeded")
	iv := e.wait(id, 30*time.Second)
	forced := iv.task("bad")
	if forced.State != "forced_success" || forced.EndTime == nil || !forced.EndTime.Equal(*failed.EndTime) {
		t.Fatalf("forced task: state %s, end %v; it had ended at %v", forced.State, forced.EndTime, failed.EndTime)
	}
	if d := forced.EndTime.Sub(*forced.StartTime); d > 500*time.Millisecond {
		t.Fatalf("duration of a forced task %v: the operator's wait, not the run", d)
	}
	found := false
	for _, h := range iv.History {
		found = found || h.Action == "force_success"
	}
	if !found {
		t.Fatalf("no force_success in the history: %+v", iv.History)
	}
}
