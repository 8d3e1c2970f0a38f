package model

import (
	"testing"
	"time"
)

func TestRetentionKeeps(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, c := range []struct {
		name string
		p    RetentionPolicy
		r    RetentionRun
		keep bool
		why  string
	}{
		{"off", RetentionPolicy{}, RetentionRun{WorkflowSucceeded, 9, now.Add(-100 * day)}, true, KeepPolicyOff},
		{"running", RetentionPolicy{KeepDays: 1}, RetentionRun{WorkflowRunning, 9, now.Add(-100 * day)}, true, KeepUnfinished},
		{"paused waits for a resume", RetentionPolicy{KeepDays: 1}, RetentionRun{WorkflowPaused, 9, now.Add(-100 * day)}, true, KeepUnfinished},
		{"stopping", RetentionPolicy{KeepRuns: 1}, RetentionRun{WorkflowReadyStop, 9, now.Add(-100 * day)}, true, KeepUnfinished},
		{"newest stays", RetentionPolicy{KeepDays: 1}, RetentionRun{WorkflowFailed, 1, now.Add(-100 * day)}, true, KeepNewest},
		{"within runs", RetentionPolicy{KeepRuns: 3}, RetentionRun{WorkflowFailed, 3, now.Add(-100 * day)}, true, KeepByRuns},
		{"past runs", RetentionPolicy{KeepRuns: 3}, RetentionRun{WorkflowFailed, 4, now}, false, ""},
		{"within days", RetentionPolicy{KeepDays: 2}, RetentionRun{WorkflowStopped, 9, now.Add(-2 * day)}, true, KeepByDays},
		{"past days", RetentionPolicy{KeepDays: 2}, RetentionRun{WorkflowSucceeded, 9, now.Add(-2*day - time.Second)}, false, ""},
		{"either keeps: days", RetentionPolicy{KeepDays: 2, KeepRuns: 3}, RetentionRun{WorkflowSucceeded, 9, now.Add(-day)}, true, KeepByDays},
		{"either keeps: runs", RetentionPolicy{KeepDays: 2, KeepRuns: 3}, RetentionRun{WorkflowSucceeded, 2, now.Add(-9 * day)}, true, KeepByRuns},
		{"both past", RetentionPolicy{KeepDays: 2, KeepRuns: 3}, RetentionRun{WorkflowSucceeded, 4, now.Add(-9 * day)}, false, ""},
	} {
		keep, why := RetentionKeeps(c.p, c.r, now)
		if keep != c.keep || why != c.why {
			t.Errorf("%s: keep %v (%q), want %v (%q)", c.name, keep, why, c.keep, c.why)
		}
	}
}

func TestRetentionPolicyCheckAndOver(t *testing.T) {
	neg, big, five := -1, MaxRetentionRuns+1, 5
	for _, c := range []struct {
		p    ProjectRetention
		want string
	}{
		{ProjectRetention{KeepDays: &neg}, "keep_days must be from 0 (no limit) to 36500, got -1"},
		{ProjectRetention{KeepRuns: &big}, "keep_runs must be from 0 (no limit) to 1000000, got 1000001"},
		{ProjectRetention{KeepDays: &five}, ""},
		{ProjectRetention{}, ""},
	} {
		err := c.p.Check()
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
	got := ProjectRetention{KeepDays: &five}.Over(RetentionPolicy{KeepDays: 30, KeepRuns: 10})
	if got != (RetentionPolicy{KeepDays: 5, KeepRuns: 10}) {
		t.Errorf("over: %+v", got)
	}
}
