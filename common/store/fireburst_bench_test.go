package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// BenchmarkFireBurst is the store's share of a fire burst: 1,000 schedules
// due at one second written by FireSchedules as the scheduler does (one
// call per 1,000), each op one burst; cpu-ns/fire is the process's CPU per
// schedule fired (the figure load inflates least). On SQLite by default;
// BenchmarkFireBurstMySQL and BenchmarkFireBurstPostgres on the servers.
func BenchmarkFireBurst(b *testing.B) { benchFireBurst(b, testDialectNamed(b, "sqlite"), 1000) }

func BenchmarkFireBurstMySQL(b *testing.B) { benchFireBurst(b, testDialectNamed(b, "mysql"), 1000) }

func BenchmarkFireBurstPostgres(b *testing.B) {
	benchFireBurst(b, testDialectNamed(b, "postgres"), 1000)
}

func benchFireBurst(b *testing.B, d testDialect, n int) {
	ctx := context.Background()
	s := benchStore(b, d)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	fires := make([]store.ScheduleFire, n)
	for i := range n {
		name := fmt.Sprintf("wf%d", i)
		if _, _, err := s.WorkflowPut(ctx, "demo", mustSpec(b, "name: "+name+"\ntasks:\n  - {name: a, command: \"true\"}\n")); err != nil {
			b.Fatal(err)
		}
		sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: name, Cron: "0 0 * * *", Enabled: true, NextFireTime: &at}, nil)
		if err != nil {
			b.Fatal(err)
		}
		fires[i].Schedule = sc
	}
	if err := s.TermBegin(ctx, 1, "m"); err != nil {
		b.Fatal(err)
	}
	t := s.Term(1)
	pid := 0
	if d.serverPid != nil {
		pid = d.serverPid()
	}
	cpu0, srv0 := cpuTime(), serverCPU(pid)
	b.ResetTimer()
	for range b.N {
		next := at.Add(24 * time.Hour)
		for i := range fires {
			fires[i].Firing = store.Firing{Times: []time.Time{at}, Next: &next}
		}
		res, err := t.ScheduleFireBatch(ctx, fires)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil || len(r.Runs) != 1 {
				b.Fatalf("schedule %d: %+v", i, r)
			}
			// What the scheduler's next read would give.
			fires[i].Schedule.Revision++
			fires[i].Schedule.LastFireTime, fires[i].Schedule.NextFireTime = &at, &next
		}
		at = next
	}
	b.StopTimer()
	fired := float64(b.N * n)
	b.ReportMetric(float64(cpuTime()-cpu0)/fired, "cpu-ns/fire")
	if pid != 0 {
		b.ReportMetric(float64(serverCPU(pid)-srv0)/fired, "server-cpu-ns/fire")
	}
	b.ReportMetric(float64(b.Elapsed())/fired, "wall-ns/fire")
}
