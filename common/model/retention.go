package model

import (
	"fmt"
	"time"
)

// Retention's global defaults, in the setting table (0041 seeds them at 0:
// keep forever). A project's own policy overrides keep_days and keep_runs.
const (
	SettingRetentionKeepDays  = "retention.keep_days"
	SettingRetentionKeepRuns  = "retention.keep_runs"
	SettingRetentionAuditDays = "retention.audit_days"
	// SettingRetentionPurgeEvery is how often the leader master purges
	// every project (hours; 0: only on request); 0050 seeds 24.
	SettingRetentionPurgeEvery = "retention.purge_every_hours"
	// SettingRetentionLastPurge is when the last periodic sweep began
	// (unix seconds), written by the leader.
	SettingRetentionLastPurge = "retention.last_purge"

	// MaxRetentionDays and MaxRetentionRuns bound a policy (a typo of a
	// few more digits is refused rather than taken as "forever").
	MaxRetentionDays = 36500
	MaxRetentionRuns = 1000000
)

// RetentionPolicy is how long finished runs are kept: a run is kept while
// it is within KeepDays of its end OR among the KeepRuns newest runs of its
// workflow; 0 on an axis sets no limit there, and 0 on both keeps
// everything.
type RetentionPolicy struct {
	KeepDays int `json:"keep_days"`
	KeepRuns int `json:"keep_runs"`
}

// Off reports whether the policy keeps everything.
func (p RetentionPolicy) Off() bool { return p.KeepDays == 0 && p.KeepRuns == 0 }

// CheckRetentionValue checks one field of a policy, naming it.
func CheckRetentionValue(field string, v, most int) error {
	if v < 0 || v > most {
		return fmt.Errorf("%s must be from 0 (no limit) to %d, got %d", field, most, v)
	}
	return nil
}

// Check refuses negative or out-of-range fields, naming the first.
func (p RetentionPolicy) Check() error {
	if err := CheckRetentionValue("keep_days", p.KeepDays, MaxRetentionDays); err != nil {
		return err
	}
	return CheckRetentionValue("keep_runs", p.KeepRuns, MaxRetentionRuns)
}

// ProjectRetention is a project's own policy: a nil field takes the global
// default.
type ProjectRetention struct {
	KeepDays  *int      `json:"keep_days"`
	KeepRuns  *int      `json:"keep_runs"`
	UpdatedBy string    `json:"updated_by,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Check refuses negative or out-of-range fields that are set.
func (p ProjectRetention) Check() error {
	if p.KeepDays != nil {
		if err := CheckRetentionValue("keep_days", *p.KeepDays, MaxRetentionDays); err != nil {
			return err
		}
	}
	if p.KeepRuns != nil {
		return CheckRetentionValue("keep_runs", *p.KeepRuns, MaxRetentionRuns)
	}
	return nil
}

// Over is the policy in force: p's fields where set, def's otherwise.
func (p ProjectRetention) Over(def RetentionPolicy) RetentionPolicy {
	out := def
	if p.KeepDays != nil {
		out.KeepDays = *p.KeepDays
	}
	if p.KeepRuns != nil {
		out.KeepRuns = *p.KeepRuns
	}
	return out
}

// RetentionRun is what the retention decision knows of one root run.
type RetentionRun struct {
	State WorkflowState
	// Rank is the run's place among its workflow's root runs, newest
	// (highest id) first, from 1.
	Rank int
	// End is when it ended (its creation when it has no end time).
	End time.Time
}

// Reasons a run is kept (RetentionKeeps).
const (
	KeepPolicyOff  = "policy keeps everything"
	KeepUnfinished = "not finished (running, waiting, paused or stopping)"
	KeepNewest     = "the newest run of its workflow (a dependent task may read it)"
	KeepByRuns     = "among the keep_runs newest runs"
	KeepByDays     = "ended within keep_days"
)

// RetentionKeeps decides whether run r stays under policy p at now, and
// why. Only succeeded, failed and stopped runs may go: a paused run waits
// for a resume, and any other state is unfinished. The newest run of each
// workflow always stays, so a dependent task checking the last run of a
// workflow still finds it.
func RetentionKeeps(p RetentionPolicy, r RetentionRun, now time.Time) (keep bool, why string) {
	switch {
	case p.Off():
		return true, KeepPolicyOff
	case !RetentionPurgeable(r.State):
		return true, KeepUnfinished
	case r.Rank <= 1:
		return true, KeepNewest
	case p.KeepRuns > 0 && r.Rank <= p.KeepRuns:
		return true, KeepByRuns
	case p.KeepDays > 0 && !r.End.Before(now.AddDate(0, 0, -p.KeepDays)):
		return true, KeepByDays
	}
	return false, ""
}

// RetentionPurgeable reports whether a run in state st may be deleted:
// succeeded, failed or stopped (a paused run waits for a resume).
func RetentionPurgeable(st WorkflowState) bool {
	return st == WorkflowSucceeded || st == WorkflowFailed || st == WorkflowStopped
}
