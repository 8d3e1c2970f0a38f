package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// ScheduleFire is one row of a schedule's ledger of fires.
type ScheduleFire struct {
	DueTime time.Time `json:"due_time"`
	// Outcome: fired, skipped_overlap, queued, replaced, refused_calendar,
	// missed or compensated.
	Outcome    string    `json:"outcome"`
	InstanceID *int64    `json:"workflow_instance_id,omitempty"` // the run it made
	UpdatedAt  time.Time `json:"updated_at"`
}

// FireList is a page of a schedule's ledger, by due time.
type FireList struct {
	Items      []ScheduleFire `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// CompensateRequest is the body of POST .../schedules/{id}/fires/compensate:
// the due times of missed fires to run, or every missed one.
type CompensateRequest struct {
	Fires     []string `json:"fires,omitempty"` // RFC 3339 due times
	AllMissed bool     `json:"all_missed,omitempty"`
	DryRun    bool     `json:"dry_run,omitempty"` // answer the runs it would make, make none
}

// Compensation is one missed fire a compensation runs (or would).
type Compensation struct {
	DueTime    time.Time `json:"due_time"`
	InstanceID int64     `json:"workflow_instance_id,omitempty"` // none in a dry run
}

// CompensateResult answers a compensation.
type CompensateResult struct {
	DryRun bool           `json:"dry_run"`
	Runs   []Compensation `json:"runs"`
}

func fireScheduleID(r *http.Request) (string, int64, error) {
	project, err := pathName(r, "project")
	if err != nil {
		return "", 0, err
	}
	id, err := pathID(r, "id")
	return project, id, err
}

func (h *handlers) listFires(w http.ResponseWriter, r *http.Request) error {
	project, id, err := fireScheduleID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var f store.FireFilter
	var bad []string
	if f.From, err = optionalTime("from", q.Get("from")); err != nil {
		bad = append(bad, "query parameter "+err.Error())
	}
	if f.To, err = optionalTime("to", q.Get("to")); err != nil {
		bad = append(bad, "query parameter "+err.Error())
	}
	if o := model.FireOutcome(q.Get("outcome")); o != "" && !o.Valid() {
		bad = append(bad, fmt.Sprintf("query parameter outcome %q is not valid: use fired, skipped_overlap, queued, replaced, refused_calendar, missed or compensated", o))
	} else {
		f.Outcome = o
	}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		f.Desc = true
	default:
		bad = append(bad, fmt.Sprintf("query parameter order %q is not valid: use asc (the default, oldest first) or desc", q.Get("order")))
	}
	limit, err := queryInt(r, "limit", 50, 1, store.MaxPage)
	if err != nil {
		bad = append(bad, err.Error())
	}
	f.Limit = int(limit)
	if c := q.Get("cursor"); c != "" {
		key, err := cursorKey(c)
		t, perr := time.Parse(time.RFC3339Nano, key)
		if err != nil || perr != nil {
			bad = append(bad, "query parameter cursor: not a next_cursor of this list; start again without it")
		}
		f.After = t
	}
	if len(bad) > 0 {
		return badRequest("%s", strings.Join(bad, "; "))
	}
	fires, more, err := h.Store.ScheduleFires(r.Context(), project, id, f)
	if err != nil {
		return storeError(err)
	}
	out := FireList{Items: make([]ScheduleFire, len(fires))}
	for i, fr := range fires {
		out.Items[i] = ScheduleFire{DueTime: fr.DueTime, Outcome: string(fr.Outcome), InstanceID: fr.InstanceID, UpdatedAt: fr.UpdatedAt}
	}
	if more {
		out.NextCursor = nextCursor(fires[len(fires)-1].DueTime.Format(time.RFC3339Nano))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) compensateFires(w http.ResponseWriter, r *http.Request) error {
	project, id, err := fireScheduleID(r)
	if err != nil {
		return err
	}
	var req CompensateRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	var bad []string
	switch {
	case req.AllMissed && len(req.Fires) > 0:
		bad = append(bad, "give fires or all_missed, not both")
	case !req.AllMissed && len(req.Fires) == 0:
		bad = append(bad, "name the missed fires to run: fires (their due times) or all_missed: true")
	case len(req.Fires) > store.MaxCompensate:
		bad = append(bad, fmt.Sprintf("fires names %d due times; at most %d at a time", len(req.Fires), store.MaxCompensate))
	}
	sr := store.CompensateRequest{AllMissed: req.AllMissed, DryRun: req.DryRun}
	for i, s := range req.Fires {
		t, err := optionalTime(fmt.Sprintf("fires[%d]", i), s)
		if err != nil || t == nil {
			bad = append(bad, fmt.Sprintf("fires[%d] %q is not an RFC 3339 time such as 2026-12-01T00:00:00Z", i, s))
			continue
		}
		sr.Times = append(sr.Times, *t)
	}
	if len(bad) > 0 {
		return badRequest("%s", strings.Join(bad, "; "))
	}
	done, err := h.Store.ScheduleCompensate(r.Context(), project, id, sr)
	if err != nil {
		return storeError(err)
	}
	out := CompensateResult{DryRun: req.DryRun, Runs: make([]Compensation, len(done))}
	for i, c := range done {
		out.Runs[i] = Compensation{DueTime: c.DueTime, InstanceID: c.InstanceID}
	}
	if !req.DryRun && len(done) > 0 && h.Notify != nil {
		h.Notify() // the runs start now, not at the master's next poll
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
