package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

func at(s int) *time.Time {
	t := time.Date(2026, 12, 6, 12, 0, s, 0, time.UTC)
	return &t
}

func entry(end bool, inst, ti int64, task string, attempt, rc int) Entry {
	return Entry{End: end, Instance: inst, TaskInstance: ti, Task: task, Attempt: attempt, RC: rc, At: *at(0)}
}

// facts is a clean soak: a two-task chain run once, a retry task that
// failed its first attempt and succeeded its second, and a schedule every
// 2 s with runs at :00 and :04 and :02 skipped.
func facts() Facts {
	return Facts{
		Ledger: []Entry{
			entry(false, 1, 10, "a", 1, 0), entry(true, 1, 10, "a", 1, 0),
			entry(false, 1, 11, "b", 1, 0), entry(true, 1, 11, "b", 1, 0),
			entry(false, 2, 20, "flaky", 1, 0), entry(true, 2, 20, "flaky", 1, 1),
			entry(false, 2, 21, "flaky", 2, 0), entry(true, 2, 21, "flaky", 2, 0),
			entry(false, 3, 30, "t", 1, 0), entry(true, 3, 30, "t", 1, 0),
			entry(false, 4, 40, "t", 1, 0), entry(true, 4, 40, "t", 1, 0),
		},
		Instances: []model.WorkflowInstance{
			{ID: 1, Workflow: "chain", State: model.WorkflowSucceeded},
			{ID: 2, Workflow: "retry", State: model.WorkflowSucceeded},
			{ID: 3, Workflow: "cron", State: model.WorkflowSucceeded, ScheduleID: 7, ScheduleTime: at(0)},
			{ID: 4, Workflow: "cron", State: model.WorkflowSucceeded, ScheduleID: 7, ScheduleTime: at(4)},
		},
		Tasks: map[int64][]model.TaskInstance{
			1: {{ID: 10, Name: "a", Attempt: 1, State: model.TaskSucceeded}, {ID: 11, Name: "b", Attempt: 1, State: model.TaskSucceeded}},
			2: {{ID: 20, Name: "flaky", Attempt: 1, State: model.TaskFailed, Superseded: true}, {ID: 21, Name: "flaky", Attempt: 2, State: model.TaskSucceeded}},
			3: {{ID: 30, Name: "t", Attempt: 1, State: model.TaskSucceeded}},
			4: {{ID: 40, Name: "t", Attempt: 1, State: model.TaskSucceeded}},
		},
		Schedules: []model.Schedule{{ID: 7, Workflow: "cron", Cron: "*/2 * * * * *", LastFireTime: at(4), SkippedFires: 1, Overlap: model.OverlapSkip}},
	}
}

func TestCheckClean(t *testing.T) {
	if v := Check(facts()); len(v) != 0 {
		t.Fatalf("a clean soak breaks %v", v)
	}
}

// Each case breaks one invariant of the clean facts; Check must name it.
func TestCheckFindsEachBreak(t *testing.T) {
	cases := []struct {
		name, invariant, detail string
		breakIt                 func(f *Facts)
	}{
		{"an execution without its row", "attempt-row", "task instance 99", func(f *Facts) {
			f.Ledger = append(f.Ledger, entry(false, 1, 99, "a", 1, 0))
		}},
		{"an execution under another attempt", "attempt-row", "attempt 2", func(f *Facts) {
			f.Ledger = append(f.Ledger, entry(false, 1, 10, "a", 2, 0))
		}},
		{"an attempt run twice", "doubled", "started 2 times", func(f *Facts) {
			f.Ledger = append(f.Ledger, entry(false, 1, 11, "b", 1, 0))
		}},
		{"a success that never ran", "lost", "0 starts", func(f *Facts) {
			f.Ledger = f.Ledger[2:]
		}},
		{"a success that never ended", "lost", "0 successful ends", func(f *Facts) {
			f.Ledger = append(f.Ledger[:1:1], f.Ledger[2:]...)
		}},
		{"an instance left running", "final", "is running", func(f *Facts) {
			f.Instances[0].State = model.WorkflowRunning
		}},
		{"a task left dispatched", "final", "still dispatched", func(f *Facts) {
			f.Tasks[1][1].State = model.TaskDispatched
		}},
		{"retries lost", "outcome", "ended failed", func(f *Facts) {
			f.Instances[1].State = model.WorkflowFailed
			f.Tasks[2] = f.Tasks[2][:1]
			f.Tasks[2][0].Superseded = false
			f.Ledger = f.Ledger[:6]
		}},
		{"a fire lost", "fire-times", "1 fires lost", func(f *Facts) {
			f.Schedules[0].SkippedFires = 0
		}},
		{"a fire time run twice", "fire-times", "has 2 runs", func(f *Facts) {
			f.Instances[3].ScheduleTime = at(0)
			f.Schedules[0].SkippedFires = 2
		}},
		{"a run off the cron", "fire-times", "not a fire time", func(f *Facts) {
			f.Instances[3].ScheduleTime = at(3)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := facts()
			tc.breakIt(&f)
			vs := Check(f)
			for _, v := range vs {
				if v.Invariant == tc.invariant && strings.Contains(v.Detail, tc.detail) {
					return
				}
			}
			t.Fatalf("want a %s violation naming %q, got %v", tc.invariant, tc.detail, vs)
		})
	}
}

// A stopped run is a finding unless its workflow's runs may be stopped
// (overlap replace).
func TestCheckStoppedRuns(t *testing.T) {
	f := facts()
	f.Instances[2].State = model.WorkflowStopped
	if v := Check(f); len(v) != 1 || v[0].Invariant != "outcome" {
		t.Fatalf("a stopped run of a skip schedule: got %v, want one outcome violation", v)
	}
	f.MayStop = map[string]bool{"cron": true}
	if v := Check(f); len(v) != 0 {
		t.Fatalf("a stopped run of a replace schedule: got %v, want none", v)
	}
}

func TestParseLedger(t *testing.T) {
	in := "start 5 50 extract 2 1765022400.250000000\nend 5 50 extract 2 1765022401.5 3\n"
	es, err := ParseLedger(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].End || !es[1].End || es[1].RC != 3 || es[0].Instance != 5 || es[0].TaskInstance != 50 ||
		es[0].Task != "extract" || es[0].Attempt != 2 || es[1].At.Sub(es[0].At) != 1250*time.Millisecond {
		t.Fatalf("parsed %+v", es)
	}
	if _, err := ParseLedger(strings.NewReader("start 5 x extract 2 1.0\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("a bad line: err %v, want one naming line 1", err)
	}
}

// An execution without an end is interrupted only when its attempt was
// failed over (need_fault_tolerance), not when it was stopped or killed.
func TestInterrupted(t *testing.T) {
	f := facts()
	f.Ledger = append(f.Ledger, entry(false, 5, 50, "t", 1, 0), entry(false, 6, 60, "t", 1, 0))
	f.Tasks[5] = []model.TaskInstance{{ID: 50, Name: "t", Attempt: 1, State: model.TaskNeedFaultTolerance, Superseded: true}}
	f.Tasks[6] = []model.TaskInstance{{ID: 60, Name: "t", Attempt: 1, State: model.TaskKilled}}
	got := Interrupted(f)
	if len(got) != 1 || got[0].TaskInstance != 50 {
		t.Fatalf("interrupted %+v, want task instance 50 alone", got)
	}
}
