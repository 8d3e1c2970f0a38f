package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/store"
)

const (
	// maxBackfillRuns bounds the schedule times of one backfill: its times
	// are stored in its row and each becomes a run.
	maxBackfillRuns        = 1000
	maxBackfillParallelism = 100
	// countCap bounds how far a range over the limit is counted to say how
	// many times it holds (a per-second cron over a year is 31 million).
	countCap = 100_000
)

var backfillStates = []model.BackfillState{model.BackfillRunning, model.BackfillDone, model.BackfillFailed, model.BackfillStopped}

func backfillPath(id int64) string { return "/api/v1/backfills/" + strconv.FormatInt(id, 10) }

func (h *handlers) startBackfill(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	var req BackfillRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	b, err := h.decideBackfill(r, project, name, req)
	if err != nil {
		return err
	}
	if err := h.codeGateStored(r, project, name, 0); err != nil {
		return err
	}
	if b.RequestedBy, err = requestedBy(r, req.By); err != nil {
		return err
	}
	out, err := h.Store.BackfillCreate(r.Context(), b)
	if err != nil {
		return storeError(err)
	}
	if h.Notify != nil {
		h.Notify()
	}
	w.Header().Set("Location", backfillPath(out.ID))
	writeJSON(w, http.StatusCreated, fromBackfill(out, true))
	return nil
}

// previewBackfill answers what startBackfill would run for the same body
// (its times, and the times the schedule's calendar refused), storing
// nothing: the backfill form shows it as the user types.
func (h *handlers) previewBackfill(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	var req BackfillRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	b, err := h.decideBackfill(r, project, name, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, previewOf(b))
	return nil
}

// decideBackfill is the backfill req asks for of workflow project/name,
// its times decided (without who asked). Without a cron the workflow's
// schedule gives it, with its zone and its business calendar.
func (h *handlers) decideBackfill(r *http.Request, project, name string, req BackfillRequest) (model.Backfill, error) {
	sc, err := h.backfillSchedule(r, project, name, req.Cron)
	if err != nil {
		return model.Backfill{}, err
	}
	var cal *schedule.Calendar
	if sc != nil && sc.Calendar != "" {
		if cal, err = h.businessCalendar(r.Context(), project, sc.Calendar); err != nil {
			return model.Backfill{}, err
		}
	}
	b, err := checkBackfill(req, sc, cal)
	if err != nil {
		return model.Backfill{}, err
	}
	b.Project, b.Workflow = project, name
	return b, nil
}

// checkBackfill turns a request into the backfill to store (without its
// project, workflow and who), its times listed in submission order. sc is
// the workflow's schedule when the request has no cron (nil: none), cal
// its business calendar (nil: none): the times are then decided as the
// schedule's fires are (schedule.Dates), and the cron times the calendar
// did not run as themselves are kept as refused. Every problem is named
// in one 400.
func checkBackfill(req BackfillRequest, sc *model.Schedule, cal *schedule.Calendar) (model.Backfill, error) {
	b := model.Backfill{Cron: strings.TrimSpace(req.Cron), Timezone: req.Timezone, Parallelism: 1,
		OnFailure: req.OnFailure, WorkerGroup: req.WorkerGroup, Params: req.Params, SecretParams: req.SecretParams, DryRun: req.DryRun}
	var bad []string

	start, startErr := requiredTime("start", req.Start)
	end, endErr := requiredTime("end", req.End)
	for _, err := range []error{startErr, endErr} {
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	rangeOK := startErr == nil && endErr == nil
	if rangeOK && end.Before(start) {
		bad = append(bad, fmt.Sprintf("end %s is before start %s (the range includes both)", req.End, req.Start))
		rangeOK = false
	}
	b.Start, b.End = start, end

	var c *schedule.Cron
	switch {
	case b.Cron == "" && req.Timezone != "":
		bad = append(bad, fmt.Sprintf("timezone %q needs a cron; without one the schedule's cron and timezone are used", req.Timezone))
	case b.Cron == "" && sc == nil:
		bad = append(bad, "give a cron or set a schedule: the workflow has no schedule to take the cron from")
	case b.Cron == "":
		b.Cron, b.Timezone = sc.Cron, sc.Timezone
		var err error
		if c, err = schedule.Parse(sc.Cron, sc.Timezone); err != nil {
			bad = append(bad, "the schedule's "+err.Error()+"; give a cron")
		} else if cal != nil && c.Wall() {
			c = c.WithCalendar(cal, sc.OnHoliday)
			b.Calendar, b.OnHoliday = sc.Calendar, sc.OnHoliday
			if b.OnHoliday == "" {
				b.OnHoliday = schedule.OnHolidaySkip
			}
		}
	default:
		var problems []string
		c, problems = checkCron(b.Cron, req.Timezone)
		bad = append(bad, problems...)
	}

	if p := req.Parallelism; p != nil {
		if *p < 1 || *p > maxBackfillParallelism {
			bad = append(bad, fmt.Sprintf("parallelism %d is not valid: use 1 (the default, one run at a time) to %d", *p, maxBackfillParallelism))
		}
		b.Parallelism = *p
	}
	if req.Order != "" && req.Order != "asc" && req.Order != "desc" {
		bad = append(bad, fmt.Sprintf("order %q is not valid: use asc (the default, oldest first) or desc (newest first)", req.Order))
	}
	switch req.OnFailure {
	case "":
		b.OnFailure = model.BackfillContinue
	case model.BackfillContinue, model.BackfillStop:
	default:
		bad = append(bad, fmt.Sprintf("on_failure %q is not valid: use continue (the default) or stop (a failed run stops submitting the rest)", req.OnFailure))
	}
	bad = append(bad, checkRunOverrides(req.Priority, req.WorkerGroup, req.Params, &b.Priority)...)
	bad = append(bad, checkSecretParams("secret_params", req.SecretParams, req.Params)...)

	if c != nil && rangeOK {
		// Times still to come are the schedule's to fire, not a backfill's:
		// the range ends now at the latest.
		future := ""
		if now := time.Now(); end.After(now) {
			end, future = now, " (times after now are left to the schedule)"
		}
		d := c.Dates(start, end, maxBackfillRuns)
		b.Times, b.Refused = d.Fire, refusals(d.Refused)
		more := d.More
		what := fmt.Sprintf("cron %q (%s)", b.Cron, zoneName(b.Timezone))
		if b.Calendar != "" {
			what += fmt.Sprintf(" on calendar %q (on_holiday %s)", b.Calendar, b.OnHoliday)
		}
		switch {
		case more:
			bad = append(bad, fmt.Sprintf("%s has %s schedule times from %s to %s: at most %d runs per backfill; narrow the range",
				what, countTimes(c, b.Times[len(b.Times)-1], end), req.Start, req.End, maxBackfillRuns))
		case len(b.Times) == 0 && len(b.Refused) > 0:
			bad = append(bad, fmt.Sprintf("%s has no schedule time from %s to %s%s: the calendar refused all %d of the cron's",
				what, req.Start, req.End, future, len(b.Refused)))
		case len(b.Times) == 0:
			bad = append(bad, fmt.Sprintf("%s has no schedule time from %s to %s%s", what, req.Start, req.End, future))
		}
	}
	if len(bad) > 0 {
		return model.Backfill{}, badRequest("%s", strings.Join(bad, "; "))
	}
	if req.Order == "desc" {
		slices.Reverse(b.Times)
	}
	return b, nil
}

func refusals(rs []schedule.Refusal) []model.BackfillRefusal {
	if len(rs) == 0 {
		return nil
	}
	out := make([]model.BackfillRefusal, len(rs))
	for i, r := range rs {
		out[i].Time = r.Time
		if !r.MovedTo.IsZero() {
			m := r.MovedTo
			out[i].MovedTo = &m
		}
	}
	return out
}

// countTimes says how many schedule times there are up to end, the first
// maxBackfillRuns of which end at last; "more than N" past countCap.
func countTimes(c *schedule.Cron, last, end time.Time) string {
	n := maxBackfillRuns
	for t := c.Next(last); !t.IsZero() && !t.After(end); t = c.Next(t) {
		if n++; n == countCap {
			return fmt.Sprintf("more than %d", countCap)
		}
	}
	return strconv.Itoa(n)
}

// requiredTime parses a required RFC 3339 field.
func requiredTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("%s is required: an RFC 3339 time such as 2026-11-01T00:00:00Z", field)
	}
	t, err := optionalTime(field, s)
	if err != nil {
		return time.Time{}, err
	}
	return *t, nil
}

