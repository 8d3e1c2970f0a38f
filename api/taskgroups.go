package api

import (
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

func checkCapacity(c int) error {
	if c < 1 || c > model.MaxTaskGroupCapacity {
		return badRequest("capacity must be an integer from 1 to %d, got %d", model.MaxTaskGroupCapacity, c)
	}
	return nil
}

// checkProjects refuses (400) project names that do not exist, before
// anything changes.
func (h *handlers) checkProjects(r *http.Request, what string, projects []string) error {
	for _, p := range projects {
		if _, err := h.Store.ProjectGet(r.Context(), p); err != nil {
			if store.IsNotFound(err) {
				return badRequest("%s: projects: project %q does not exist", what, p)
			}
			return err
		}
	}
	return nil
}

func callerName(r *http.Request) string {
	if c := callerOf(r.Context()); c != nil {
		return c.name
	}
	return ""
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
	if err := h.checkProjects(r, fmt.Sprintf("task group %q", req.Name), req.Projects); err != nil {
		return err
	}
	g, err := h.Store.TaskGroupCreate(r.Context(), req.Name, req.Capacity, req.Description)
	if err != nil {
		return storeError(err)
	}
	if len(req.Projects) > 0 {
		if err := h.Store.TaskGroupSetProjects(r.Context(), g.Name, req.Projects, callerName(r)); err != nil {
			return storeError(err)
		}
	}
	v, _, err := h.taskGroupView(r, g)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/task-groups/"+g.Name)
	writeJSON(w, http.StatusCreated, v)
	return nil
}

func (h *handlers) listTaskGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := h.Store.TaskGroupList(r.Context())
	if err != nil {
		return err
	}
	out := List[TaskGroup]{Items: []TaskGroup{}}
	for _, g := range gs {
		v, ok, err := h.taskGroupView(r, g)
		if err != nil {
			return err
		}
		if ok {
			out.Items = append(out.Items, v)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getTaskGroup(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	g, err := h.Store.TaskGroupGet(r.Context(), name)
	if err != nil {
		return storeError(err)
	}
	v, ok, err := h.taskGroupView(r, g)
	if err != nil {
		return err
	}
	if !ok { // as a missing one: names cannot be probed
		return errNotFound(fmt.Sprintf("task group %q: %s", name, store.ErrNotFound.Error()))
	}
	writeJSON(w, http.StatusOK, v)
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
	if req.Capacity == nil && req.Projects == nil {
		return badRequest("capacity is required (or projects, or both)")
	}
	if req.Capacity != nil {
		if err := checkCapacity(*req.Capacity); err != nil {
			return err
		}
	}
	if req.Projects != nil {
		if err := h.checkProjects(r, fmt.Sprintf("task group %q", name), *req.Projects); err != nil {
			return err
		}
	}
	var g model.TaskGroup
	if req.Capacity != nil {
		g, err = h.Store.TaskGroupResize(r.Context(), name, *req.Capacity)
	} else {
		g, err = h.Store.TaskGroupGet(r.Context(), name)
	}
	if err != nil {
		return storeError(err)
	}
	if req.Projects != nil {
		if err := h.Store.TaskGroupSetProjects(r.Context(), name, *req.Projects, callerName(r)); err != nil {
			return storeError(err)
		}
	}
	v, _, err := h.taskGroupView(r, g)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (h *handlers) deleteTaskGroup(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	if err := h.Store.TaskGroupDelete(r.Context(), name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// taskGroupView is g as the caller may see it, and whether they may: an
// admin sees every group; another user those granted to a project they
// may view, with only such projects listed.
func (h *handlers) taskGroupView(r *http.Request, g model.TaskGroup) (TaskGroup, bool, error) {
	grants, err := h.Store.TaskGroupProjects(r.Context())
	if err != nil {
		return TaskGroup{}, false, err
	}
	projects, ok, err := h.visibleProjects(r, grants[g.ID])
	if err != nil || !ok {
		return TaskGroup{}, false, err
	}
	return fromTaskGroup(g, projects), true, nil
}

// visibleProjects is, of the projects a datasource or task group is
// granted to, those the caller may view (all for an admin), and whether
// the caller may see the resource at all.
func (h *handlers) visibleProjects(r *http.Request, projects []string) ([]string, bool, error) {
	names, err := h.viewableNames(r.Context())
	if err != nil {
		return nil, false, err
	}
	if names == nil { // an admin (or no caller): all
		return projects, true, nil
	}
	out := []string{}
	for _, p := range projects {
		if slices.Contains(names, p) {
			out = append(out, p)
		}
	}
	return out, len(out) > 0, nil
}
