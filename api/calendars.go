package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/calendar"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Business calendars: shared ones at /api/v1/calendars (admins write them,
// every user reads them) and a project's at
// /api/v1/projects/{project}/calendars (its editors write them, its viewers
// read them). A schedule's calendar is its project's of that name, else
// the shared one.

func calendarPath(project, name string) string {
	if project == "" {
		return "/api/v1/calendars/" + name
	}
	return "/api/v1/projects/" + project + "/calendars/" + name
}

// calendarScope reads {project} (absent on the shared routes) and {name}.
func calendarScope(r *http.Request, named bool) (project, name string, err error) {
	if r.PathValue("project") != "" {
		if project, err = pathName(r, "project"); err != nil {
			return "", "", err
		}
	}
	if named {
		name, err = pathName(r, "name")
	}
	return project, name, err
}

// Import formats of a calendar body besides JSON.
const (
	formatICS = "ics"
	formatCSV = "csv"
)

// putCalendar creates or replaces a calendar. A JSON body is the whole
// calendar; an ICS (text/calendar) or CSV (text/csv) body, or any body with
// ?format=ics|csv, is a file of dates imported as the holidays (or, with
// ?days=workdays, as the extra working days), keeping the rest of the
// calendar as it is (a new one: weekend ?weekend=, else sat,sun).
func (h *handlers) putCalendar(w http.ResponseWriter, r *http.Request) error {
	project, name, err := calendarScope(r, true)
	if err != nil {
		return err
	}
	by, err := requestedBy(r, "")
	if err != nil {
		return err
	}
	c, ifVersion, err := h.calendarBody(r, project, name)
	if err != nil {
		return err
	}
	c.Project, c.Name, c.UpdatedBy = project, name, by
	if bad := calendar.Check(&c); len(bad) > 0 {
		return badRequest("calendar %q: %s", name, strings.Join(bad, "; "))
	}
	out, created, err := h.Store.CalendarPut(r.Context(), c, ifVersion)
	if err != nil {
		return storeError(err)
	}
	if !created {
		if err := h.replan(r.Context(), project, name); err != nil {
			// The calendar is stored; the master still honours it for the
			// fires it plans (a day that became a business day may be passed
			// over until the schedule is saved again).
			h.log.Warn("calendar stored; its schedules' next fire times not moved", zap.String("calendar", name), zap.Error(err))
		}
	}
	if h.Notify != nil {
		h.Notify() // schedules on it fire by the new days
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", calendarPath(project, name))
	}
	writeJSON(w, status, fromCalendar(out))
	return nil
}

// calendarBody reads the calendar a PUT asks for, from JSON or a file.
func (h *handlers) calendarBody(r *http.Request, project, name string) (model.Calendar, *int64, error) {
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" {
		mt, err := bodyType(r, "application/json, text/calendar or text/csv")
		if err != nil {
			return model.Calendar{}, nil, err
		}
		switch mt {
		case "application/json":
		case "text/calendar":
			format = formatICS
		case "text/csv":
			format = formatCSV
		default:
			return model.Calendar{}, nil, unsupportedMedia("Content-Type %s is not supported; send a calendar as application/json, an ICS file as text/calendar or a CSV file as text/csv (or say ?format=ics|csv)", mt)
		}
	}
	if format == "" {
		if q.Get("days") != "" || q.Get("weekend") != "" {
			return model.Calendar{}, nil, badRequest("query parameters days and weekend are for an imported file; a JSON body says the whole calendar")
		}
		var req CalendarRequest
		if err := decodeJSON(r, &req, false); err != nil {
			return model.Calendar{}, nil, err
		}
		c := model.Calendar{Description: req.Description, Holidays: req.Holidays, Workdays: req.Workdays, Weekend: calendar.DefaultWeekend}
		if req.Weekend != nil {
			ws, err := calendar.ParseWeekend(req.Weekend)
			if err != nil {
				return model.Calendar{}, nil, badRequest("calendar %q: %v", name, err)
			}
			c.Weekend = ws
		}
		return c, req.Version, nil
	}
	return h.importCalendar(r, project, name, format)
}