func zoneName(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

func (h *handlers) listBackfills(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.BackfillFilter{Project: q.Get("project"), Workflow: q.Get("workflow"), State: model.BackfillState(q.Get("state")), NoTimes: true}
	for _, p := range [][2]string{{"project", f.Project}, {"workflow", f.Workflow}} {
		if p[1] != "" && !validName(p[1]) {
			return badRequest("query parameter %s: %q is not a valid name: %s", p[0], p[1], nameRule)
		}
	}
	if f.State != "" && !slices.Contains(backfillStates, f.State) {
		return badRequest("query parameter state: %q is not a backfill state; use running, done, failed or stopped", f.State)
	}
	bs, err := h.Store.BackfillList(r.Context(), f)
	if err != nil {
		return err
	}
	out := List[Backfill]{Items: make([]Backfill, 0, len(bs))}
	for _, b := range bs {
		if ok, err := h.canView(r.Context(), b.ProjectID); err != nil {
			return err
		} else if ok {
			out.Items = append(out.Items, fromBackfill(b, false))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getBackfill(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	b, err := h.Store.BackfillGet(r.Context(), id)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromBackfill(b, true))
	return nil
}

// backfillAction stops a running backfill: no more of its times are
// submitted; the runs already submitted go on.
func (h *handlers) backfillAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req ActionRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	switch req.Action {
	case "stop":
	case "":
		return badRequest("action is required; the action on a backfill is stop")
	default:
		return badRequest("action %s is not valid; the action on a backfill is stop", strconv.Quote(req.Action))
	}
	by, err := requestedBy(r, req.By)
	if err != nil {
		return err
	}
	b, err := h.Store.BackfillStop(r.Context(), id, by)
	if err != nil {
		return storeError(err)
	}
	if h.Notify != nil {
		h.Notify() // the master drops it from its plan sooner
	}
	writeJSON(w, http.StatusOK, fromBackfill(b, true))
	return nil
}

// backfillSchedule is the workflow's schedule when a backfill names no cron
// (its cron and zone then give the times); nil when it names one or the
// workflow has no schedule.
func (h *handlers) backfillSchedule(r *http.Request, project, name, cron string) (*model.Schedule, error) {
	if strings.TrimSpace(cron) != "" {
		return nil, nil
	}
	if _, err := h.Store.WorkflowGet(r.Context(), project, name, 0); err != nil {
		return nil, storeError(err)
	}
	s, err := h.Store.ScheduleGet(r.Context(), project, name)
	switch {
	case err == nil:
		return &s, nil
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	default:
		return nil, err
	}
}
