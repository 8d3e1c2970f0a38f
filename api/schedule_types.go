package api

import (
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
)

// upcomingCount is how many fire times a schedule answer lists.
const upcomingCount = 5

// ScheduleRequest is the body of PUT .../workflows/{name}/schedule; it
// replaces the whole schedule. Times are strings so a bad one is a 400
// naming its field.
type ScheduleRequest struct {
	Cron        string            `json:"cron"`
	Timezone    string            `json:"timezone,omitempty"`   // IANA name; "" is UTC
	StartTime   string            `json:"start_time,omitempty"` // RFC 3339; "" is open
	EndTime     string            `json:"end_time,omitempty"`
	Catchup     string            `json:"catchup,omitempty"`  // latest (default), all or none
	Priority    string            `json:"priority,omitempty"` // "": the workflow's
	WorkerGroup string            `json:"worker_group,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	// SecretParams names params stored sealed and shown as ***. A param
	// sent back as *** keeps the secret it had.
	SecretParams []string `json:"secret_params,omitempty"`
	Enabled      *bool    `json:"enabled,omitempty"` // nil: true
	// Overlap is what a fire does while a run of the schedule is
	// unfinished: allow (default), skip, wait or replace.
	Overlap string `json:"overlap,omitempty"`
	// By is who is recorded as updated_by; default the X-Beluga-User
	// header, else "api".
	By string `json:"by,omitempty"`
	// Version is the schedule's version as read (0: none existed): when
	// set, an edit made since is refused with 409 instead of overwritten.
	Version *int64 `json:"version,omitempty"`
	// Alerts and Deadline override the workflow's for the schedule's runs.
	Alerts   *model.Alerts `json:"alerts,omitempty"`
	Deadline string        `json:"deadline,omitempty"`
	// Calendar names a business calendar (the project's own, else a
	// shared one) whose days off the fires honour; OnHoliday is what a fire
	// due on one does: skip (default), next_business_day or
	// previous_business_day.
	Calendar  string `json:"calendar,omitempty"`
	OnHoliday string `json:"on_holiday,omitempty"`
	// PinVersion pins the workflow version the fires run; PinCommit (a
	// Git project's) pins the version a sync made from that commit. Neither:
	// each fire runs the latest.
	PinVersion int    `json:"pin_version,omitempty"`
	PinCommit  string `json:"pin_commit,omitempty"`
}

// Schedule is a workflow's cron schedule. NextFireTime is the next time the
// master will fire (null when disabled or nothing is left in the window);
// Upcoming lists the fire times from NextFireTime on, the ones that will
// fire (the first may be past while the master catches up).
type Schedule struct {
	ID           int64             `json:"id"`
	Project      string            `json:"project"`
	Workflow     string            `json:"workflow"`
	Cron         string            `json:"cron"`
	Timezone     string            `json:"timezone"`
	StartTime    *Time             `json:"start_time"`
	EndTime      *Time             `json:"end_time"`
	Catchup      string            `json:"catchup"`
	Priority     string            `json:"priority,omitempty"` // omitted: the workflow's
	WorkerGroup  string            `json:"worker_group"`
	Params       map[string]string `json:"params"`
	SecretParams []string          `json:"secret_params,omitempty"`
	Enabled      bool              `json:"enabled"`
	NextFireTime *Time             `json:"next_fire_time"`
	LastFireTime *Time             `json:"last_fire_time"`
	Note         string            `json:"note"`
	Overlap      string            `json:"overlap"`
	SkippedFires int64             `json:"skipped_fires"` // fires not run under overlap skip or replace
	// LastSkippedTime is the newest schedule time skipped under overlap.
	LastSkippedTime *Time         `json:"last_skipped_time"`
	Revision        int64         `json:"revision"`
	Version         int64         `json:"version"`
	UpdatedBy       string        `json:"updated_by"`
	CreatedAt       Time          `json:"created_at"`
	UpdatedAt       Time          `json:"updated_at"`
	Upcoming        []Time        `json:"upcoming"`
	Alerts          *model.Alerts `json:"alerts,omitempty"`
	Deadline        string        `json:"deadline,omitempty"`
	Calendar        string        `json:"calendar,omitempty"`
	OnHoliday       string        `json:"on_holiday,omitempty"`
	PinVersion      int           `json:"pin_version,omitempty"` // the version its fires run; absent: the latest
	// GitCommit is the commit a project in write_back mode made of the save.
	GitCommit string `json:"git_commit,omitempty"`
}

func fromSchedule(s model.Schedule) Schedule { return fromScheduleOn(s, nil) }

// fromScheduleOn is fromSchedule whose upcoming fires honour cal, the
// schedule's business calendar (nil: it names none, or it is gone).
func fromScheduleOn(s model.Schedule, cal *schedule.Calendar) Schedule {
	params, secrets := maskedParams(s.Params)
	out := Schedule{SecretParams: secrets, ID: s.ID, Project: s.Project, Workflow: s.Workflow, Cron: s.Cron, Timezone: s.Timezone,
		StartTime: timePtr(s.StartTime), EndTime: timePtr(s.EndTime), Catchup: s.Catchup,
		WorkerGroup: s.WorkerGroup, Params: params, Enabled: s.Enabled, NextFireTime: timePtr(s.NextFireTime),
		LastFireTime: timePtr(s.LastFireTime), Note: s.Note, Overlap: string(s.Overlap), SkippedFires: s.SkippedFires,
		LastSkippedTime: timePtr(s.LastSkippedTime), Revision: s.Revision, Version: s.Version, UpdatedBy: s.UpdatedBy,
		CreatedAt: timeOf(s.CreatedAt), UpdatedAt: timeOf(s.UpdatedAt), Upcoming: []Time{}, Alerts: s.Alerts, Deadline: s.Deadline,
		Calendar: s.Calendar, OnHoliday: s.OnHoliday, PinVersion: s.PinVersion}
	if s.Priority != nil {
		out.Priority = s.Priority.String()
	}
	if !s.Enabled || s.NextFireTime == nil {
		return out // the master fires nothing
	}
	// Stored cron was checked when written; one that no longer parses (a
	// zone gone from the tz database) cannot fire: it lists nothing.
	c, err := schedule.Parse(s.Cron, s.Timezone)
	if err != nil {
		return out
	}
	if cal != nil {
		c = c.WithCalendar(cal, s.OnHoliday)
	}
	for t := *s.NextFireTime; !t.IsZero() && len(out.Upcoming) < upcomingCount; t = c.Next(t) {
		if s.EndTime != nil && t.After(*s.EndTime) {
			break
		}
		out.Upcoming = append(out.Upcoming, timeOf(t))
	}
	return out
}

// Request is the body that PUTs s back as it is, for read-modify-write.
func (s Schedule) Request() ScheduleRequest {
	enabled, version := s.Enabled, s.Version
	req := ScheduleRequest{Cron: s.Cron, Timezone: s.Timezone, Catchup: s.Catchup, Priority: s.Priority,
		WorkerGroup: s.WorkerGroup, Params: s.Params, SecretParams: s.SecretParams, Enabled: &enabled, Version: &version, Overlap: s.Overlap,
		Alerts: s.Alerts, Deadline: s.Deadline, Calendar: s.Calendar, OnHoliday: s.OnHoliday, PinVersion: s.PinVersion}
	if s.StartTime != nil {
		req.StartTime = s.StartTime.UTC().Format(time.RFC3339Nano)
	}
	if s.EndTime != nil {
		req.EndTime = s.EndTime.UTC().Format(time.RFC3339Nano)
	}
	return req
}