func (h *handlers) importCalendar(r *http.Request, project, name, format string) (model.Calendar, *int64, error) {
	q := r.URL.Query()
	if mt, err := bodyType(r, "text/calendar or text/csv"); err != nil {
		return model.Calendar{}, nil, err
	} else if mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data" || mt == "text/plain" {
		// A browser sends these from any site without asking.
		return model.Calendar{}, nil, unsupportedMedia("Content-Type %s is not accepted for an import; send text/calendar, text/csv or application/octet-stream", mt)
	}
	days := q.Get("days")
	if days != "" && days != "holidays" && days != "workdays" {
		return model.Calendar{}, nil, badRequest("query parameter days %q: use holidays (the default) or workdays", days)
	}
	b, err := readBody(r)
	if err != nil {
		return model.Calendar{}, nil, err
	}
	var got []model.CalendarDay
	switch format {
	case formatICS:
		got, err = calendar.ParseICS(bytes.NewReader(b))
	case formatCSV:
		got, err = calendar.ParseCSV(bytes.NewReader(b))
	default:
		return model.Calendar{}, nil, badRequest("query parameter format %q: use ics or csv", format)
	}
	if err != nil {
		return model.Calendar{}, nil, badRequest("calendar %q: %v", name, err)
	}
	c, err := h.Store.CalendarGet(r.Context(), project, name)
	switch {
	case errors.Is(err, store.ErrNotFound): // a new one (CalendarPut refuses a missing project)
		c = model.Calendar{Weekend: calendar.DefaultWeekend}
	case err != nil:
		return model.Calendar{}, nil, err
	}
	if s := q.Get("weekend"); s != "" || q.Has("weekend") {
		var names []string
		if s != "" {
			names = strings.Split(s, ",")
		}
		ws, err := calendar.ParseWeekend(names)
		if err != nil {
			return model.Calendar{}, nil, badRequest("calendar %q: %v", name, err)
		}
		c.Weekend = ws
	}
	if days == "workdays" {
		c.Workdays = got
	} else {
		c.Holidays = got
	}
	v := c.Version // replace what was read, not an edit made meanwhile
	return c, &v, nil
}

func (h *handlers) getCalendar(w http.ResponseWriter, r *http.Request) error {
	project, name, err := calendarScope(r, true)
	if err != nil {
		return err
	}
	c, err := h.Store.CalendarGet(r.Context(), project, name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromCalendar(c))
	return nil
}

func (h *handlers) listCalendars(w http.ResponseWriter, r *http.Request) error {
	project, _, err := calendarScope(r, false)
	if err != nil {
		return err
	}
	cs, err := h.Store.CalendarList(r.Context(), project)
	if err != nil {
		return storeError(err)
	}
	out := List[Calendar]{Items: make([]Calendar, len(cs))}
	for i, c := range cs {
		out.Items[i] = fromCalendar(c)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// replan moves the next fire time of each enabled schedule on the edited
// calendar to its first fire under the new days: a day that became a
// business day may now come before the stored time. Never to a time at or
// before the schedule's last fire, which would run twice.
func (h *handlers) replan(ctx context.Context, project, name string) error {
	users, err := h.Store.CalendarUsers(ctx, project, name)
	if err != nil {
		return err
	}
	for _, u := range users {
		p, wf, _ := strings.Cut(u, "/")
		for range 3 { // a fire or an edit in between: read again
			sc, err := h.Store.ScheduleGet(ctx, p, wf)
			if store.IsNotFound(err) || (err == nil && (!sc.Enabled || sc.NextFireTime == nil)) {
				break
			} else if err != nil {
				return err
			}
			c, err := schedule.Parse(sc.Cron, sc.Timezone)
			if err != nil || !c.Wall() {
				break // it cannot fire, or takes no calendar; the master says so
			}
			cal, err := h.Store.CalendarFor(ctx, p, sc.Calendar)
			if err != nil {
				return err
			}
			from := time.Now()
			if sc.LastFireTime != nil && !sc.LastFireTime.Before(from) {
				from = sc.LastFireTime.Add(time.Nanosecond)
			}
			var next *time.Time
			if t := c.WithCalendar(calendar.Business(cal), sc.OnHoliday).First(from, schedule.Window{Start: sc.StartTime, End: sc.EndTime}); !t.IsZero() {
				next = &t
			}
			if sc.NextFireTime.Before(from) {
				break // due or being caught up: the master plans it from the stored time
			}
			if next != nil && next.Equal(*sc.NextFireTime) {
				break
			}
			if err = h.Store.ScheduleSetNext(ctx, sc, next); !errors.Is(err, store.ErrScheduleMoved) {
				if err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// deleteCalendar removes a calendar no schedule uses; one in use is a 409
// naming the schedules.
func (h *handlers) deleteCalendar(w http.ResponseWriter, r *http.Request) error {
	project, name, err := calendarScope(r, true)
	if err != nil {
		return err
	}
	if err := h.Store.CalendarDelete(r.Context(), project, name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// scheduleCalendar checks a schedule's calendar and on_holiday and names
// every problem; the calendar's existence is checked by the store in the
// schedule's write.
func scheduleCalendar(name, onHoliday string, wall bool) []string {
	var bad []string
	if name != "" && !validName(name) {
		bad = append(bad, fmt.Sprintf("calendar %q is not a valid name: %s", name, nameRule))
	}
	if !schedule.ValidOnHoliday(onHoliday) {
		bad = append(bad, fmt.Sprintf("on_holiday %q is not valid: use skip (the default), next_business_day or previous_business_day", onHoliday))
	} else if onHoliday != "" && name == "" {
		bad = append(bad, "on_holiday needs a calendar")
	}
	if name != "" && !wall {
		bad = append(bad, "a calendar needs a cron with fields; @every counts elapsed time and cannot follow business days")
	}
	return bad
}
