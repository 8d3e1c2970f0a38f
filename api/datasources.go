package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/datasource"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
)

func noKey(what string) *httpError {
	return &httpError{http.StatusServiceUnavailable, CodeUnavailable,
		"this API server has no secret key, so it cannot " + what + ": start it with --secret-key-file " +
			"(env BELUGA_SECRET_KEY_FILE), the same key file as the workers'"}
}

func (h *handlers) putDatasource(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	var req DatasourceRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	c := datasource.Config{Type: req.Type, Host: req.Host, Port: req.Port, Database: req.Database,
		User: req.User, Params: req.Params}
	if req.Password != nil {
		c.Password = *req.Password
	}
	if err := c.Validate(); err != nil {
		return badRequest("datasource %q: %v", name, err)
	}
	d := model.Datasource{Name: name, Type: c.Type, Host: c.Host, Port: c.Port, Database: c.Database,
		User: c.User, Params: c.Params, PasswordSealed: store.KeepPassword}
	if req.Password != nil {
		d.PasswordSealed = ""
		if *req.Password != "" {
			if h.Secrets == nil {
				return noKey("store a password")
			}
			if d.PasswordSealed, err = h.Secrets.SealFor(*req.Password, datasource.SealContext(name)); err != nil {
				return err
			}
		}
	}
	if c.Type == datasource.SQLite {
		d.PasswordSealed = ""
	}
	if req.Projects != nil {
		// Checked first, so that a bad name changes nothing.
		for _, p := range *req.Projects {
			if _, err := h.Store.ProjectGet(r.Context(), p); err != nil {
				if store.IsNotFound(err) {
					return badRequest("datasource %q: projects: project %q does not exist", name, p)
				}
				return err
			}
		}
	}
	got, created, err := h.Store.DatasourcePut(r.Context(), d)
	if err != nil {
		return storeError(err)
	}
	if req.Projects != nil {
		by := ""
		if c := callerOf(r.Context()); c != nil {
			by = c.name
		}
		if err := h.Store.DatasourceSetProjects(r.Context(), name, *req.Projects, by); err != nil {
			return storeError(err)
		}
	}
	view, _, err := h.datasourceView(r, got)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/datasources/"+name)
	}
	writeJSON(w, status, view)
	return nil
}

func (h *handlers) listDatasources(w http.ResponseWriter, r *http.Request) error {
	ds, err := h.Store.DatasourceList(r.Context())
	if err != nil {
		return err
	}
	out := List[Datasource]{Items: []Datasource{}}
	for _, d := range ds {
		v, ok, err := h.datasourceView(r, d)
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

// pathDatasource loads the datasource the path names.
func (h *handlers) pathDatasource(r *http.Request) (string, model.Datasource, error) {
	name, err := pathName(r, "name")
	if err != nil {
		return "", model.Datasource{}, err
	}
	d, err := h.Store.DatasourceGet(r.Context(), name)
	if err != nil {
		return "", model.Datasource{}, storeError(err)
	}
	return name, d, nil
}

func (h *handlers) getDatasource(w http.ResponseWriter, r *http.Request) error {
	name, d, err := h.pathDatasource(r)
	if err != nil {
		return err
	}
	v, ok, err := h.datasourceView(r, d)
	if err != nil {
		return err
	}
	if !ok { // as a missing one: names cannot be probed
		return errNotFound(fmt.Sprintf("datasource %q: %s", name, store.ErrNotFound.Error()))
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (h *handlers) deleteDatasource(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	if err := h.Store.DatasourceDelete(r.Context(), name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testDatasource connects from this API server (which may not reach what
// the workers reach: the answer says so for this host only).
func (h *handlers) testDatasource(w http.ResponseWriter, r *http.Request) error {
	name, d, err := h.pathDatasource(r)
	if err != nil {
		return err
	}
	c, err := OpenDatasource(d, h.Secrets)
	if errors.Is(err, secret.ErrNoKey) {
		return noKey("open the datasource's password")
	}
	if err != nil {
		return err
	}
	start := time.Now()
	terr := datasource.Test(r.Context(), c)
	res := DatasourceTest{OK: terr == nil, ElapsedMs: time.Since(start).Milliseconds()}
	if terr != nil {
		res.Error = terr.Error()
		h.log.Info("datasource test failed", zap.String("datasource", name), zap.Error(terr))
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// OpenDatasource turns a stored datasource into connection details, its
// password opened with box (secret.ErrNoKey when it has one and box is
// nil).
func OpenDatasource(d model.Datasource, box *secret.Box) (datasource.Config, error) {
	c := datasource.Config{Type: d.Type, Host: d.Host, Port: d.Port, Database: d.Database, User: d.User, Params: d.Params}
	if d.PasswordSealed != "" {
		pw, err := box.OpenFor(d.PasswordSealed, datasource.SealContext(d.Name))
		if err != nil {
			return c, err
		}
		c.Password = pw
	}
	return c, nil
}

// datasourceView is d as the caller may see it, and whether they may: an
// admin sees every datasource whole; another user those granted to a
// project they may view, with only such projects in its projects and
// used_by (nothing of another project reaches them).
func (h *handlers) datasourceView(r *http.Request, d model.Datasource) (Datasource, bool, error) {
	ctx := r.Context()
	grants, err := h.Store.DatasourceProjects(ctx)
	if err != nil {
		return Datasource{}, false, err
	}
	projects, ok, err := h.visibleProjects(r, grants[d.ID])
	if err != nil || !ok {
		return Datasource{}, false, err
	}
	users, err := h.Store.DatasourceUsers(ctx, d.Name)
	if err != nil {
		return Datasource{}, false, err
	}
	if c := callerOf(ctx); c != nil && !c.admin() {
		kept := []string{}
		for _, u := range users {
			if p, _, _ := strings.Cut(u, "/"); slices.Contains(projects, p) {
				kept = append(kept, u)
			}
		}
		users = kept
	}
	return fromDatasource(d, users, projects), true, nil
}
