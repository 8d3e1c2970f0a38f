package api

import (
	"net/http"
	"unicode/utf8"

	"github.com/beluga-scheduler/beluga/common/store"
)

func checkCapacity(c int) error {
	if c < 1 || c > store.MaxTaskGroupCapacity {
		return badRequest("capacity must be an integer from 1 to %d, got %d", store.MaxTaskGroupCapacity, c)
	}
	return nil
}

func (h *handlers) createTaskGroup(w http.ResponseWriter, r *http.Request) error {
	var req CreateTaskGroupRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if !validName(req.Name) {
		return badRequest("task group name %q is not valid: %s", req.Name, nameRule)
	}
	if err := checkCapacity(req.Capacity); err != nil {
		return err
	}
	if !utf8.ValidString(req.Description) || utf8.RuneCountInString(req.Description) > maxDescription {
		return badRequest("task group description must be valid UTF-8 of at most %d characters", maxDescription)
	}
	g, err := h.Store.CreateTaskGroup(r.Context(), req.Name, req.Capacity, req.Description)
	if err != nil {
		return storeError(err)
	}
	w.Header().Set("Location", "/api/v1/task-groups/"+g.Name)
	writeJSON(w, http.StatusCreated, fromTaskGroup(g))
	return nil
}

func (h *handlers) listTaskGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := h.Store.ListTaskGroups(r.Context())
	if err != nil {
		return err
	}
	out := List[TaskGroup]{Items: make([]TaskGroup, len(gs))}
	for i, g := range gs {
		out.Items[i] = fromTaskGroup(g)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getTaskGroup(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	g, err := h.Store.GetTaskGroup(r.Context(), name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromTaskGroup(g))
	return nil
}

func (h *handlers) resizeTaskGroup(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	var req ResizeTaskGroupRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if req.Capacity == nil {
		return badRequest("capacity is required")
	}
	if err := checkCapacity(*req.Capacity); err != nil {
		return err
	}
	g, err := h.Store.ResizeTaskGroup(r.Context(), name, *req.Capacity)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromTaskGroup(g))
	return nil
}

func (h *handlers) deleteTaskGroup(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	if err := h.Store.DeleteTaskGroup(r.Context(), name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
