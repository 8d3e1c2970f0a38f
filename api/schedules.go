package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/beluga-scheduler/beluga/common/calendar"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Limits of the schedule and backfill tables' columns
// (sql/*/0005_schedule.sql, 0006_backfill.sql), so a long value is a 400
// here, not a database error.
const (
	maxCronLen     = 255
	maxTimezoneLen = 64
	maxParamsBytes = 65535 // params_json is a TEXT column
)

const cronForms = "use 5 fields (minute hour day-of-month month day-of-week), 6 with leading seconds, " +
	"or a descriptor such as @daily, @hourly or @every 1h"

func schedulePath(project, workflow string) string {
	return "/api/v1/projects/" + project + "/workflows/" + workflow + "/schedule"
}

func (h *handlers) putSchedule(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	var req ScheduleRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	by, err := requestedBy(r, req.By)
	if err != nil {
		return err
	}
	sc, cal, err := h.scheduleOf(r.Context(), project, name, by, req, false)
	if err != nil {
		return err
	}
	commit, path, err := h.gitScheduleEdit(r.Context(), project, name, &req, r.URL.Query().Get("message"))
	if err != nil {
		return err
	}
	out, created, err := h.Store.SchedulePut(r.Context(), sc, req.Version)
	if err != nil {
		return storeError(err)
	}
	if path != "" {
		if err := h.Store.GitFileOriginSet(r.Context(), project, store.GitKindSchedule, name, path); err != nil {
			return err
		}
	}
	if h.Notify != nil {
		h.Notify()
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", schedulePath(out.Project, out.Workflow))
	}
	res := fromScheduleOn(out, cal)
	res.GitCommit = commit
	writeJSON(w, status, res)
	return nil
}

// scheduleOf checks req, the schedule of workflow name in project, and
// turns it into the schedule to store as by, its next fire planned.
// inCommit says the workflow is applied by the same Git sync, its spec
// checked there (the code gate is not asked of a stored one).
func (h *handlers) scheduleOf(ctx context.Context, project, name, by string, req ScheduleRequest, inCommit bool) (model.Schedule, *schedule.Calendar, error) {
	sc, c, err := checkSchedule(req)
	if err != nil {
		return sc, nil, err
	}
	if sc.PinVersion, err = h.pinVersion(ctx, project, name, req); err != nil {
		return sc, nil, err
	}
	if sc.PinVersion, err = h.schedulePin(ctx, project, name, sc.PinVersion); err != nil {
		return sc, nil, err
	}
	var cal *schedule.Calendar
	if sc.Calendar != "" {
		// The store checks it again in the write, against a delete.
		if cal, err = h.businessCalendar(ctx, project, sc.Calendar); err != nil {
			return sc, nil, err
		}
		c = c.WithCalendar(cal, sc.OnHoliday)
	}
	if sc.Enabled && (!inCommit || sc.PinVersion > 0) {
		if err := h.codeGateStoredCtx(ctx, project, name, sc.PinVersion); err != nil {
			return sc, nil, err
		}
	}
	if bad, err := h.unknownAlertChannels(ctx, sc.Alerts); err != nil || len(bad) > 0 {
		if err != nil {
			return sc, nil, err
		}
		return sc, nil, badRequest("%s", strings.Join(bad, "; "))
	}
	sc.UpdatedBy = by
	sc.Project, sc.Workflow = project, name
	if sc.Enabled {
		from := time.Now()
		// A replaced schedule must not plan a time it already fired (a
		// master whose clock runs ahead of ours may have fired "now"): the
		// run exists and the fire would be refused over and over.
		old, err := h.Store.ScheduleGet(ctx, project, name)
		switch {
		case err == nil && old.LastFireTime != nil && !old.LastFireTime.Before(from):
			from = old.LastFireTime.Add(time.Nanosecond)
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return sc, nil, err
		}
		if t := c.First(from, schedule.Window{Start: sc.StartTime, End: sc.EndTime}); !t.IsZero() {
			sc.NextFireTime = &t
		}
		if err == nil && !old.Enabled {
			sc.PausedFires = pausedFires(c, old, sc.NextFireTime, from)
		}
	}
	return sc, cal, nil
}

// pausedFires are the fire times of c due while old was disabled: from its
// last edit (the pause, or an edit while paused) to the resume (now, or
// the new next fire time if earlier), the first schedule.MaxMissed.
func pausedFires(c *schedule.Cron, old model.Schedule, next *time.Time, now time.Time) []time.Time {
	end := now
	if next != nil && next.Before(end) {
		end = next.Add(-time.Nanosecond)
	}
	times, _ := c.Between(old.UpdatedAt, end, schedule.MaxMissed)
	return times
}

