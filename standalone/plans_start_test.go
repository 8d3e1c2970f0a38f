package standalone_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

type listedRun struct {
	ID           int64      `json:"id"`
	State        string     `json:"state"`
	BackfillID   int64      `json:"backfill_id"`
	ScheduleTime *time.Time `json:"schedule_time"`
}

func (e *env) runsOf(query string) []listedRun {
	e.t.Helper()
	var l struct{ Items []listedRun }
	e.do("GET", "/api/v1/instances?"+query, "", http.StatusOK, &l)
	slices.SortFunc(l.Items, func(a, b listedRun) int { return int(a.ID - b.ID) })
	return l.Items
}

// backfillDone waits for backfill id to end done with every run succeeded.
func (e *env) backfillDone(id int64) {
	e.t.Helper()
	wait.UntilErr(e.t, 120*time.Second, fmt.Sprintf("backfill %d to finish", id), func() error {
		var b struct {
			State     string `json:"state"`
			Progress  any    `json:"progress"`
			Total     int    `json:"total"`
			Submitted int    `json:"submitted"`
		}
		e.do("GET", fmt.Sprintf("/api/v1/backfills/%d", id), "", http.StatusOK, &b)
		if b.State != "done" {
			return fmt.Errorf("backfill %d is %s (%d of %d submitted)", id, b.State, b.Submitted, b.Total)
		}
		for _, r := range e.runsOf(fmt.Sprintf("backfill=%d", id)) {
			if r.State != "succeeded" {
				return fmt.Errorf("run %d is %s", r.ID, r.State)
			}
		}
		return nil
	})
}

