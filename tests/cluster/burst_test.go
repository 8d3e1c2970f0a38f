package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// burstSize is the schedules due at one second in the burst tests:
// BELUGA_BURST, or 500 (the figure of record, 10,000, is set by make
// bench's users with BELUGA_BURST=10000; it takes minutes to seed).
func burstSize(t *testing.T) int {
	if s := os.Getenv("BELUGA_BURST"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("BELUGA_BURST=%q: want a positive number of schedules", s)
		}
		return n
	}
	return 500
}

// TestBurstCrashPoints: n schedules due at the same second, the leader
// killed -9 at the burst's write (before it, and after it commits but
// before its runs start; the burst is written ahead of its second, so the
// kill lands before the second and the standby finds runs written but not
// yet due), and once with no kill: each schedule fires exactly once, none
// lost and none doubled, each at the burst's second, and no run starts
// before it. It logs the fire lag (schedule time to the run committed and
// claimable, and to the run started). $BELUGA_CLUSTERTEST_DB=postgres runs
// it on PostgreSQL.
func TestBurstCrashPoints(t *testing.T) {
	n := burstSize(t)
	for _, point := range []string{failpoint.BeforeFireSchedule, failpoint.AfterFireSchedule, "no-kill"} {
		t.Run(point, func(t *testing.T) {
			env := map[string][]string{"master-1": {"BELUGA_FAILPOINT=" + point}}
			if point == "no-kill" {
				env = nil
			}
			c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 1, SessionTimeout: sessionTimeout, Env: env})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			// Written to the store directly: the API's cost per schedule is
			// bench/scale's figure, not this test's.
			t0 := time.Now()
			for i := range n {
				name := fmt.Sprintf("b%05d", i)
				w, err := spec.Parse([]byte("name: " + name + "\ntasks:\n  - {name: a, command: \"true\"}\n"))
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := c.Store.WorkflowPut(ctx, c.Project, w); err != nil {
					t.Fatal(err)
				}
			}
			// Due after the schedules are written and a cronReload has passed
			// (the leader was not nudged: it finds them on its periodic pass).
			// Should a loaded machine write them slower, they fire late, still
			// once each at this second (catch-up all; within the grace).
			at := time.Now().UTC().Add(15*time.Second + time.Since(t0)).Truncate(time.Second).Add(time.Second)
			for i := range n {
				name := fmt.Sprintf("b%05d", i)
				if _, _, err := c.Store.SchedulePut(ctx, model.Schedule{Project: c.Project, Workflow: name, Timezone: "UTC",
					Cron: fmt.Sprintf("%d %d %d * * *", at.Second(), at.Minute(), at.Hour()), Catchup: "all", Enabled: true,
					NextFireTime: &at, Overlap: model.OverlapAllow}, nil); err != nil {
					t.Fatal(err)
				}
			}
			if point != "no-kill" {
				crashed := c.Masters[0]
				if err := crashed.Wait(time.Until(at) + failoverWithin); err == nil || !strings.Contains(crashed.Log(), "failpoint "+point+": killing") {
					t.Fatalf("%s did not die at %s (%v):\n%s", crashed.Name, point, err, crashed.LogTail(30))
				}
				c.WaitLeader(t, failoverWithin, crashed)
			}
			total := func() int64 {
				_, total, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Limit: 1})
				if err != nil {
					t.Fatal(err)
				}
				return total
			}
			c.Eventually(t, finishWithin, fmt.Sprintf("%d runs", n), func() bool { return total() >= int64(n) })
			per := map[string]int{}
			for off := 0; off < n+1; off += store.MaxPage {
				runs, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Limit: store.MaxPage, Offset: off})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range runs {
					per[r.Workflow]++
					if r.ScheduleTime == nil || !r.ScheduleTime.Equal(at) || r.CommandType != model.CommandScheduled {
						t.Fatalf("run %d of %s: schedule time %v, command %s; want %v, scheduled", r.ID, r.Workflow, r.ScheduleTime, r.CommandType, at)
					}
				}
			}
			for name, k := range per {
				if k != 1 {
					t.Fatalf("%s fired %d times", name, k)
				}
			}
			if len(per) != n {
				t.Fatalf("%d of %d schedules fired", len(per), n)
			}
			// Every run started, none before its second (a new leader's
			// consumer honours the runs written ahead as the old one did).
			var written, started []time.Duration
			// Starting them is the consumer's claims, ~1,000 a second on a
			// quiet machine: 10,000 take minutes on a loaded one.
			c.Eventually(t, finishWithin+time.Duration(n)*30*time.Millisecond, fmt.Sprintf("%d runs started", n), func() bool {
				written, started = written[:0], started[:0]
				for off := 0; off < n+1; off += store.MaxPage {
					runs, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Project: c.Project, Limit: store.MaxPage, Offset: off})
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range runs {
						if r.StartTime == nil {
							return false
						}
						if r.StartTime.Before(at) {
							t.Fatalf("run %d of %s started at %v, before its second %v", r.ID, r.Workflow, r.StartTime, at)
						}
						written, started = append(written, max(r.CreatedAt.Sub(at), 0)), append(started, r.StartTime.Sub(at))
					}
				}
				return len(started) == n
			})
			t.Logf("%s, %d schedules: schedule time -> run committed and claimable %s; -> run started %s", point, n, pcts(written), pcts(started))
		})
	}
}

// pcts is "p50 X p99 Y max Z" of ds.
func pcts(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p int) time.Duration { return s[min(len(s)-1, len(s)*p/100)] }
	return fmt.Sprintf("p50 %v p99 %v max %v", at(50).Round(time.Millisecond), at(99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