// businessCalendar is the calendar a schedule of project naming name
// fires by; one that does not exist is a 400 naming it.
func (h *handlers) businessCalendar(ctx context.Context, project, name string) (*schedule.Calendar, error) {
	c, err := h.Store.CalendarFor(ctx, project, name)
	if store.IsNotFound(err) {
		return nil, badRequest("calendar %q does not exist: create it in project %q (PUT %s) or as a shared one (PUT %s)",
			name, project, calendarPath(project, name), calendarPath("", name))
	}
	if err != nil {
		return nil, err
	}
	return calendar.Business(c), nil
}

// scheduleOut is the answer for sc, its upcoming fires on its calendar.
// A calendar that cannot be read lists the fires without it (the schedule
// is still shown).
func (h *handlers) scheduleOut(ctx context.Context, sc model.Schedule, cache map[string]*schedule.Calendar) Schedule {
	if sc.Calendar == "" {
		return fromSchedule(sc)
	}
	key := sc.Project + "/" + sc.Calendar
	cal, ok := cache[key]
	if !ok {
		if c, err := h.Store.CalendarFor(ctx, sc.Project, sc.Calendar); err == nil {
			cal = calendar.Business(c)
		}
		if cache != nil {
			cache[key] = cal
		}
	}
	return fromScheduleOn(sc, cal)
}

// checkSchedule turns a request into the schedule to store (without its
// project, workflow and who), with its parsed cron. Every problem is named
// in one 400.
func checkSchedule(req ScheduleRequest) (model.Schedule, *schedule.Cron, error) {
	sc := model.Schedule{Cron: strings.TrimSpace(req.Cron), Timezone: req.Timezone, Catchup: req.Catchup,
		WorkerGroup: req.WorkerGroup, Params: req.Params, SecretParams: req.SecretParams, Enabled: req.Enabled == nil || *req.Enabled}
	c, bad := checkCron(sc.Cron, req.Timezone)

	var err error
	if sc.StartTime, err = optionalTime("start_time", req.StartTime); err != nil {
		bad = append(bad, err.Error())
	}
	if sc.EndTime, err = optionalTime("end_time", req.EndTime); err != nil {
		bad = append(bad, err.Error())
	}
	if sc.StartTime != nil && sc.EndTime != nil && !sc.EndTime.After(*sc.StartTime) {
		bad = append(bad, fmt.Sprintf("end_time %s must be after start_time %s", req.EndTime, req.StartTime))
	}

	if sc.Catchup == "" {
		sc.Catchup = schedule.CatchupLatest
	} else if !schedule.ValidCatchup(sc.Catchup) {
		bad = append(bad, fmt.Sprintf("catchup %q is not valid: use latest (the default), all or none", req.Catchup))
	}
	switch sc.Overlap = model.Overlap(req.Overlap); {
	case sc.Overlap == "":
		sc.Overlap = model.OverlapAllow
	case !sc.Overlap.Valid():
		bad = append(bad, fmt.Sprintf("overlap %q is not valid: use allow (the default), skip, wait or replace", req.Overlap))
	}
	bad = append(bad, checkRunOverrides(req.Priority, req.WorkerGroup, req.Params, &sc.Priority)...)
	bad = append(bad, checkSecretParams("secret_params", req.SecretParams, req.Params)...)
	bad = append(bad, spec.CheckAlerts(req.Alerts, req.Deadline)...)
	sc.Alerts, sc.Deadline = req.Alerts, req.Deadline
	sc.Calendar, sc.OnHoliday = req.Calendar, req.OnHoliday
	if sc.Calendar != "" && sc.OnHoliday == "" {
		sc.OnHoliday = schedule.OnHolidaySkip // said, not implied, in what is stored and shown
	}
	bad = append(bad, scheduleCalendar(req.Calendar, req.OnHoliday, c == nil || c.Wall())...)
	if len(bad) > 0 {
		return model.Schedule{}, nil, badRequest("%s", strings.Join(bad, "; "))
	}
	return sc, c, nil
}

