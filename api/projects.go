package api

import (
	"net/http"
	"unicode/utf8"

	"github.com/beluga-scheduler/beluga/common/spec"
)

const maxDescription = 1024 // characters, as in sql/

func (h *handlers) createProject(w http.ResponseWriter, r *http.Request) error {
	var req CreateProjectRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if !validName(req.Name) {
		return badRequest("project name %q is not valid: %s", req.Name, nameRule)
	}
	if !utf8.ValidString(req.Description) || utf8.RuneCountInString(req.Description) > maxDescription {
		return badRequest("project description must be valid UTF-8 of at most %d characters", maxDescription)
	}
	if req.Tenant != "" && !spec.ValidTenant(req.Tenant) {
		return badRequest("project tenant %q is not valid: %s", req.Tenant, spec.TenantRule)
	}
	c := callerOf(r.Context())
	if req.Tenant != "" && !c.admin() {
		// Its tasks would run as that OS user (docs/security.md, tenants).
		return forbidden("only an admin sets a project's tenant (tenant %q)", req.Tenant)
	}
	p, err := h.Store.ProjectCreateOwned(r.Context(), req.Name, req.Description, req.Tenant, c.id, c.name)
	if err != nil {
		return storeError(err)
	}
	w.Header().Set("Location", "/api/v1/projects/"+p.Name)
	writeJSON(w, http.StatusCreated, fromProject(p))
	return nil
}

func (h *handlers) listProjects(w http.ResponseWriter, r *http.Request) error {
	ps, err := h.Store.ProjectList(r.Context())
	if err != nil {
		return err
	}
	out := List[Project]{Items: make([]Project, 0, len(ps))}
	for _, p := range ps {
		if ok, err := h.canView(r.Context(), p.ID); err != nil {
			return err
		} else if ok {
			out.Items = append(out.Items, fromProject(p))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getProject(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "project")
	if err != nil {
		return err
	}
	p, err := h.Store.ProjectGet(r.Context(), name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromProject(p))
	return nil
}

// pathName returns a name path parameter that follows the name rule; no
// stored object can have any other name.
func pathName(r *http.Request, param string) (string, error) {
	s := r.PathValue(param)
	if !validName(s) {
		return "", badRequest("path parameter %s: %q is not a valid name: %s", param, s, nameRule)
	}
	return s, nil
}
