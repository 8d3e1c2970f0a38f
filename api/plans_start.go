package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Plans of actions that start new runs (docs/architecture.md, "Plans"): a
// rerun from a task (POST .../runs/plan) and a backfill (POST
// .../backfill/plan) answer the runs they would start (ids -1, -2, ...),
// the existing runs downstream that would rerun, waits, estimates and
// conflicts; POST /plans/{id}/apply writes exactly that run or backfill.

// RunPlanRequest is the body of POST .../workflows/{name}/runs/plan: a run
// from start_nodes (a rerun from a task), planned.
type RunPlanRequest struct {
	RunRequest
	Downstream string `json:"downstream,omitempty"` // none (default), direct or all
	// FromInstance is the run it reruns from (shown; optional).
	FromInstance int64 `json:"from_instance,omitempty"`
}

// BackfillPlanRequest is the body of POST .../workflows/{name}/backfill/plan.
type BackfillPlanRequest struct {
	BackfillRequest
	Downstream string `json:"downstream,omitempty"`
}

func (h *handlers) planRun(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	var req RunPlanRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	down, err := plan.ParseDownstream(req.Downstream)
	if err != nil {
		return badRequest("%s", err.Error())
	}
	switch {
	case len(req.StartNodes) == 0:
		return badRequest("start_nodes is required: a run plan is a rerun from tasks (scope downstream: them and what follows)")
	case len(req.SecretParams) > 0:
		return badRequest("secret_params: a plan keeps its params readable; run without a plan to pass secret params")
	case req.Version < 0:
		return badRequest("version must be a positive integer (or left out for the latest), got %d", req.Version)
	case req.FromInstance < 0:
		return badRequest("from_instance must be an instance id, got %d", req.FromInstance)
	}
	st := plan.Start{Project: project, Workflow: name, Version: req.Version, Latest: req.Version == 0, Params: req.Params,
		WorkerGroup: req.WorkerGroup, StartNodes: req.StartNodes, Scope: req.Scope, DryRun: req.DryRun, From: req.FromInstance}
	if err := checkRunParams(req.Params); err != nil {
		return err
	}
	if req.Priority != "" {
		p, ok := model.ParsePriority(req.Priority)
		if !ok {
			return badRequest("priority %q is not valid: use highest, high, medium, low or lowest", req.Priority)
		}
		v := int(p)
		st.Priority = &v
	}
	if req.WorkerGroup != "" && !validName(req.WorkerGroup) {
		return badRequest("worker_group %q is not valid: %s", req.WorkerGroup, nameRule)
	}
	if err := h.checkStartNodes(r, project, name, req.RunRequest); err != nil {
		return err
	}
	if err := h.codeGateStored(r, project, name, req.Version); err != nil {
		return err
	}
	now := time.Now().UTC()
	return h.makeStartPlan(w, r, &st, plan.StartRequest{Action: plan.ActionRerunFrom, WF: plan.WF{Project: project, Workflow: name},
		Runs: []plan.NewRun{{Base: now, Loc: time.UTC}}, StartNodes: req.StartNodes, Scope: req.Scope, Downstream: down}, nil)
}

