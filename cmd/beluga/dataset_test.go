package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/api"
)

// TestDatasetCommands: the README's beluga dataset list, show, emit and
// fires against a real server, with the leader's evaluation of the
// emitted partitions done on the store as a leader would.
func TestDatasetCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "demo"})
	e.want(0, []string{"workflow", "apply", "-p", "demo", "-f", e.file("load.yaml", `name: load_events
tasks:
  - name: load
    command: ./load.sh "$hour"
    produces: ["events@${hour}"]
`)})
	e.want(0, []string{"workflow", "apply", "-p", "demo", "-f", e.file("report.yaml", `name: daily_report
on_datasets: [events@hourly, orders@daily]
run_grain: daily
late_data: rerun
tasks:
  - name: report
    command: ./report.sh "$bizdate"
`)})
	e.want(0, []string{"dataset", "list", "-p", "demo"}, "events", "load_events/load", "daily_report(hourly,rerun)", "orders")
	e.want(0, []string{"dataset", "emit", "orders", "2026-12-07", "-p", "demo", "--key", "orders-2026-12-07"}, "orders@2026-12-07 recorded")
	e.want(0, []string{"dataset", "emit", "orders", "20261207", "-p", "demo", "--key", "orders-2026-12-07"}, "already recorded with this key")
	e.want(2, []string{"dataset", "emit", "orders", "yesterday", "-p", "demo"}, "use a day")
	e.want(2, []string{"dataset", "emit", "orders", "-p", "demo"})
	for h := range 24 {
		e.want(0, []string{"dataset", "emit", "events", "2026-12-07T" + two(h), "-p", "demo"})
	}
	e.want(0, []string{"dataset", "show", "events", "-p", "demo", "--limit", "2"}, "partitions: 24", "2026-12-07T23", "2026-12-07T22", "admin")
	e.want(1, []string{"dataset", "show", "nope", "-p", "demo"}, "not found")
	ctx := context.Background()
	ids, err := e.store.DatasetPending(ctx, 100)
	if err != nil || len(ids) != 25 {
		t.Fatalf("pending: %v %v", ids, err)
	}
	for _, id := range ids {
		if _, err := e.store.DatasetEvaluate(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	e.want(2, []string{"dataset", "fires", "-p", "demo"}, "--workflow is required")
	out := e.want(0, []string{"dataset", "fires", "-p", "demo", "-w", "daily_report", "-o", "json"})
	var fs []api.DatasetFire
	if err := json.Unmarshal([]byte(out), &fs); err != nil || len(fs) != 1 || fs[0].Partition != "2026-12-07" || fs[0].RunID == 0 {
		t.Fatalf("fires: %s %v", out, err)
	}
	e.want(0, []string{"dataset", "fires", "-p", "demo", "-w", "daily_report"}, "2026-12-07", "fired")

	// A plan first: orders of the 8th alone starts nothing (the 8th's
	// hours are missing), and says so; applied, it posts the event.
	out = e.want(0, []string{"dataset", "emit", "orders", "2026-12-08", "-p", "demo", "--plan", "-o", "json"})
	var pl api.Plan
	if err := json.Unmarshal([]byte(out), &pl); err != nil || pl.Action != "dataset_emit" || len(pl.Instances) != 0 ||
		len(pl.Conflicts) != 1 || !strings.Contains(pl.Conflicts[0].What, "demo/daily_report: no run: inputs not all ready") {
		t.Fatalf("plan: %s %v", out, err)
	}
	e.want(0, []string{"dataset", "emit", "orders", "2026-12-08", "-p", "demo", "--plan"}, "dataset_emit", "inputs not all ready")
	e.want(0, []string{"plan", "apply", fmt.Sprint(pl.ID)}, "dataset event", "posted")
	e.want(0, []string{"dataset", "show", "orders", "-p", "demo"}, "2026-12-08")
}

func two(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }
