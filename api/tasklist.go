package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// ListedTask is a task instance in the list across runs, with its run's
// project and workflow.
type ListedTask struct {
	TaskInstance
	Project  string `json:"project"`
	Workflow string `json:"workflow"`
}

// TaskInstanceList is one page of task instances across runs, newest
// first; Total counts every one the filters select.
type TaskInstanceList struct {
	Items  []ListedTask `json:"items"`
	Total  int64        `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

// listTaskInstances lists task instances across runs, filtered by project,
// workflow, state, host, name (a part of it), start time (from, to:
// RFC 3339) and latest (only attempts not superseded), of the projects the
// caller may view.
func (h *handlers) listTaskInstances(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.TaskFilter{Project: q.Get("project"), Workflow: q.Get("workflow"), State: model.TaskState(q.Get("state")),
		Host: q.Get("host"), Name: q.Get("name")}
	if err := projectWorkflowValid(f.Project, f.Workflow); err != nil {
		return err
	}
	if f.State != "" && !f.State.Valid() {
		states := make([]string, 0, len(model.TaskStates()))
		for _, s := range model.TaskStates() {
			states = append(states, string(s))
		}
		return badRequest("query parameter state: %q is not a task state; use one of %s", f.State, strings.Join(states, ", "))
	}
	for _, c := range []struct {
		param string
		to    *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := q.Get(c.param); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return badRequest("query parameter %s: %q is not an RFC 3339 time (e.g. 2026-12-06T09:00:00Z)", c.param, v)
			}
			*c.to = t
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return badRequest("query parameters from and to: from (%s) must be before to (%s)", q.Get("from"), q.Get("to"))
	}
	switch v := q.Get("latest"); v {
	case "", "false":
	case "true":
		f.Latest = true
	default:
		return badRequest("query parameter latest: %q is not true or false", v)
	}
	var err error
	if f.Limit, f.Offset, err = pageParams(r); err != nil {
		return err
	}
	if f.OnlyProjects, err = h.viewable(r.Context()); err != nil {
		return err
	}
	items, total, err := h.Store.TaskFind(r.Context(), f)
	if err != nil {
		return err
	}
	out := TaskInstanceList{Items: make([]ListedTask, len(items)), Total: total, Limit: f.Limit, Offset: f.Offset}
	for i, t := range items {
		out.Items[i] = ListedTask{TaskInstance: fromTask(t.TaskInstance), Project: t.Project, Workflow: t.Workflow}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
