package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/gitsync"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

func (h *handlers) applyWorkflow(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	release, err := h.holdUpload(r)
	if err != nil {
		return err
	}
	defer release()
	body, err := readBody(r)
	if err != nil {
		return err
	}
	isJSON := false
	if len(bytes.TrimSpace(body)) > 0 { // an empty one gets spec.Parse's message
		if isJSON, err = specMediaType(r); err != nil {
			return err
		}
	}
	if isJSON && !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n\xef\xbb\xbf"), []byte("{")) {
		return badRequest("Content-Type is JSON but the body is not a JSON object")
	}
	wf, err := h.checkApply(r.Context(), project, name, "the path", body)
	if err != nil {
		return err
	}
	author := ""
	if c := callerOf(r.Context()); c != nil {
		author = c.name
	}
	file, err := gitsync.FileOf(body, wf)
	if err != nil {
		return fmt.Errorf("the spec of %s as a file: %w", name, err)
	}
	commit, path, err := h.gitEdit(r.Context(), project, name, file, r.URL.Query().Get("message"))
	if err != nil {
		return err
	}
	def, created, err := h.Store.WorkflowPutAs(r.Context(), project, author, wf)
	if err != nil {
		return applyStoreError(err)
	}
	if path != "" {
		if err := h.Store.GitOriginSet(r.Context(), project, name, path); err != nil {
			return err
		}
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, ApplyResult{Project: def.Project, Name: def.Name, Version: def.Version,
		Created: created, SpecHash: def.SpecHash, CreatedAt: timeOf(def.CreatedAt), GitCommit: commit})
	return nil
}

// checkApply parses body as workflow name of project and runs every check
// an apply makes before the store's (the path's name, task group names,
// tenants, the code gate, sealed values, alert channels, the caller's
// walls), as the caller of r. A Git sync runs the same on each file.
// namedBy says what gave name ("the path", "the file name").
func (h *handlers) checkApply(ctx context.Context, project, name, namedBy string, body []byte) (*spec.Workflow, error) {
	wf, err := spec.Parse(withName(body, name))
	if err != nil {
		if errors.Is(err, spec.ErrTooLarge) {
			return nil, &httpError{http.StatusRequestEntityTooLarge, CodePayloadTooLarge, err.Error()}
		}
		return nil, badRequest("%s", err.Error())
	}
	if wf.Name != name {
		return nil, badRequest("the spec names workflow %q but %s names %q; they must match (or leave name out of the spec)", wf.Name, namedBy, name)
	}
	return wf, h.checkParsed(ctx, project, wf, false)
}

// checkParsed is checkApply's checks of a parsed spec; sealed allows
// sealed values (a stored version's spec, as a promotion applies).
func (h *handlers) checkParsed(ctx context.Context, project string, wf *spec.Workflow, sealed bool) error {
	// A task group need not exist yet (its tasks wait until it does), but
	// its name must be one a group can have.
	var bad []string
	for _, t := range wf.Tasks {
		if t.TaskGroup != "" && !validName(t.TaskGroup) {
			bad = append(bad, fmt.Sprintf("task %q: task_group %q is not valid: %s", t.Name, t.TaskGroup, nameRule))
		}
	}
	if err := h.checkTenants(ctx, project, wf); err != nil {
		return err
	}
	if err := h.codeGate(ctx, wf); err != nil {
		return err
	}
	if !sealed {
		bad = append(bad, checkSpecNotSealed(wf)...)
	}
	if more, err := h.unknownAlertChannels(ctx, wf.Alerts); err != nil {
		return err
	} else {
		bad = append(bad, more...)
	}
	if len(bad) > 0 {
		return badRequest("%s", strings.Join(bad, "; "))
	}
	if err := h.checkWalls(ctx, project, wf); err != nil {
		return err
	}
	return nil
}

// applyStoreError is the answer to the store's refusal of a workflow.
func applyStoreError(err error) error {
	switch {
	case errors.Is(err, store.ErrBadRef):
		return badRequest("%s", strings.TrimSuffix(err.Error(), ": "+store.ErrBadRef.Error()))
	case errors.Is(err, store.ErrUnknownDatasource):
		return badRequest("%s", strings.TrimSuffix(err.Error(), ": "+store.ErrUnknownDatasource.Error()))
	case errors.Is(err, store.ErrMaskedSecret):
		return badRequest("%s", err.Error())
	case errors.Is(err, store.ErrVersionQuota):
		return badRequest("%s", strings.TrimSuffix(err.Error(), ": "+store.ErrVersionQuota.Error()))
	}
	return storeError(err)
}