func (h *handlers) planBackfill(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	var req BackfillPlanRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	down, err := plan.ParseDownstream(req.Downstream)
	if err != nil {
		return badRequest("%s", err.Error())
	}
	if len(req.SecretParams) > 0 {
		return badRequest("secret_params: a plan keeps its params readable; start the backfill without a plan to pass secret params")
	}
	// Its times are decided as the backfill's would be (the schedule's
	// calendar too).
	b, err := h.decideBackfill(r, project, name, req.BackfillRequest)
	if err != nil {
		return err
	}
	if err := h.codeGateStored(r, project, name, 0); err != nil {
		return err
	}
	st := plan.Start{Project: project, Workflow: name, Latest: true, Params: b.Params, WorkerGroup: b.WorkerGroup, DryRun: b.DryRun,
		Cron: b.Cron, Timezone: b.Timezone, Begin: b.Start, End: b.End, Times: b.Times, Parallelism: b.Parallelism, OnFailure: b.OnFailure,
		Calendar: b.Calendar, OnHoliday: b.OnHoliday, Refused: b.Refused}
	if b.Priority != nil {
		v := int(*b.Priority)
		st.Priority = &v
	}
	loc := time.UTC
	if b.Timezone != "" {
		if z, err := time.LoadLocation(b.Timezone); err == nil {
			loc = z
		}
	}
	req2 := plan.StartRequest{Action: plan.ActionBackfill, WF: plan.WF{Project: project, Workflow: name}, Parallelism: b.Parallelism, Downstream: down}
	for _, t := range b.Times {
		req2.Runs = append(req2.Runs, plan.NewRun{Base: t.UTC(), Loc: loc})
	}
	return h.makeStartPlan(w, r, &st, req2, b.Times)
}

// makeStartPlan reads the world, plans req, refuses a plan reaching a
// project the caller may not view, and keeps it with st.
func (h *handlers) makeStartPlan(w http.ResponseWriter, r *http.Request, st *plan.Start, req plan.StartRequest, times []time.Time) error {
	by, err := requestedBy(r, "")
	if err != nil {
		return err
	}
	snap, def, version, err := h.Store.PlanSnapshotStart(r.Context(), store.PlanTarget{Project: st.Project, Workflow: st.Workflow, Version: st.Version, Times: times}, req.Downstream)
	if err != nil {
		return storeError(err)
	}
	if err := h.checkPlanSecrets(r, st, version); err != nil {
		return err
	}
	req.Def, st.Version = def, version
	p, err := plan.MakeStart(req, snap)
	if err != nil {
		return badRequest("%s", err.Error())
	}
	p.Start = st
	if err := h.planVisible(r, p); err != nil {
		return err
	}
	return h.keepPlan(w, r, st.Project, p, by)
}

// keepPlan stores p, a plan of new runs in project made by by, and answers
// it (201 with its address).
func (h *handlers) keepPlan(w http.ResponseWriter, r *http.Request, project string, p plan.Plan, by string) error {
	pr, err := h.Store.ProjectGet(r.Context(), project)
	if err != nil {
		return storeError(err)
	}
	stored, err := h.Store.PlanCreate(r.Context(), pr.ID, 0, p, by)
	if err != nil {
		return storeError(err)
	}
	w.Header().Set("Location", "/api/v1/plans/"+strconv.FormatInt(stored.ID, 10))
	writeJSON(w, http.StatusCreated, fromImpactPlan(stored))
	return nil
}

// checkPlanSecrets refuses params the version marks secret: a plan is
// stored and shown readable, and a secret's value must not be.
func (h *handlers) checkPlanSecrets(r *http.Request, st *plan.Start, version int) error {
	if len(st.Params) == 0 {
		return nil
	}
	def, err := h.Store.WorkflowGet(r.Context(), st.Project, st.Workflow, version)
	if err != nil {
		return storeError(err)
	}
	wf, err := spec.ParseStored(def.SpecJSON)
	if err != nil {
		return err
	}
	var bad []string
	for _, n := range wf.SecretNames() {
		if _, ok := st.Params[n]; ok {
			bad = append(bad, strconv.Quote(n))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return badRequest("params %s: the workflow marks them secret and a plan keeps its params readable; leave them out (the run takes the workflow's values) or run without a plan", strings.Join(bad, ", "))
	}
	return nil
}

// checkRunParams refuses param names that are not environment variable
// names and values params cannot hold (as a run's).
func checkRunParams(ps map[string]string) error {
	var bad []string
	for k := range ps {
		if !validEnvName(k) {
			bad = append(bad, strconv.Quote(k))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return badRequest("params: %s: a param name must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)", strings.Join(bad, ", "))
	}
	if err := params.CheckAll(ps); err != nil {
		return badRequest("%v", err)
	}
	return nil
}
