package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/calendar"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/store"
)

// maxPreviewCount bounds how many fire times one preview lists.
const maxPreviewCount = 50

// SchedulePreviewRequest asks for the next count fire times of cron in
// timezone ("" is UTC) after from (empty: now).
type SchedulePreviewRequest struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
	Count    int    `json:"count"`
	From     *Time  `json:"from"`
	// Calendar and OnHoliday preview the fires on a business calendar:
	// Project's own of that name, else the shared one ("" project: shared).
	Project   string `json:"project,omitempty"`
	Calendar  string `json:"calendar,omitempty"`
	OnHoliday string `json:"on_holiday,omitempty"`
}

// SchedulePreview answers a preview: the times in UTC and the zone they were
// computed in, so a form can show them on the schedule's clock.
type SchedulePreview struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
	Times    []Time `json:"times"`
	// With a calendar: its name and policy, and the cron's own times up to
	// the last one listed that the calendar moved or dropped.
	Calendar  string            `json:"calendar,omitempty"`
	OnHoliday string            `json:"on_holiday,omitempty"`
	Refused   []BackfillRefused `json:"refused,omitempty"`
}

// schedulePreview computes fire times without storing anything, for the
// schedule form's preview as the user types. Every problem with the cron or
// the zone is named in the 400, as a schedule PUT would name it.
func (h *handlers) schedulePreview(w http.ResponseWriter, r *http.Request) error {
	var req SchedulePreviewRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	c, bad := checkCron(req.Cron, req.Timezone)
	switch {
	case req.Count == 0:
		req.Count = upcomingCount
	case req.Count < 0 || req.Count > maxPreviewCount:
		bad = append(bad, fmt.Sprintf("count %d is out of range: give 1 to %d (0 means %d)", req.Count, maxPreviewCount, upcomingCount))
	}
	bad = append(bad, scheduleCalendar(req.Calendar, req.OnHoliday, c == nil || c.Wall())...)
	if req.Project != "" && !validName(req.Project) {
		bad = append(bad, fmt.Sprintf("project %q is not a valid name: %s", req.Project, nameRule))
	}
	if len(bad) > 0 {
		return badRequest("%s", strings.Join(bad, "; "))
	}
	if req.Calendar != "" {
		cal, err := h.previewCalendar(r, req.Project, req.Calendar)
		if err != nil {
			return err
		}
		c = c.WithCalendar(cal, req.OnHoliday)
	}
	from := time.Now()
	if req.From != nil {
		from = req.From.Time
	}
	out := SchedulePreview{Cron: req.Cron, Timezone: req.Timezone, Times: []Time{}}
	for t := c.Next(from); !t.IsZero() && len(out.Times) < req.Count; t = c.Next(t) {
		out.Times = append(out.Times, timeOf(t))
	}
	if req.Calendar != "" {
		out.Calendar, out.OnHoliday = req.Calendar, req.OnHoliday
		if out.OnHoliday == "" {
			out.OnHoliday = schedule.OnHolidaySkip
		}
		if n := len(out.Times); n > 0 {
			// The same decision a backfill of these times would make.
			d := c.Dates(from.Add(time.Nanosecond), out.Times[n-1].Time, maxPreviewCount)
			out.Refused = refusedOut(refusals(d.Refused))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// previewCalendar reads the calendar a preview names: a project's needs
// the caller to view the project (a 404 otherwise, as for the project).
func (h *handlers) previewCalendar(r *http.Request, project, name string) (*schedule.Calendar, error) {
	if project == "" {
		c, err := h.Store.CalendarGet(r.Context(), "", name)
		if store.IsNotFound(err) {
			return nil, badRequest("calendar %q is not a shared calendar; name the project for a project's own", name)
		} else if err != nil {
			return nil, err
		}
		return calendar.Business(c), nil
	}
	p, err := h.Store.ProjectGet(r.Context(), project)
	if err != nil {
		return nil, storeError(err)
	}
	if ok, err := h.canView(r.Context(), p.ID); err != nil {
		return nil, err
	} else if !ok {
		return nil, storeError(fmt.Errorf("project %q: %w", project, store.ErrNotFound))
	}
	return h.businessCalendar(r.Context(), project, name)
}
