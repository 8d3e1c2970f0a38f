package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"
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
}

// SchedulePreview answers a preview: the times in UTC and the zone they were
// computed in, so a form can show them on the schedule's clock.
type SchedulePreview struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
	Times    []Time `json:"times"`
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
	if len(bad) > 0 {
		return badRequest("%s", strings.Join(bad, "; "))
	}
	from := time.Now()
	if req.From != nil {
		from = req.From.Time
	}
	out := SchedulePreview{Cron: req.Cron, Timezone: req.Timezone, Times: []Time{}}
	for t := c.Next(from); !t.IsZero() && len(out.Times) < req.Count; t = c.Next(t) {
		out.Times = append(out.Times, timeOf(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