// specMediaType accepts the JSON and YAML media types; isJSON is true when
// the client declared JSON. text/plain and forms are refused like every
// type a page of another site could send without asking.
func specMediaType(r *http.Request) (isJSON bool, err error) {
	const expected = "application/json or application/yaml"
	mt, err := bodyType(r, expected)
	if err != nil {
		return false, err
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return true, nil
	case mt == "application/yaml" || mt == "application/x-yaml" || mt == "text/yaml" || mt == "text/x-yaml" ||
		strings.HasSuffix(mt, "+yaml"):
		return false, nil
	}
	return false, unsupportedMedia("Content-Type %s is not supported; send the spec as %s", mt, expected)
}

// withName returns the spec with "name: <name>" added when the top-level
// mapping has no name key, so a spec may leave its name to the path. The key
// is added without moving any other line where possible, so parse errors
// keep pointing at the user's lines. Anything else is returned as it is for
// spec.Parse to report.
func withName(body []byte, name string) []byte {
	trimmed := bytes.TrimLeft(body, " \t\r\n\xef\xbb\xbf")
	if len(trimmed) > 0 && trimmed[0] == '{' { // spec.Parse reads this as JSON
		var top map[string]json.RawMessage
		if json.Unmarshal(trimmed, &top) != nil {
			return body
		}
		if _, ok := top["name"]; ok {
			return body
		}
		at := len(body) - len(trimmed) + 1
		field := `"name":` + strconv.Quote(name)
		if len(top) > 0 {
			field += ","
		}
		return slices.Concat(body[:at], []byte(field), body[at:])
	}
	var orig map[string]any
	root, ok := yamlRootMapping(body, &orig)
	if !ok || root.Style&yaml.FlowStyle != 0 || hasKey(root, "name") {
		return body
	}
	line := strings.Repeat(" ", root.Column-1) + "name: " + name + "\n"
	// First try at the end, where no line moves; then above the first key
	// (later lines shift by one). Each try must change nothing but the name:
	// a trailing "..." or a block scalar at the end without a final newline
	// would make the end the wrong place.
	sep := ""
	if len(body) > 0 && body[len(body)-1] != '\n' {
		sep = "\n"
	}
	lines := bytes.SplitAfter(body, []byte("\n"))
	tries := [][]byte{slices.Concat(body, []byte(sep+line))}
	if i := root.Line - 1; i >= 0 && i < len(lines) {
		tries = append(tries, slices.Concat(bytes.Join(lines[:i], nil), []byte(line), bytes.Join(lines[i:], nil)))
	}
	for _, out := range tries {
		var got map[string]any
		if _, ok := yamlRootMapping(out, &got); ok && got["name"] == name {
			delete(got, "name")
			if reflect.DeepEqual(got, orig) {
				return out
			}
		}
	}
	return body
}

