package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/beluga-scheduler/beluga/common/gitsync"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/specdiff"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Promotion with review (README, "Promotion with review"): a change
// request carries a version of a source project's workflow into a target
// project; a user with approve on the target, never its author, approves
// (which applies it) or rejects it.

// promotionStore is what the promotion handlers use.
type promotionStore interface {
	PromotionGateGet(ctx context.Context, project string) (model.PromotionGate, error)
	PromotionGatePut(ctx context.Context, g model.PromotionGate) (model.PromotionGate, error)
	PromotionPin(ctx context.Context, project, name string) (int, error)
	ChangeRequestCreate(ctx context.Context, source, name string, version int, target, author, message string) (model.ChangeRequest, error)
	ChangeRequestGet(ctx context.Context, target string, id int64) (model.ChangeRequest, error)
	ChangeRequestList(ctx context.Context, target, state string, limit int) ([]model.ChangeRequest, error)
	ChangeRequestReject(ctx context.Context, target string, id int64, reviewer, comment string) (model.ChangeRequest, error)
	ChangeRequestApply(ctx context.Context, target string, id int64, reviewer, comment string, wf *spec.Workflow) (model.ChangeRequest, error)
	DriftList(ctx context.Context, project, name string) ([]model.Drift, error)
}

// maxReviewText bounds a request's message and a review's comment.
const maxReviewText = 4096

// PromotionGateRequest is the body of PUT .../projects/{project}/promotion.
type PromotionGateRequest struct {
	// SourceProject is the only project requests may come from ("": any).
	SourceProject string `json:"source_project,omitempty"`
	// RequireReview gates the project: its schedules run the latest
	// promoted version of each workflow, never a direct edit.
	RequireReview bool `json:"require_review"`
	// AlertChannels are told once per drift.
	AlertChannels []string `json:"alert_channels,omitempty"`
}

// PromotionGate answers GET and PUT .../projects/{project}/promotion:
// the setting and the project's drifted workflows.
type PromotionGate struct {
	Project       string   `json:"project"`
	SourceProject string   `json:"source_project"`
	RequireReview bool     `json:"require_review"`
	AlertChannels []string `json:"alert_channels"`
	UpdatedBy     string   `json:"updated_by,omitempty"`
	UpdatedAt     *Time    `json:"updated_at,omitempty"`
	Drift         []Drift  `json:"drift"`
}

// Drift is a gated workflow edited outside promotion: since_version is the
// first version so made; its schedules still run promoted_version.
type Drift struct {
	Workflow        string `json:"workflow"`
	SinceVersion    int    `json:"since_version"`
	PromotedVersion int    `json:"promoted_version"`
	EditedBy        string `json:"edited_by"`
	DetectedAt      Time   `json:"detected_at"`
}

// PromoteRequest is the body of POST .../projects/{project}/promotions:
// what to promote into the project of the path.
type PromoteRequest struct {
	SourceProject string `json:"source_project"`
	Workflow      string `json:"workflow"`
	Version       int    `json:"version,omitempty"` // 0 or left out: the source's latest
	Message       string `json:"message,omitempty"`
}

// ReviewRequest is the optional body of .../promotions/{id}/approve and
// .../reject.
type ReviewRequest struct {
	Comment string `json:"comment,omitempty"`
}

// ChangeRequest is a change request; Diff (and Stale, CanReview) only on a
// read of one.
type ChangeRequest struct {
	ID             int64  `json:"id"`
	TargetProject  string `json:"target_project"`
	Workflow       string `json:"workflow"`
	SourceProject  string `json:"source_project"`
	SourceVersion  int    `json:"source_version"`
	SourceHash     string `json:"source_hash"`
	BaseVersion    int    `json:"base_version"` // the target's version it was made against (0: none)
	Message        string `json:"message"`
	Author         string `json:"author"`
	State          string `json:"state"` // open, applied or rejected
	Reviewer       string `json:"reviewer,omitempty"`
	ReviewComment  string `json:"review_comment,omitempty"`
	AppliedVersion int    `json:"applied_version,omitempty"` // the target version the approval made
	CreatedAt      Time   `json:"created_at"`
	ReviewedAt     *Time  `json:"reviewed_at,omitempty"`
	// TargetVersion is the target's latest version now; Stale says it is
	// no longer BaseVersion, so an approval is refused.
	TargetVersion int  `json:"target_version,omitempty"`
	Stale         bool `json:"stale,omitempty"`
	// CanReview says the caller may approve or reject it now.
	CanReview bool           `json:"can_review"`
	Diff      *specdiff.Diff `json:"diff,omitempty"`
}

// ChangeRequestList answers GET .../projects/{project}/promotions.
type ChangeRequestList struct {
	Requests []ChangeRequest `json:"requests"`
}

