package api

import "github.com/beluga-scheduler/beluga/common/model"

// BackfillRequest is the body of POST .../workflows/{name}/backfill. Times
// are strings so a bad one is a 400 naming its field.
type BackfillRequest struct {
	Start string `json:"start"` // RFC 3339; the range of schedule times, both ends included
	End   string `json:"end"`
	// Cron and Timezone say which times of the range run; no cron takes
	// both from the workflow's schedule.
	Cron        string            `json:"cron,omitempty"`
	Timezone    string            `json:"timezone,omitempty"`    // IANA name; "" is UTC; only with Cron
	Parallelism *int              `json:"parallelism,omitempty"` // runs unfinished at a time, 1..100; nil: 1
	Order       string            `json:"order,omitempty"`       // asc (default, oldest first) or desc
	OnFailure   string            `json:"on_failure,omitempty"`  // continue (default) or stop
	Priority    string            `json:"priority,omitempty"`    // "": the workflow's
	WorkerGroup string            `json:"worker_group,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	// SecretParams names params stored sealed and shown as ***.
	SecretParams []string `json:"secret_params,omitempty"`
	DryRun       bool     `json:"dry_run,omitempty"`
	// By is who is recorded as requested_by; default the X-Beluga-User
	// header, else "api".
	By string `json:"by,omitempty"`
}

// Backfill runs a workflow once per schedule time of a past range. Times
// lists the schedule times in the order they are submitted; the first
// Submitted of them have runs. Lists leave Times out (up to 1000 per
// backfill, and the UI polls the list).
type Backfill struct {
	ID           int64             `json:"id"`
	Project      string            `json:"project"`
	Workflow     string            `json:"workflow"`
	Cron         string            `json:"cron"`
	Timezone     string            `json:"timezone"`
	Start        Time              `json:"start"`
	End          Time              `json:"end"`
	Total        int               `json:"total"`
	Submitted    int               `json:"submitted"`
	Parallelism  int               `json:"parallelism"`
	OnFailure    string            `json:"on_failure"`
	Priority     string            `json:"priority,omitempty"` // omitted: the workflow's
	WorkerGroup  string            `json:"worker_group"`
	Params       map[string]string `json:"params"`
	SecretParams []string          `json:"secret_params,omitempty"`
	DryRun       bool              `json:"dry_run"`
	State        string            `json:"state"`
	Reason       string            `json:"reason"`
	RequestedBy  string            `json:"requested_by"`
	CreatedAt    Time              `json:"created_at"`
	EndAt        *Time             `json:"end_at"`
	Progress     BackfillProgress  `json:"progress"`
	Times        []Time            `json:"times,omitempty"`
	// Calendar and OnHoliday: the schedule's business calendar its times
	// were decided under (omitted: none); Refused (with Times only) the
	// cron's times of the range it did not run as themselves.
	Calendar  string            `json:"calendar,omitempty"`
	OnHoliday string            `json:"on_holiday,omitempty"`
	Refused   []BackfillRefused `json:"refused,omitempty"`
}

// BackfillRefused is a cron time of the range the calendar did not run as
// itself, in the terms of the ledger of fires (outcome refused_calendar):
// moved to MovedTo (next or previous business day, a time of the
// backfill's), or dropped (no MovedTo: skip, merged into its business
// day's own fire, or moved out of the range).
type BackfillRefused struct {
	Time    Time   `json:"time"`
	Outcome string `json:"outcome"`
	MovedTo *Time  `json:"moved_to,omitempty"`
}

// BackfillPreview answers POST .../backfill/preview: what the same body
// would start, stored nowhere.
type BackfillPreview struct {
	Cron      string            `json:"cron"`
	Timezone  string            `json:"timezone"`
	Calendar  string            `json:"calendar,omitempty"`
	OnHoliday string            `json:"on_holiday,omitempty"`
	Total     int               `json:"total"`
	Times     []Time            `json:"times"` // in submission order
	Refused   []BackfillRefused `json:"refused"`
}

func refusedOut(rs []model.BackfillRefusal) []BackfillRefused {
	out := make([]BackfillRefused, len(rs))
	for i, r := range rs {
		out[i] = BackfillRefused{Time: timeOf(r.Time), Outcome: string(model.FireRefused), MovedTo: timePtr(r.MovedTo)}
	}
	return out
}

func previewOf(b model.Backfill) BackfillPreview {
	out := BackfillPreview{Cron: b.Cron, Timezone: b.Timezone, Calendar: b.Calendar, OnHoliday: b.OnHoliday, Total: len(b.Times),
		Times: make([]Time, len(b.Times)), Refused: refusedOut(b.Refused)}
	for i, t := range b.Times {
		out.Times[i] = timeOf(t)
	}
	return out
}

// BackfillProgress counts a backfill's submitted runs by outcome; failed
// includes stopped and paused runs. Total minus submitted are not run yet.
type BackfillProgress struct {
	Unfinished int `json:"unfinished"`
	Succeeded  int `json:"succeeded"`
	Failed     int `json:"failed"`
}

// fromBackfill is b on the wire; withTimes adds its schedule times.
func fromBackfill(b model.Backfill, withTimes bool) Backfill {
	params, secrets := maskedParams(b.Params)
	out := Backfill{SecretParams: secrets, ID: b.ID, Project: b.Project, Workflow: b.Workflow, Cron: b.Cron, Timezone: b.Timezone,
		Start: timeOf(b.Start), End: timeOf(b.End), Total: b.Total, Submitted: b.Submitted,
		Parallelism: b.Parallelism, OnFailure: b.OnFailure, WorkerGroup: b.WorkerGroup, Params: params,
		DryRun: b.DryRun, State: string(b.State), Reason: b.Reason, RequestedBy: b.RequestedBy,
		CreatedAt: timeOf(b.CreatedAt), EndAt: timePtr(b.EndAt),
		Progress: BackfillProgress{Unfinished: b.Unfinished, Succeeded: b.Succeeded, Failed: b.Failed},
		Calendar: b.Calendar, OnHoliday: b.OnHoliday}
	if b.Priority != nil {
		out.Priority = b.Priority.String()
	}
	if withTimes {
		out.Times = make([]Time, len(b.Times))
		for i, t := range b.Times {
			out.Times[i] = timeOf(t)
		}
		if len(b.Refused) > 0 {
			out.Refused = refusedOut(b.Refused)
		}
	}
	return out
}