// yamlRootMapping returns the top-level node of a one-mapping YAML
// document, and decodes it into v.
func yamlRootMapping(b []byte, v *map[string]any) (*yaml.Node, bool) {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode || m.Decode(v) != nil {
		return nil, false
	}
	return m, true
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

func (h *handlers) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	version, err := queryInt(r, "version", 0, 1, math.MaxInt32)
	if err != nil {
		return err
	}
	def, err := h.Store.WorkflowGet(r.Context(), project, name, int(version))
	if err != nil {
		return storeError(err)
	}
	out := fromDefinition(def, true)
	drift, err := h.Store.DriftList(r.Context(), project, name)
	if err != nil {
		return storeError(err)
	}
	for _, d := range drift {
		out.Drift = &Drift{Workflow: d.Workflow, SinceVersion: d.SinceVersion, PromotedVersion: d.PromotedVersion,
			EditedBy: d.EditedBy, DetectedAt: timeOf(d.DetectedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	pg, err := pageQuery(r)
	if err != nil {
		return err
	}
	if !pg.paged {
		defs, err := h.Store.WorkflowList(r.Context(), project)
		if err != nil {
			return storeError(err)
		}
		writeJSON(w, http.StatusOK, definitions(defs))
		return nil
	}
	defs, more, err := h.Store.WorkflowPage(r.Context(), project, pg.NamePage)
	if err != nil {
		return storeError(err)
	}
	out := definitions(defs)
	if more {
		out.NextCursor = nextCursor(defs[len(defs)-1].Name)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) listVersions(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	defs, err := h.Store.WorkflowVersions(r.Context(), project, name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, definitions(defs))
	return nil
}

func (h *handlers) deleteWorkflow(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	if _, err := h.Store.WorkflowGet(r.Context(), project, name, 0); err != nil {
		return storeError(err) // no commit for a workflow that is not there
	}
	if _, _, err := h.gitEdit(r.Context(), project, name, nil, r.URL.Query().Get("message")); err != nil {
		return err
	}
	if err := h.Store.WorkflowDelete(r.Context(), project, name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handlers) runWorkflow(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	var req RunRequest
	if err := decodeJSON(r, &req, true); err != nil {
		return err
	}
	if req.Version < 0 {
		return badRequest("version must be a positive integer (or left out for the latest), got %d", req.Version)
	}
	var bad []string
	for k := range req.Params {
		if !validEnvName(k) {
			bad = append(bad, strconv.Quote(k))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return badRequest("params: %s: a param name must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)", strings.Join(bad, ", "))
	}
	if err := params.CheckAll(req.Params); err != nil {
		return badRequest("%v", err)
	}
	if bad := checkSecretParams("secret_params", req.SecretParams, req.Params); len(bad) > 0 {
		return badRequest("%s", strings.Join(bad, "; "))
	}
	rr := store.RunRequest{Project: project, Workflow: name, Version: req.Version, Params: req.Params, SecretParams: req.SecretParams,
		WorkerGroup: req.WorkerGroup, CommandType: model.CommandStart}
	if req.Priority != "" {
		p, ok := model.ParsePriority(req.Priority)
		if !ok {
			return badRequest("priority %q is not valid: use highest, high, medium, low or lowest", req.Priority)
		}
		rr.Priority = &p
	}
	if req.WorkerGroup != "" && !validName(req.WorkerGroup) {
		return badRequest("worker_group %q is not valid: %s", req.WorkerGroup, nameRule)
	}
	if err := h.checkStartNodes(r, project, name, req); err != nil {
		return err
	}
	if err := h.codeGateStored(r, project, name, req.Version); err != nil {
		return err
	}
	rr.StartNodes, rr.Scope, rr.DryRun = req.StartNodes, req.Scope, req.DryRun
	inst, err := h.Store.InstanceCreateRun(r.Context(), rr)
	if err != nil {
		return storeError(err)
	}
	if h.Notify != nil {
		h.Notify()
	}
	if a := h.admits.get(r.Context()); a.Reason != "" && inst.Reason == "" && !inst.Queued {
		inst.Reason = a.Reason // stored and kept: it waits for the leader's admission
	}
	w.Header().Set("Location", "/api/v1/instances/"+strconv.FormatInt(inst.ID, 10))
	writeJSON(w, http.StatusCreated, fromInstance(inst))
	return nil
}

func projectAndName(r *http.Request) (project, name string, err error) {
	if project, err = pathName(r, "project"); err != nil {
		return "", "", err
	}
	if name, err = pathName(r, "name"); err != nil {
		return "", "", err
	}
	return project, name, nil
}

func definitions(defs []model.WorkflowDefinition) List[Workflow] {
	out := List[Workflow]{Items: make([]Workflow, len(defs))}
	for i, d := range defs {
		out.Items[i] = fromDefinition(d, false)
	}
	return out
}

// checkStartNodes refuses start nodes that the run's workflow version does
// not have, and a scope other than only, upstream or downstream.
func (h *handlers) checkStartNodes(r *http.Request, project, name string, req RunRequest) error {
	if req.Scope != "" && len(req.StartNodes) == 0 {
		return badRequest("scope %q needs start_nodes", req.Scope)
	}
	if len(req.StartNodes) == 0 {
		return nil
	}
	if _, err := dag.ParseScope(req.Scope); err != nil {
		return badRequest("scope: %v", err)
	}
	def, err := h.Store.WorkflowGet(r.Context(), project, name, req.Version)
	if err != nil {
		return storeError(err)
	}
	wf, err := spec.ParseStored(def.SpecJSON)
	if err != nil {
		return fmt.Errorf("stored spec of %s version %d: %w", name, def.Version, err)
	}
	known := map[string]bool{}
	for _, t := range wf.Tasks {
		known[t.Name] = true
	}
	var missing []string
	for _, n := range req.StartNodes {
		if !known[n] {
			missing = append(missing, strconv.Quote(n))
		}
	}
	if len(missing) > 0 {
		return badRequest("start_nodes: workflow %q version %d has no task %s", name, def.Version, strings.Join(missing, ", "))
	}
	return nil
}

// checkTenants refuses a spec naming a tenant other than its project's
// unless the caller is an admin (spec.CheckTenant; 403 naming the tenant).
func (h *handlers) checkTenants(ctx context.Context, project string, wf *spec.Workflow) error {
	named := wf.Tenant != ""
	for _, t := range wf.Tasks {
		named = named || t.Tenant != ""
	}
	c := callerOf(ctx)
	if !named || c.admin() {
		return nil
	}
	p, err := h.Store.ProjectGet(ctx, project)
	if err != nil {
		return storeError(err)
	}
	if err := spec.CheckTenant(wf.Tenant, p.Tenant, false); err != nil {
		return forbidden("workflow: %v", err)
	}
	for _, t := range wf.Tasks {
		if err := spec.CheckTenant(t.Tenant, p.Tenant, false); err != nil {
			return forbidden("task %q: %v", t.Name, err)
		}
	}
	return nil
}