func plannedTasks(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// TestPlanBackfillCascade: a backfill of demo/daily over five days,
// planned with its direct downstream, reaches the five runs of crm/report
// (one a day, each waiting on that day's daily with a dependent task);
// applying it runs exactly the plan: one daily run per planned time with
// the planned tasks, the five reports again with theirs, nothing else. A
// plan made before a run appeared in its range is refused, naming the run.
// A rerun from a task, planned, runs exactly the planned run.
func TestPlanBackfillCascade(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		e.apply(`name: daily
tasks:
  - {name: a, command: "true"}
  - {name: b, command: "true", depends_on: [a]}
  - {name: c, command: "true", depends_on: [b]}
`)
		e.do("POST", "/api/v1/projects", `{"name":"crm"}`, http.StatusCreated, nil)
		e.do("PUT", "/api/v1/projects/crm/workflows/report", `name: report
tasks:
  - {name: wait, type: dependent, wait_for: [{project: demo, workflow: daily, date: today}], check_interval: 1s}
  - {name: r1, command: "true", depends_on: [wait]}
`, http.StatusCreated, nil)
		today := time.Now().UTC().Truncate(24 * time.Hour)
		first, last := today.AddDate(0, 0, -6), today.AddDate(0, 0, -2)
		rng := fmt.Sprintf(`"start":%q,"end":%q,"cron":"0 0 * * *"`, first.Format(time.RFC3339), last.Format(time.RFC3339))
		// The reports of the five days, recorded without running (their
		// daily runs do not exist yet).
		var rb struct {
			ID int64 `json:"id"`
		}
		e.do("POST", "/api/v1/projects/crm/workflows/report/backfill", `{`+rng+`,"parallelism":5,"dry_run":true}`, http.StatusCreated, &rb)
		e.backfillDone(rb.ID)
		reports := e.runsOf("project=crm&workflow=report")
		if len(reports) != 5 {
			t.Fatalf("reports %+v", reports)
		}
		reportAt := map[int64]time.Time{}
		for _, r := range reports {
			reportAt[r.ID] = *r.ScheduleTime
		}

		var p api.Plan
		e.do("POST", "/api/v1/projects/demo/workflows/daily/backfill/plan", `{`+rng+`,"parallelism":2,"downstream":"direct"}`, http.StatusCreated, &p)
		if len(p.Instances) != 10 || p.Blocked || strings.Join(p.Projects, ",") != "crm,demo" {
			t.Fatalf("plan %+v", p)
		}
		planned := map[string][]string{} // "daily@time" or "report id" -> tasks
		newAt := map[int64]time.Time{}
		for i, in := range p.Instances {
			var names []string
			for _, tk := range in.Tasks {
				names = append(names, tk.Name)
			}
			switch {
			case i < 5:
				if !in.New || in.ID != int64(-i-1) || in.ScheduleTime == nil || !in.ScheduleTime.Equal(first.AddDate(0, 0, i)) {
					t.Fatalf("new run %d: %+v", i, in)
				}
				newAt[in.ID] = *in.ScheduleTime
				planned["daily@"+in.ScheduleTime.UTC().Format(time.RFC3339)] = plannedTasks(names)
			default:
				at, ok := reportAt[in.ID]
				if !ok || in.Project != "crm" || in.Level != 1 || len(in.After) != 1 || !newAt[in.After[0]].Equal(at) {
					t.Fatalf("downstream run %+v (reports %v)", in, reportAt)
				}
				planned[fmt.Sprint("report ", in.ID)] = plannedTasks(names)
			}
		}
		if p.Estimate.P50 < 3*p.Instances[0].Estimate.P50 {
			t.Fatalf("two at a time, five runs take three rounds: %+v, one run %+v", p.Estimate, p.Instances[0].Estimate)
		}

		before := map[int64]map[int64]bool{}
		for id := range reportAt {
			_, before[id] = e.newAttempts(id, nil)
		}
		var applied api.Plan
		e.do("POST", fmt.Sprintf("/api/v1/plans/%d/apply", p.ID), "", http.StatusAccepted, &applied)
		if applied.BackfillID == 0 || len(applied.Commands) != 5 {
			t.Fatalf("applied %+v", applied)
		}
		e.backfillDone(applied.BackfillID)
		ran := map[string][]string{}
		for _, r := range e.runsOf(fmt.Sprintf("backfill=%d", applied.BackfillID)) {
			names, _ := e.newAttempts(r.ID, nil)
			ran["daily@"+r.ScheduleTime.UTC().Format(time.RFC3339)] = names
		}
		for id := range reportAt {
			e.applied(id, "rerun")
			e.succeeded(id, 60*time.Second)
			ran[fmt.Sprint("report ", id)], _ = e.newAttempts(id, before[id])
		}
		if fmt.Sprint(ran) != fmt.Sprint(planned) {
			t.Fatalf("ran %v\nplanned %v", ran, planned)
		}
		if all := e.runsOf("project=demo"); len(all) != 5 {
			t.Fatalf("runs of demo beyond the plan: %+v", all)
		}

		// A plan of the range, then a run appears in it (another backfill
		// of one day): the apply is refused, naming the run.
		var stale api.Plan
		e.do("POST", "/api/v1/projects/demo/workflows/daily/backfill/plan", `{`+rng+`}`, http.StatusCreated, &stale)
		if stale.Blocked || len(stale.Conflicts) != 5 || !strings.Contains(stale.Conflicts[0].What, "already has run") {
			t.Fatalf("a plan over finished runs: %+v", stale.Conflicts)
		}
		var one struct {
			ID int64 `json:"id"`
		}
		day := first.AddDate(0, 0, 2).Format(time.RFC3339)
		e.do("POST", "/api/v1/projects/demo/workflows/daily/backfill", fmt.Sprintf(`{"start":%q,"end":%q,"cron":"0 0 * * *"}`, day, day), http.StatusCreated, &one)
		var newRun int64
		wait.UntilErr(t, 60*time.Second, "the one-day backfill's run", func() error {
			if rs := e.runsOf(fmt.Sprintf("backfill=%d", one.ID)); len(rs) == 1 {
				newRun = rs[0].ID
				return nil
			}
			return fmt.Errorf("no run yet")
		})
		var msg string
		e.do("POST", fmt.Sprintf("/api/v1/plans/%d/apply", stale.ID), "", http.StatusConflict, &msg)
		if !strings.Contains(msg, "runs of demo/daily scheduled from") || !strings.Contains(msg, fmt.Sprint(newRun)) {
			t.Fatalf("stale apply: %s", msg)
		}
		e.backfillDone(one.ID)

		// Rerun from b (and what follows): the plan's run is the run.
		var rf api.Plan
		e.do("POST", "/api/v1/projects/demo/workflows/daily/runs/plan", `{"start_nodes":["b"],"scope":"downstream"}`, http.StatusCreated, &rf)
		if len(rf.Instances) != 1 || !rf.Instances[0].New {
			t.Fatalf("rerun-from plan %+v", rf.Instances)
		}
		var want []string
		for _, tk := range rf.Instances[0].Tasks {
			want = append(want, tk.Name)
		}
		e.do("POST", fmt.Sprintf("/api/v1/plans/%d/apply", rf.ID), "", http.StatusAccepted, &applied)
		if len(applied.Started) != 1 {
			t.Fatalf("applied %+v", applied)
		}
		e.succeeded(applied.Started[0], 60*time.Second)
		if got, _ := e.newAttempts(applied.Started[0], nil); fmt.Sprint(got) != fmt.Sprint(plannedTasks(want)) || fmt.Sprint(got) != "[b c]" {
			t.Fatalf("rerun from b ran %v, planned %v", got, want)
		}
	})
}
