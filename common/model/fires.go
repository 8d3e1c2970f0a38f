package model

import "time"

// FireOutcome is what became of one due fire time of a schedule (its row
// in the ledger of fires).
type FireOutcome string

const (
	FireFired          FireOutcome = "fired"            // its run was written and started
	FireSkippedOverlap FireOutcome = "skipped_overlap"  // not run: overlap skip, or an older time under replace
	FireQueued         FireOutcome = "queued"           // run queued behind unfinished runs (overlap wait)
	FireReplaced       FireOutcome = "replaced"         // run after stopping the unfinished runs (overlap replace)
	FireRefused        FireOutcome = "refused_calendar" // the cron time fell on a day off of the schedule's calendar
	FireMissed         FireOutcome = "missed"           // due while no master fired or the schedule was paused; not run by catch-up
	FireCompensated    FireOutcome = "compensated"      // a missed fire run later (compensate)
)

// Valid says o is one of the outcomes.
func (o FireOutcome) Valid() bool {
	switch o {
	case FireFired, FireSkippedOverlap, FireQueued, FireReplaced, FireRefused, FireMissed, FireCompensated:
		return true
	}
	return false
}

// ScheduleFire is one row of a schedule's ledger of fires: a due time and
// what became of it.
type ScheduleFire struct {
	ScheduleID int64       `json:"schedule_id"`
	DueTime    time.Time   `json:"due_time"`
	Outcome    FireOutcome `json:"outcome"`
	InstanceID *int64      `json:"workflow_instance_id,omitempty"` // the run it made
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
}
