package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestMakeStartBackfill: a backfill of a over three days, one at a time,
// with its downstream: each day's new run, then the existing runs of b
// waiting on that day (day 0 and day 1 have one), then c; the runs queue
// behind each other; a day with a finished run is a note, a day with an
// unfinished one or another backfill's time blocks.
func TestMakeStartBackfill(t *testing.T) {
	s := world()
	days := []time.Time{day.Add(-2 * time.Hour), day.AddDate(0, 0, 1).Add(-2 * time.Hour), day.AddDate(0, 0, 2).Add(-2 * time.Hour)}
	var runs []NewRun
	for _, d := range days {
		runs = append(runs, NewRun{Base: d, Loc: time.UTC})
	}
	req := StartRequest{Action: ActionBackfill, WF: wfA, Def: 10, Runs: runs, Parallelism: 1, Downstream: Direct}
	p, err := MakeStart(req, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(p), "-1@0:backfill[extract,load] -2@0:backfill[extract,load] -3@0:backfill[extract,load] 2@1:rerun[wait,report] 5@1:rerun[wait,report]"; got != want {
		t.Fatalf("plan %s, want %s", got, want)
	}
	if !p.Instances[0].New || p.Instances[1].ScheduleTime == nil || !p.Instances[1].ScheduleTime.Equal(days[1]) || p.Instances[3].New {
		t.Fatalf("new runs %+v", p.Instances)
	}
	// One at a time: the second run ends a whole run after the first.
	if e0, e1 := p.Instances[0].Estimate, p.Instances[1].Estimate; e1.P50 != 2*e0.P50 || !strings.Contains(strings.Join(p.Instances[1].Waits, ";"), "run -1 of this plan (1 at a time)") {
		t.Fatalf("estimates %+v %+v waits %v", e0, e1, p.Instances[1].Waits)
	}
	if p.Estimate.P50 < 3*p.Instances[0].Estimate.P50 || p.Blocked() {
		t.Fatalf("whole %+v conflicts %+v", p.Estimate, p.Conflicts)
	}
	if got := ids(mustStart(t, StartRequest{Action: ActionBackfill, WF: wfA, Def: 10, Runs: runs, Downstream: All}, s)); !strings.Contains(got, " 3@2:rerun[wait,report] 4@3:rerun[wait,report]") {
		t.Fatalf("all levels %s", got)
	}

	// Day 0 has a finished run: a note. Day 1 a running one and day 2
	// another backfill's time: both block.
	s.Covering = []Instance{{ID: 70, WF: wfA, State: model.WorkflowSucceeded, Base: days[0]}, {ID: 71, WF: wfA, State: model.WorkflowRunning, Base: days[1]}}
	s.Backfills = map[int64][]time.Time{9: {days[2]}}
	p = mustStart(t, req, s)
	var what []string
	for _, c := range p.Conflicts {
		what = append(what, map[bool]string{true: "block: ", false: "note: "}[c.Blocking]+c.What)
	}
	all := strings.Join(what, "\n")
	for _, want := range []string{"note: p/a at 2026-12-01T00:00:00Z already has run 70 (succeeded)", "block: p/a at 2026-12-02T00:00:00Z has run 71, running",
		"block: backfill 9 of p/a (running) also covers 2026-12-03T00:00:00Z"} {
		if !strings.Contains(all, want) {
			t.Fatalf("conflicts\n%s\nlack %q", all, want)
		}
	}
	if !p.Blocked() {
		t.Fatal("not blocked")
	}
}

// TestMakeStartRerunFrom: a run from load (downstream) runs load alone;
// from extract only, extract; a start node the version lacks is an error.
func TestMakeStartRerunFrom(t *testing.T) {
	s := world()
	now := []NewRun{{Base: day.Add(30 * time.Minute), Loc: time.UTC}}
	p := mustStart(t, StartRequest{Action: ActionRerunFrom, WF: wfA, Def: 10, Runs: now, StartNodes: []string{"load"}, Scope: "downstream", Downstream: Direct}, s)
	if got := ids(p); got != "-1@0:rerun_from[load] 2@1:rerun[wait,report]" {
		t.Fatalf("rerun from load: %s", got)
	}
	if p.Instances[0].Estimate.P50 != 30*time.Second || p.Instances[1].After[0] != -1 {
		t.Fatalf("plan %+v", p.Instances)
	}
	if got := ids(mustStart(t, StartRequest{Action: ActionRerunFrom, WF: wfA, Def: 10, Runs: now, StartNodes: []string{"extract"}, Scope: "only"}, s)); got != "-1@0:rerun_from[extract]" {
		t.Fatalf("only extract: %s", got)
	}
	// Two runs of a unfinished, a bound of 2: the new run overlaps them
	// (a note) and waits for a place.
	s.Running = map[WF]int{wfA: 2}
	chain := s.Defs[10]
	chain.MaxActiveRuns = 2
	s.Defs[10] = chain
	p = mustStart(t, StartRequest{Action: ActionRerunFrom, WF: wfA, Def: 10, Runs: now, StartNodes: []string{"load"}, Scope: "downstream"}, s)
	if len(p.Conflicts) != 1 || p.Conflicts[0].Blocking || p.Conflicts[0].What != "p/a has 2 unfinished run(s): this plan's new runs overlap them and queue past max_active_runs 2" ||
		!strings.Contains(strings.Join(p.Instances[0].Waits, ";"), "max_active_runs 2 of p/a: 2 running, 1 in this plan") {
		t.Fatalf("overlap: %+v waits %v", p.Conflicts, p.Instances[0].Waits)
	}
	if _, err := MakeStart(StartRequest{Action: ActionRerunFrom, WF: wfA, Def: 10, Runs: now, StartNodes: []string{"nope"}, Scope: "downstream"}, s); err == nil {
		t.Fatal("unknown start node planned")
	}
	if _, err := MakeStart(StartRequest{Action: model.ActionRerun, WF: wfA, Def: 10, Runs: now}, s); err == nil {
		t.Fatal("rerun planned as a start")
	}
}

func mustStart(t *testing.T, req StartRequest, s Snapshot) Plan {
	t.Helper()
	p, err := MakeStart(req, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMakeStartSelfDependent: a workflow waiting on its own previous day
// (a -> a): a backfill of two days with every level reaches the existing
// run of the day after, once; its own new runs are never planned twice.
func TestMakeStartSelfDependent(t *testing.T) {
	self := Workflow{Tasks: []Task{{Name: "wait", Deps: []Dep{{WF: wfA, Date: "yesterday"}}}, {Name: "x", Upstream: []string{"wait"}}}}
	s := Snapshot{
		Instances: map[int64]Instance{
			7: {ID: 7, WF: wfA, Def: 1, State: ok, Base: day.AddDate(0, 0, 2), Loc: time.UTC},
			8: {ID: 8, WF: wfA, Def: 1, State: ok, Base: day.AddDate(0, 0, 3), Loc: time.UTC},
		},
		Defs: map[int64]Workflow{1: self},
	}
	runs := []NewRun{{Base: day, Loc: time.UTC}, {Base: day.AddDate(0, 0, 1), Loc: time.UTC}}
	p := mustStart(t, StartRequest{Action: ActionBackfill, WF: wfA, Def: 1, Runs: runs, Downstream: All}, s)
	if got := ids(p); got != "-1@0:backfill[wait,x] -2@0:backfill[wait,x] 7@1:rerun[wait,x] 8@2:rerun[wait,x]" {
		t.Fatalf("plan %s", got)
	}
	if a := p.Instances[2].After; len(a) != 1 || a[0] != -2 {
		t.Fatalf("7 waits on %v", a)
	}
}
