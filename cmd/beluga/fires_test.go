package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/store"
)

// TestScheduleFiresAndCompensate: schedule fires lists the ledger (by the
// workflow's name or the schedule's id, filtered by outcome), compensate
// previews and then runs the missed fires once; bad flags are refused.
func TestScheduleFiresAndCompensate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.etlRun()
	e.want(0, []string{"schedule", "set", "nightly_etl", "-p", "p", "--cron", "0 * * * *", "--timezone", "Asia/Shanghai"})
	ctx := context.Background()
	sc, err := e.store.ScheduleGet(ctx, "p", "nightly_etl")
	if err != nil {
		t.Fatal(err)
	}
	m1, t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	next := t0.Add(time.Hour)
	if err := e.store.TermBegin(ctx, 1, "m1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Term(1).ScheduleFireOne(ctx, sc, store.Firing{Times: []time.Time{t0}, Next: &next, Missed: []time.Time{m1}}); err != nil {
		t.Fatal(err)
	}
	out := e.want(0, []string{"schedule", "fires", "nightly_etl", "-p", "p"}, "2026-12-01T10:00:00Z", "2026-12-01 18:00:00 CST", "missed", "fired")
	if strings.Count(out, "\n") != 3 {
		t.Fatalf("fires:\n%s", out)
	}
	out = e.want(0, []string{"schedule", "fires", itoa(sc.ID), "-p", "p", "--outcome", "missed"}, "missed")
	if strings.Contains(out, "fired") {
		t.Fatalf("--outcome missed:\n%s", out)
	}
	e.want(2, []string{"schedule", "fires", "nightly_etl", "-p", "p", "--outcome", "lost"}, "outcome")
	e.want(2, []string{"schedule", "compensate", "nightly_etl", "-p", "p"}, "--all-missed")
	e.want(2, []string{"schedule", "compensate", "nightly_etl", "-p", "p", "--fire", "noon"}, "RFC 3339")
	e.want(0, []string{"schedule", "compensate", "nightly_etl", "-p", "p", "--all-missed", "--dry-run"}, "would run 1 missed fire", "2026-12-01T10:00:00Z")
	e.want(0, []string{"schedule", "compensate", "nightly_etl", "-p", "p", "--all-missed"}, "ran 1 missed fire")
	e.want(0, []string{"schedule", "compensate", "nightly_etl", "-p", "p", "--all-missed"}, "ran 0 missed fire")
	e.want(0, []string{"schedule", "fires", "nightly_etl", "-p", "p", "--outcome", "compensated"}, "compensated")
}
