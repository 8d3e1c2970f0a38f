package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/forecast"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestInstanceForecastCost: the forecast of a running 1,000-task fan-out
// whose workflow ran 25 times adds two statements to the instance's GET:
// the history of its last runs (forecast.RunsFor: 4 of 1,001 tasks, all
// their succeeded rows) and a few columns of its own tasks; the next GETs
// within a minute only the second; without forecast=true the GET reads
// nothing more. The added time is logged.
func TestInstanceForecastCost(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { forecastCost(t, options{}) })
	t.Run("mariadb", func(t *testing.T) { forecastCost(t, options{mariadb: true}) })
}

func forecastCost(t *testing.T, o options) {
	b := setup(t, o)
	ctx := context.Background()
	const n, past = 1000, 25
	b.mustProject("p")
	var spec strings.Builder
	names := make([]string, n)
	spec.WriteString("name: fan\ntasks:\n")
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
		fmt.Fprintf(&spec, "  - {name: %s, command: \"true\"}\n", names[i])
	}
	fmt.Fprintf(&spec, "  - {name: join, command: \"true\", depends_on: [%s]}\n", strings.Join(names, ", "))
	b.putSpec("p", "fan", "application/yaml", spec.String()).want(t, http.StatusCreated)
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	for r := range past {
		inst, err := b.store.InstanceCreateRun(ctx, store.RunRequest{Project: "p", Workflow: "fan"})
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]*model.TaskInstance, 0, n+1)
		for i, name := range append(slices.Clone(names), "join") {
			sub, disp, st := base, base.Add(time.Second), base.Add(2*time.Second)
			end := st.Add(time.Duration(10+i%7+r%3) * time.Second)
			rows = append(rows, &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: name, Type: "shell", State: model.TaskSucceeded,
				Attempt: 1, WorkerGroup: "default", SubmitTime: &sub, DispatchTime: &disp, StartTime: &st, EndTime: &end})
		}
		if err := b.store.TaskInsert(ctx, rows); err != nil {
			t.Fatal(err)
		}
		if err := b.store.InstanceFinish(ctx, inst.ID, model.WorkflowSucceeded, base, ""); err != nil {
			t.Fatal(err)
		}
	}
	var inst Instance
	b.send("POST", "/api/v1/projects/p/workflows/fan/runs", "").want(t, http.StatusCreated).json(t, &inst)
	if _, err := b.store.InstanceClaimCommands(ctx, "master-1:5678", 1, 10); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	started := now.Add(-5 * time.Second)
	rows := make([]*model.TaskInstance, n)
	for i := range rows {
		rows[i] = &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: names[i], Type: "shell", State: model.TaskSubmitted,
			Attempt: 1, WorkerGroup: "default", SubmitTime: &now}
		switch {
		case i < n/2:
			rows[i].State, rows[i].StartTime, rows[i].EndTime = model.TaskSucceeded, &started, &now
		case i < n/2+8:
			rows[i].State, rows[i].StartTime = model.TaskRunning, &started
		}
	}
	if err := b.store.TaskInsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	h := NewHandler(Deps{Store: b.store, Log: zap.NewNop()})
	path := fmt.Sprintf("/api/v1/instances/%d?tasks_limit=50", inst.ID)
	measure := func(p string) (InstanceDetail, int64, int64, time.Duration) {
		var times []time.Duration
		var d InstanceDetail
		var stmts, nrows int64
		for range 7 {
			t0 := time.Now()
			d, stmts, nrows = pageReads(t, b, h, p)
			times = append(times, time.Since(t0))
		}
		slices.Sort(times)
		return d, stmts, nrows, times[len(times)/2]
	}
	plain, s0, r0, t0 := measure(path)
	if plain.Forecast != nil {
		t.Fatalf("a GET without forecast=true has one: %+v", plain.Forecast)
	}
	// the first forecast of the instance reads its history; the next ones
	// (a page polling it) find it cached for a minute
	t0c := time.Now()
	_, sc, rc := pageReads(t, b, h, path+"&forecast=true")
	tc := time.Since(t0c)
	d, s1, r1, t1 := measure(path + "&forecast=true")
	f := d.Forecast
	if f == nil {
		t.Fatal("no forecast")
	}
	runs := forecast.RunsFor(n + 1)
	// its own rows (5,000 at most: forecast.HistoryRows) and the
	// instance's (the base GET's rows vary by a few with the clock)
	if want := int64(n + runs*(n+1)); sc-s0 != 2 || rc-r0 > want || rc-r0 < want-10 {
		t.Fatalf("the first forecast added %d statements and %d rows, want 2 and %d", sc-s0, rc-r0, want)
	}
	if s1-s0 != 1 || r1-r0 > int64(n) || r1-r0 < int64(n-10) {
		t.Fatalf("a cached forecast added %d statements and %d rows, want 1 and %d", s1-s0, r1-r0, n)
	}
	// the remaining fan-out, then join
	if len(f.NoHistory) != 0 || len(f.CriticalPath) != 2 || f.CriticalPath[1] != "join" {
		t.Fatalf("forecast %+v", f)
	}
	// the spans: every remaining task (the running, the queued, join), join last
	if want := n - n/2 + 1; f.TasksTotal != want || len(f.Tasks) != want || f.Tasks[len(f.Tasks)-1].Name != "join" ||
		!f.Tasks[0].Running || f.Tasks[len(f.Tasks)-1].End.Time != f.End.Time {
		t.Fatalf("forecast spans: %d of %d, first %+v, last %+v; want %d ending with join at the end", len(f.Tasks), f.TasksTotal,
			f.Tasks[0], f.Tasks[len(f.Tasks)-1], want)
	}
	t.Logf("GET of a running %d-task instance (page of 50): %d statements, %d rows, %v; first with forecast=true: %d statements, %d rows, %v (+%v, history of %d runs); next ones: %d statements, %d rows, %v (+%v)",
		n+1, s0, r0, t0, sc, rc, tc, tc-t0, runs, s1, r1, t1, t1-t0)
}