func changeRequestOf(c model.ChangeRequest) ChangeRequest {
	return ChangeRequest{ID: c.ID, TargetProject: c.TargetProject, Workflow: c.Workflow, SourceProject: c.SourceProject,
		SourceVersion: c.SourceVersion, SourceHash: c.SourceHash, BaseVersion: c.BaseVersion, Message: c.Message,
		Author: c.Author, State: c.State, Reviewer: c.Reviewer, ReviewComment: c.ReviewComment,
		AppliedVersion: c.AppliedVersion, CreatedAt: timeOf(c.CreatedAt), ReviewedAt: timePtr(c.ReviewedAt)}
}

func (h *handlers) getPromotionGate(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	g, err := h.Store.PromotionGateGet(r.Context(), project)
	if err != nil {
		return storeError(err)
	}
	return h.writeGate(w, r, http.StatusOK, g)
}

func (h *handlers) writeGate(w http.ResponseWriter, r *http.Request, status int, g model.PromotionGate) error {
	drift, err := h.Store.DriftList(r.Context(), g.Project, "")
	if err != nil {
		return storeError(err)
	}
	out := PromotionGate{Project: g.Project, SourceProject: g.SourceProject, RequireReview: g.RequireReview,
		AlertChannels: g.AlertChannels, UpdatedBy: g.UpdatedBy, Drift: []Drift{}}
	if !g.UpdatedAt.IsZero() {
		out.UpdatedAt = optTime(g.UpdatedAt)
	}
	for _, d := range drift {
		out.Drift = append(out.Drift, Drift{Workflow: d.Workflow, SinceVersion: d.SinceVersion, PromotedVersion: d.PromotedVersion,
			EditedBy: d.EditedBy, DetectedAt: timeOf(d.DetectedAt)})
	}
	writeJSON(w, status, out)
	return nil
}

func (h *handlers) putPromotionGate(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	var req PromotionGateRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	req.SourceProject = strings.TrimSpace(req.SourceProject)
	if req.SourceProject != "" && !validName(req.SourceProject) {
		return badRequest("source_project %q is not a project name: %s", req.SourceProject, nameRule)
	}
	if req.SourceProject != "" {
		if ok, err := h.mayView(r.Context(), req.SourceProject); err != nil {
			return err
		} else if !ok {
			return badRequest("source_project: project %q: not found", req.SourceProject)
		}
	}
	if missing, err := h.Store.AlertChannelMissing(r.Context(), req.AlertChannels); err != nil {
		return err
	} else if len(missing) > 0 {
		return badRequest("alert_channels: no alert channel %s (create it with PUT /api/v1/alert-channels/{name})", strings.Join(missing, ", "))
	}
	g, err := h.Store.PromotionGatePut(r.Context(), model.PromotionGate{Project: project, SourceProject: req.SourceProject,
		RequireReview: req.RequireReview, AlertChannels: req.AlertChannels, UpdatedBy: callerName(r)})
	if errors.Is(err, store.ErrNotFound) && req.SourceProject != "" {
		return badRequest("source_project: %s", err.Error())
	}
	if err != nil {
		return storeError(err)
	}
	return h.writeGate(w, r, http.StatusOK, g)
}

// mayView says whether the caller may see project name (a missing one:
// false, as one they may not see).
func (h *handlers) mayView(ctx context.Context, name string) (bool, error) {
	l, _, err := h.levelOn(ctx, name)
	return model.GrantRank(l) >= model.GrantRank(model.GrantView), err
}

// levelOn is the caller's level on project name ("" none or no such
// project) and the project.
func (h *handlers) levelOn(ctx context.Context, name string) (string, model.Project, error) {
	p, err := h.Store.ProjectGet(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return "", p, nil
	}
	if err != nil {
		return "", p, err
	}
	c := callerOf(ctx)
	if c == nil {
		return model.GrantOwner, p, nil
	}
	l, err := h.level(ctx, c, p.ID)
	return l, p, err
}

