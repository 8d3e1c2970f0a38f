package api

import (
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/beluga-scheduler/beluga/common/model"
)

// UserHeader names the operator when an action body has no "by".
const UserHeader = "X-Beluga-User"

// defaultBy is who an action is recorded as when nobody is named.
const defaultBy = "api"

func (h *handlers) instanceAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	kind, by, version, err := actionBody(r, false)
	if err != nil {
		return err
	}
	return h.requestAction(w, r, model.ActionRequest{InstanceID: id, Action: kind, By: by, Version: version})
}

func (h *handlers) taskAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	kind, by, _, err := actionBody(r, true)
	if err != nil {
		return err
	}
	return h.requestAction(w, r, model.ActionRequest{TaskInstanceID: id, Action: kind, By: by})
}

// requestAction writes the request and answers 202: the master acts on it
// later; the caller watches the instance for the outcome.
func (h *handlers) requestAction(w http.ResponseWriter, r *http.Request, req model.ActionRequest) error {
	res, err := h.Store.ActionRequest(r.Context(), req)
	if err != nil {
		return storeError(err)
	}
	if h.Notify != nil {
		h.Notify()
	}
	w.Header().Set("Location", "/api/v1/instances/"+strconv.FormatInt(res.InstanceID, 10))
	writeJSON(w, http.StatusAccepted, fromActionResult(res))
	return nil
}

// actionBody decodes and checks an action request for an instance
// (onTask false) or a task instance, and the version a rerun or
// recover_failed runs (0: the instance's own).
func actionBody(r *http.Request, onTask bool) (model.ActionKind, string, int, error) {
	var req InstanceActionRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return "", "", 0, err
	}
	version := 0
	if req.Version != nil {
		if k := model.ActionKind(req.Action); onTask || k != model.ActionRerun && k != model.ActionRecoverFailed {
			return "", "", 0, badRequest("version: only rerun and recover_failed run a version; %s takes none", strconv.Quote(req.Action))
		}
		version = int(*req.Version)
	}
	kind, by, err := checkActionBody(r, req, onTask)
	return kind, by, version, err
}

// checkActionBody checks an action request's action and who asks.
func checkActionBody(r *http.Request, req InstanceActionRequest, onTask bool) (model.ActionKind, string, error) {
	valid, other := model.InstanceActions(), "POST /api/v1/task-instances/{id}/actions"
	what, otherWhat := "an instance", "a task instance"
	if onTask {
		valid, other = model.TaskActions(), "POST /api/v1/instances/{id}/actions"
		what, otherWhat = "a task instance", "an instance"
	}
	names := make([]string, len(valid))
	for i, v := range valid {
		names[i] = string(v)
	}
	list := strings.Join(names, ", ")
	kind := model.ActionKind(req.Action)
	switch {
	case req.Action == "":
		return "", "", badRequest("action is required; the actions on %s are %s", what, list)
	case onTask && kind.OnInstance() || !onTask && kind.OnTask():
		return "", "", badRequest("%s is an action on %s; send it to %s. The actions on %s are %s",
			strconv.Quote(req.Action), otherWhat, other, what, list)
	case onTask && !kind.OnTask() || !onTask && !kind.OnInstance():
		return "", "", badRequest("action %s is not valid; the actions on %s are %s", strconv.Quote(req.Action), what, list)
	}
	by, err := requestedBy(r, req.By)
	if err != nil {
		return "", "", err
	}
	return kind, by, nil
}

// requestedBy is who a change is recorded as: the authenticated user. A
// "by" in the body or the X-Beluga-User header (from clients written
// before users existed) is still checked, but no longer names anyone;
// without a caller (a handler used outside the guard) it does, else "api".
func requestedBy(r *http.Request, by string) (string, error) {
	source := `"by"`
	if by == "" {
		by, source = r.Header.Get(UserHeader), "header "+UserHeader
	}
	if by == "" {
		by = defaultBy
	}
	if !validBy(by) {
		return "", badRequest("%s must be printable UTF-8 text of at most %d characters", source, model.MaxActionBy)
	}
	if c := callerOf(r.Context()); c != nil {
		return c.name, nil
	}
	return by, nil
}

// validBy: who is recorded in history and shown in tables, so no control
// characters.
func validBy(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > model.MaxActionBy || strings.TrimSpace(s) == "" {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}
