package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Plans (docs/architecture.md, "Plans"): POST /instances/{id}/plan answers
// what a rerun or recover_failed would run, downstream included, and keeps
// it; POST /plans/{id}/apply runs exactly that, or answers 409 naming what
// changed.

// PlanRequest is the body of POST /api/v1/instances/{id}/plan.
type PlanRequest struct {
	Action     string `json:"action"`               // rerun or recover_failed
	Downstream string `json:"downstream,omitempty"` // none (default), direct or all
}

// Plan is a stored plan.
type Plan struct {
	ID         int64  `json:"id"`
	InstanceID int64  `json:"instance_id"`
	Action     string `json:"action"`
	Downstream string `json:"downstream"`
	// Instances are the runs the plan runs, the root first; each with the
	// tasks it runs, what they wait on and estimates.
	Instances []plan.Planned  `json:"instances"`
	Estimate  plan.Estimate   `json:"estimate"`
	Conflicts []plan.Conflict `json:"conflicts"`
	// Blocked: a blocking conflict; the plan cannot be applied.
	Blocked   bool     `json:"blocked"`
	Projects  []string `json:"projects"`
	Summary   string   `json:"summary"`
	CreatedBy string   `json:"created_by"`
	CreatedAt Time     `json:"created_at"`
	ExpiresAt Time     `json:"expires_at"`
	AppliedAt *Time    `json:"applied_at,omitempty"`
	AppliedBy string   `json:"applied_by,omitempty"`
	// Commands are the commands an apply wrote (its answer only).
	Commands []int64 `json:"commands,omitempty"`
	// Start is what a plan of new runs (rerun_from, backfill) writes;
	// its apply answers the run it started or the backfill.
	Start      *plan.Start `json:"start,omitempty"`
	Started    []int64     `json:"started,omitempty"`
	BackfillID int64       `json:"backfill_id,omitempty"`
	// Emit is the dataset event a dataset event's plan posts; its apply
	// answers the event's id (the leader then decides it, as planned).
	Emit    *plan.Emit `json:"emit,omitempty"`
	EventID int64      `json:"event_id,omitempty"`
}

func fromImpactPlan(p store.Plan) Plan {
	out := Plan{ID: p.ID, InstanceID: p.Instance, Action: string(p.Plan.Action), Downstream: string(p.Plan.Downstream),
		Instances: p.Plan.Instances, Estimate: p.Plan.Estimate, Conflicts: p.Plan.Conflicts, Blocked: p.Plan.Blocked(),
		Projects: p.Plan.Projects(), Summary: p.Plan.Summary(), CreatedBy: p.CreatedBy, CreatedAt: timeOf(p.CreatedAt),
		ExpiresAt: timeOf(p.ExpiresAt), AppliedBy: p.AppliedBy, Commands: p.Commands,
		Start: p.Plan.Start, Started: p.Started, BackfillID: p.Backfill, Emit: p.Plan.Emit, EventID: p.Event}
	if p.AppliedAt != nil {
		t := timeOf(*p.AppliedAt)
		out.AppliedAt = &t
	}
	return out
}

func (h *handlers) createPlan(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req PlanRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	kind := model.ActionKind(req.Action)
	var names []string
	for _, a := range plan.Actions {
		names = append(names, string(a))
	}
	if !slices.Contains(plan.Actions, kind) {
		return badRequest("action %s has no plan; plans are for %s", strconv.Quote(req.Action), strings.Join(names, " and "))
	}
	down, err := plan.ParseDownstream(req.Downstream)
	if err != nil {
		return badRequest("%s", err.Error())
	}
	by, err := requestedBy(r, "")
	if err != nil {
		return err
	}
	inst, err := h.Store.InstanceGet(r.Context(), id)
	if err != nil {
		return storeError(err)
	}
	snap, err := h.Store.PlanSnapshot(r.Context(), id, down)
	if err != nil {
		return storeError(err)
	}
	p, err := plan.Make(plan.Request{Action: kind, Instance: id, Downstream: down}, snap)
	if err != nil {
		return err
	}
	if err := h.planVisible(r, p); err != nil {
		return err
	}
	stored, err := h.Store.PlanCreate(r.Context(), inst.ProjectID, id, p, by)
	if err != nil {
		return storeError(err)
	}
	w.Header().Set("Location", "/api/v1/plans/"+strconv.FormatInt(stored.ID, 10))
	writeJSON(w, http.StatusCreated, fromImpactPlan(stored))
	return nil
}

// planVisible refuses a plan that reaches runs of projects the caller may
// not view, without naming them: a plan shows every run it would start.
func (h *handlers) planVisible(r *http.Request, p plan.Plan) error {
	hidden, err := h.planHidden(r, p)
	if err != nil || hidden == 0 {
		return err
	}
	return forbidden("the plan reaches runs in %d project(s) you hold no grant on; plan with a smaller downstream, or ask their owners", hidden)
}

// planHidden counts the projects of p the caller may not view.
func (h *handlers) planHidden(r *http.Request, p plan.Plan) (int, error) {
	c := callerOf(r.Context())
	if c == nil || c.admin() {
		return 0, nil
	}
	hidden := 0
	for _, name := range p.Projects() {
		l, err := h.projectLevel(r, c, name)
		if err != nil {
			return 0, err
		}
		if model.GrantRank(l) < model.GrantRank(model.GrantView) {
			hidden++
		}
	}
	return hidden, nil
}

// projectLevel is c's grant on project name ("" when it is gone).
func (h *handlers) projectLevel(r *http.Request, c *caller, name string) (string, error) {
	pr, err := h.Store.ProjectGet(r.Context(), name)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", nil
		}
		return "", err
	}
	return h.level(r.Context(), c, pr.ID)
}

// getPlanFor reads plan {id} for the caller: a plan reaching a project the
// caller may not view is answered as a missing one.
func (h *handlers) getPlanFor(r *http.Request) (store.Plan, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.Plan{}, err
	}
	p, err := h.Store.PlanGet(r.Context(), id)
	if err != nil {
		return p, storeError(err)
	}
	hidden, err := h.planHidden(r, p.Plan)
	if err != nil {
		return p, err
	}
	if hidden > 0 {
		return p, errNotFound(fmt.Sprintf("plan %d: %s", id, store.ErrNotFound.Error()))
	}
	return p, nil
}

func (h *handlers) getPlan(w http.ResponseWriter, r *http.Request) error {
	p, err := h.getPlanFor(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fromImpactPlan(p))
	return nil
}

// applyPlan runs plan {id}: the caller needs operate on every project of
// the plan.
func (h *handlers) applyPlan(w http.ResponseWriter, r *http.Request) error {
	p, err := h.getPlanFor(r)
	if err != nil {
		return err
	}
	if c := callerOf(r.Context()); c != nil && !c.admin() {
		for _, name := range p.Plan.Projects() {
			l, err := h.projectLevel(r, c, name)
			if err != nil {
				return err
			}
			if model.GrantRank(l) < model.GrantRank(model.GrantOperate) {
				return forbidden("applying plan %d needs operate on every project of the plan; user %q has %s on project %q",
					p.ID, c.name, l, name)
			}
		}
	}
	by, err := requestedBy(r, "")
	if err != nil {
		return err
	}
	applied, err := h.Store.PlanApply(r.Context(), p.ID, by, time.Now().UTC())
	if err != nil {
		return storeError(err)
	}
	if h.Notify != nil {
		h.Notify()
	}
	writeJSON(w, http.StatusAccepted, fromImpactPlan(applied))
	return nil
}