func (h *handlers) createPromotion(w http.ResponseWriter, r *http.Request) error {
	target, err := pathName(r, "project")
	if err != nil {
		return err
	}
	var req PromoteRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	var bad []string
	if !validName(req.SourceProject) {
		bad = append(bad, fmt.Sprintf("source_project %q is not a project name: %s", req.SourceProject, nameRule))
	}
	if !validName(req.Workflow) {
		bad = append(bad, fmt.Sprintf("workflow %q is not a workflow name: %s", req.Workflow, nameRule))
	}
	if req.Version < 0 {
		bad = append(bad, fmt.Sprintf("version must be a version number (or left out for the latest), got %d", req.Version))
	}
	if len(req.Message) > maxReviewText || strings.ContainsRune(req.Message, 0) {
		bad = append(bad, fmt.Sprintf("message: at most %d bytes, no NUL", maxReviewText))
	}
	if len(bad) > 0 {
		return badRequest("%s", strings.Join(bad, "; "))
	}
	ctx := r.Context()
	// The author edits the source: a request proposes their own work.
	l, _, err := h.levelOn(ctx, req.SourceProject)
	if err != nil {
		return err
	}
	if model.GrantRank(l) < model.GrantRank(model.GrantView) {
		return errNotFound(fmt.Sprintf("project %q: %s", req.SourceProject, store.ErrNotFound.Error()))
	}
	if model.GrantRank(l) < model.GrantRank(model.GrantEdit) {
		return forbidden("promoting from project %q needs edit on it; user %q has %s", req.SourceProject, callerName(r), l)
	}
	g, err := h.Store.PromotionGateGet(ctx, target)
	if err != nil {
		return storeError(err)
	}
	if g.SourceProject != "" && g.SourceProject != req.SourceProject {
		return badRequest("project %q takes promotions from project %q only, not %q", target, g.SourceProject, req.SourceProject)
	}
	c, err := h.Store.ChangeRequestCreate(ctx, req.SourceProject, req.Workflow, req.Version, target, callerName(r), req.Message)
	if err != nil {
		return storeError(err)
	}
	out, err := h.withDiff(ctx, c)
	if err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/api/v1/projects/%s/promotions/%d", c.TargetProject, c.ID))
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (h *handlers) listPromotions(w http.ResponseWriter, r *http.Request) error {
	target, err := pathName(r, "project")
	if err != nil {
		return err
	}
	state := r.URL.Query().Get("state")
	if state != "" && !slices.Contains([]string{model.RequestOpen, model.RequestApplied, model.RequestRejected}, state) {
		return badRequest("query parameter state: want open, applied or rejected, got %q", state)
	}
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	cs, err := h.Store.ChangeRequestList(r.Context(), target, state, int(limit))
	if err != nil {
		return storeError(err)
	}
	out := ChangeRequestList{Requests: make([]ChangeRequest, len(cs))}
	for i, c := range cs {
		out.Requests[i] = changeRequestOf(c)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getPromotion(w http.ResponseWriter, r *http.Request) error {
	target, err := pathName(r, "project")
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := h.Store.ChangeRequestGet(r.Context(), target, id)
	if err != nil {
		return storeError(err)
	}
	out, err := h.withDiff(r.Context(), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// withDiff is c with the diff from the target's version it was made
// against to the proposed spec, secrets masked on both sides, and what the
// caller may do with it.
func (h *handlers) withDiff(ctx context.Context, c model.ChangeRequest) (ChangeRequest, error) {
	out := changeRequestOf(c)
	from, fromName := []byte("{}"), fmt.Sprintf("%s/%s (none)", c.TargetProject, c.Workflow)
	if c.BaseVersion > 0 {
		base, err := h.Store.WorkflowGet(ctx, c.TargetProject, c.Workflow, c.BaseVersion)
		switch {
		case err == nil:
			from, fromName = secret.MaskJSON(base.SpecJSON), fmt.Sprintf("%s/%s v%d", c.TargetProject, c.Workflow, c.BaseVersion)
		case !errors.Is(err, store.ErrNotFound): // deleted since: diff against nothing
			return out, storeError(err)
		}
	}
	d, err := specdiff.Compare(from, secret.MaskJSON(c.SpecJSON), fromName,
		fmt.Sprintf("%s/%s v%d", c.SourceProject, c.Workflow, c.SourceVersion))
	if err != nil {
		return out, fmt.Errorf("diff change request %d: %w", c.ID, err)
	}
	out.Diff = &d
	if c.State == model.RequestOpen {
		cur, err := h.Store.WorkflowGet(ctx, c.TargetProject, c.Workflow, 0)
		switch {
		case err == nil:
			out.TargetVersion = cur.Version
		case !errors.Is(err, store.ErrNotFound):
			return out, storeError(err)
		}
		out.Stale = out.TargetVersion != c.BaseVersion
		if err := h.mayReview(ctx, c); err == nil {
			out.CanReview = true
		} else if _, ok := err.(*httpError); !ok {
			return out, err
		}
	}
	return out, nil
}

// mayReview refuses a reviewer who made the request (even an admin: a
// second pair of eyes is the point) or lacks approve on its target.
func (h *handlers) mayReview(ctx context.Context, c model.ChangeRequest) error {
	who := ""
	if c := callerOf(ctx); c != nil {
		who = c.name
	}
	if store.NormalUserName(who) == store.NormalUserName(c.Author) {
		return forbidden("user %q made change request %d and cannot review it; another user with approve on project %q must",
			who, c.ID, c.TargetProject)
	}
	l, _, err := h.levelOn(ctx, c.TargetProject)
	if err != nil {
		return err
	}
	if model.GrantRank(l) < model.GrantRank(model.GrantApprove) {
		return forbidden("reviewing change requests of project %q needs approve on it; user %q has %s", c.TargetProject, who, l)
	}
	return nil
}

// review reads the request and body of an approve or reject and checks
// the caller may review it.
func (h *handlers) review(r *http.Request) (model.ChangeRequest, ReviewRequest, error) {
	var req ReviewRequest
	target, err := pathName(r, "project")
	if err != nil {
		return model.ChangeRequest{}, req, err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return model.ChangeRequest{}, req, err
	}
	if err := decodeJSON(r, &req, true); err != nil {
		return model.ChangeRequest{}, req, err
	}
	if len(req.Comment) > maxReviewText || strings.ContainsRune(req.Comment, 0) {
		return model.ChangeRequest{}, req, badRequest("comment: at most %d bytes, no NUL", maxReviewText)
	}
	c, err := h.Store.ChangeRequestGet(r.Context(), target, id)
	if err != nil {
		return c, req, storeError(err)
	}
	if err := h.mayReview(r.Context(), c); err != nil {
		return c, req, err
	}
	if c.State != model.RequestOpen {
		return c, req, conflict("change request %d is %s (by %s); only an open request is reviewed", c.ID, c.State, c.Reviewer)
	}
	return c, req, nil
}

func reviewStoreError(err error) error {
	switch {
	case errors.Is(err, store.ErrRequestClosed), errors.Is(err, store.ErrTargetMoved):
		return conflict("%s", err.Error())
	}
	return applyStoreError(err)
}

func (h *handlers) approvePromotion(w http.ResponseWriter, r *http.Request) error {
	c, req, err := h.review(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	// The spec is checked again as the reviewer applies it: their code
	// gate, tenants and walls, on the target.
	wf, err := spec.Parse(c.SpecJSON)
	if err != nil {
		return badRequest("change request %d: its spec no longer parses: %s", c.ID, err.Error())
	}
	if wf.Name != c.Workflow {
		return badRequest("change request %d: its spec names %q, not %q", c.ID, wf.Name, c.Workflow)
	}
	if err := h.checkParsed(ctx, c.TargetProject, wf, true); err != nil {
		return err
	}
	// A target bound to Git takes the approval as it takes a save: in
	// write_back a commit by the reviewer first (else the next sync would
	// put the branch's version back), in read_only a 409 naming the file.
	file, err := gitsync.SpecFile(wf)
	if err != nil {
		return fmt.Errorf("the spec of change request %d as a file: %w", c.ID, err)
	}
	msg := fmt.Sprintf("beluga - promote %s/%s version %d (change request %d, approved by %s)",
		c.SourceProject, c.Workflow, c.SourceVersion, c.ID, callerName(r))
	_, path, err := h.gitEdit(ctx, c.TargetProject, c.Workflow, file, msg)
	if err != nil {
		return err
	}
	out, err := h.Store.ChangeRequestApply(ctx, c.TargetProject, c.ID, callerName(r), req.Comment, wf)
	if err != nil {
		return reviewStoreError(err)
	}
	if path != "" {
		if err := h.Store.GitOriginSet(ctx, c.TargetProject, c.Workflow, path); err != nil {
			return err
		}
	}
	res := changeRequestOf(out)
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (h *handlers) rejectPromotion(w http.ResponseWriter, r *http.Request) error {
	c, req, err := h.review(r)
	if err != nil {
		return err
	}
	out, err := h.Store.ChangeRequestReject(r.Context(), c.TargetProject, c.ID, callerName(r), req.Comment)
	if err != nil {
		return reviewStoreError(err)
	}
	writeJSON(w, http.StatusOK, changeRequestOf(out))
	return nil
}

// schedulePin is the pin a schedule of project/name takes: in a project
// that requires review, the version promotion made current, and a pin
// to any other version is refused.
func (h *handlers) schedulePin(ctx context.Context, project, name string, asked int) (int, error) {
	pin, err := h.Store.PromotionPin(ctx, project, name)
	if err != nil {
		return 0, storeError(err)
	}
	if pin == 0 {
		return asked, nil
	}
	if asked != 0 && asked != pin {
		return 0, badRequest("project %q requires review: the schedules of %q run version %d, the one promotion made current; "+
			"leave pin_version out (or promote version %d from the source project)", project, name, pin, asked)
	}
	return pin, nil
}