// checkCron parses expr in the zone tz and names every problem with either.
func checkCron(expr, tz string) (*schedule.Cron, []string) {
	var bad []string
	// The zone is checked first (the cron is read in it) but reported after the cron.
	var tzProblem string
	switch {
	case len(tz) > maxTimezoneLen:
		tzProblem = fmt.Sprintf("timezone is longer than %d characters", maxTimezoneLen)
	default:
		if _, err := schedule.Location(tz); err != nil {
			tzProblem = err.Error()
		}
	}
	var c *schedule.Cron
	switch {
	case expr == "":
		bad = append(bad, "cron is required: "+cronForms)
	case utf8.RuneCountInString(expr) > maxCronLen:
		bad = append(bad, fmt.Sprintf("cron is longer than %d characters", maxCronLen))
	case tzProblem == "":
		var err error
		if c, err = schedule.Parse(expr, tz); err != nil {
			bad = append(bad, err.Error()) // names the cron
		}
	}
	if tzProblem != "" {
		bad = append(bad, tzProblem)
	}
	return c, bad
}

// checkRunOverrides checks the priority, worker group and params that a
// schedule or backfill sets on its runs over the workflow's, sets
// *priority, and names every problem.
func checkRunOverrides(priority, workerGroup string, ps map[string]string, out **model.Priority) []string {
	var bad []string
	if priority != "" {
		if p, ok := model.ParsePriority(priority); ok {
			*out = &p
		} else {
			bad = append(bad, fmt.Sprintf("priority %q is not valid: use highest, high, medium, low or lowest, or leave it out for the workflow's", priority))
		}
	}
	if workerGroup != "" && !validName(workerGroup) {
		bad = append(bad, fmt.Sprintf("worker_group %q is not valid: %s", workerGroup, nameRule))
	}
	var names []string
	for k := range ps {
		if !validEnvName(k) {
			names = append(names, strconv.Quote(k))
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		bad = append(bad, fmt.Sprintf("params: %s: a param name must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)", strings.Join(names, ", ")))
	} else if err := params.CheckAll(ps); err != nil {
		bad = append(bad, err.Error()) // names the param; a bad $[...] would fail every run
	} else if b, _ := json.Marshal(ps); len(ps) > 0 && len(b) > maxParamsBytes {
		bad = append(bad, fmt.Sprintf("params take %d bytes as JSON; the limit is %d", len(b), maxParamsBytes))
	}
	return bad
}

// optionalTime parses an RFC 3339 field; "" is nil.
func optionalTime(field, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not an RFC 3339 time such as 2026-12-01T00:00:00Z", field, s)
	}
	t = t.UTC()
	return &t, nil
}

func (h *handlers) getSchedule(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	sc, err := h.Store.ScheduleGet(r.Context(), project, name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, h.scheduleOut(r.Context(), sc, nil))
	return nil
}

func (h *handlers) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	if _, err := h.Store.ScheduleGet(r.Context(), project, name); err != nil {
		return storeError(err) // a 404 commits nothing
	}
	if _, _, err := h.gitScheduleEdit(r.Context(), project, name, nil, r.URL.Query().Get("message")); err != nil {
		return err
	}
	if err := h.Store.ScheduleDelete(r.Context(), project, name); err != nil {
		return storeError(err)
	}
	if h.Notify != nil {
		h.Notify() // the master drops it from its plan sooner
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handlers) listSchedules(w http.ResponseWriter, r *http.Request) error {
	project := r.URL.Query().Get("project")
	if project != "" && !validName(project) {
		return badRequest("query parameter project: %q is not a valid name: %s", project, nameRule)
	}
	pg, err := pageQuery(r)
	if err != nil {
		return err
	}
	var scs []model.Schedule
	var more bool
	if pg.paged {
		// By project and workflow name from the cursor's: one page read
		// from the index, however many schedules exist.
		var after store.ScheduleName
		if pg.After != "" {
			var ok bool
			if after.Project, after.Workflow, ok = strings.Cut(pg.After, "/"); !ok {
				return badRequest("query parameter cursor: not a next_cursor of the schedule list; start again without it")
			}
		}
		scs, more, err = h.Store.SchedulePage(r.Context(), project, after, pg.Prefix, pg.Limit)
	} else {
		scs, err = h.Store.ScheduleList(r.Context(), project)
	}
	if err != nil {
		return err
	}
	out := List[Schedule]{Items: make([]Schedule, 0, len(scs))}
	cals := map[string]*schedule.Calendar{}
	if more {
		last := scs[len(scs)-1]
		out.NextCursor = nextCursor(last.Project, last.Workflow)
	}
	for _, sc := range scs {
		if ok, err := h.canView(r.Context(), sc.ProjectID); err != nil {
			return err
		} else if ok {
			out.Items = append(out.Items, h.scheduleOut(r.Context(), sc, cals))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
