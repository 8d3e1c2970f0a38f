package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/trigger"
)

// Webhook triggers (README, "Webhook triggers"): a workflow's editors
// manage its triggers; a delivery to POST /api/v1/hooks/{id} is
// authenticated by the trigger's own token, not a user's, and every one
// the trigger exists for is recorded with its outcome.

// HeaderTriggerToken carries a trigger's token for senders that cannot set
// Authorization (the alternative to Authorization: Bearer).
const HeaderTriggerToken = "X-Beluga-Token"

// HeaderIdempotencyKey names a delivery: a second with the same key starts
// no second run.
const HeaderIdempotencyKey = "Idempotency-Key"

func triggerPath(r *http.Request) (project, workflow, name string, err error) {
	if project, workflow, err = projectAndName(r); err != nil {
		return "", "", "", err
	}
	if name, err = pathName(r, "trigger"); err != nil {
		return "", "", "", err
	}
	return project, workflow, name, nil
}

func (h *handlers) createTrigger(w http.ResponseWriter, r *http.Request) error {
	project, workflow, err := projectAndName(r)
	if err != nil {
		return err
	}
	var req TriggerRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if !validName(req.Name) {
		return badRequest("trigger name %q is not valid: %s", req.Name, nameRule)
	}
	if err := trigger.CheckMapping(req.Params); err != nil {
		return badRequest("trigger %q: %v", req.Name, err)
	}
	// A trigger starts runs as its creator would: the code gate of
	// unsandboxed servers applies to the creator, as to a schedule's.
	if err := h.codeGateStored(r, project, workflow, 0); err != nil {
		return err
	}
	secret := trigger.NewToken()
	t := model.Trigger{Project: project, Workflow: workflow, Name: req.Name, TokenHash: HashToken(secret), Params: req.Params,
		Enabled: req.Enabled == nil || *req.Enabled, CreatedBy: callerOf(r.Context()).name}
	t, err = h.Store.TriggerCreate(r.Context(), t)
	if err != nil {
		return storeError(err)
	}
	w.Header().Set("Location", r.URL.Path+"/"+t.Name)
	writeJSON(w, http.StatusCreated, NewTrigger{Trigger: fromTrigger(t), Token: secret})
	return nil
}

func (h *handlers) listTriggers(w http.ResponseWriter, r *http.Request) error {
	project, workflow, err := projectAndName(r)
	if err != nil {
		return err
	}
	ts, err := h.Store.TriggerList(r.Context(), project, workflow)
	if err != nil {
		return storeError(err)
	}
	out := List[Trigger]{Items: make([]Trigger, len(ts))}
	for i, t := range ts {
		out.Items[i] = fromTrigger(t)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getTrigger(w http.ResponseWriter, r *http.Request) error {
	project, workflow, name, err := triggerPath(r)
	if err != nil {
		return err
	}
	t, err := h.Store.TriggerGet(r.Context(), project, workflow, name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromTrigger(t))
	return nil
}

func (h *handlers) updateTrigger(w http.ResponseWriter, r *http.Request) error {
	project, workflow, name, err := triggerPath(r)
	if err != nil {
		return err
	}
	var req TriggerUpdateRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if req.Params != nil {
		if err := trigger.CheckMapping(req.Params); err != nil {
			return badRequest("trigger %q: %v", name, err)
		}
	}
	if req.Enabled != nil && *req.Enabled {
		if err := h.codeGateStored(r, project, workflow, 0); err != nil {
			return err
		}
	}
	t, err := h.Store.TriggerUpdate(r.Context(), project, workflow, name, store.TriggerChange{Enabled: req.Enabled, Params: req.Params})
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromTrigger(t))
	return nil
}

func (h *handlers) rotateTrigger(w http.ResponseWriter, r *http.Request) error {
	project, workflow, name, err := triggerPath(r)
	if err != nil {
		return err
	}
	secret := trigger.NewToken()
	t, err := h.Store.TriggerUpdate(r.Context(), project, workflow, name, store.TriggerChange{TokenHash: HashToken(secret)})
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, NewTrigger{Trigger: fromTrigger(t), Token: secret})
	return nil
}

func (h *handlers) deleteTrigger(w http.ResponseWriter, r *http.Request) error {
	project, workflow, name, err := triggerPath(r)
	if err != nil {
		return err
	}
	if err := h.Store.TriggerDelete(r.Context(), project, workflow, name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handlers) listTriggerDeliveries(w http.ResponseWriter, r *http.Request) error {
	project, workflow, name, err := triggerPath(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	before, err := queryInt(r, "before", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	t, err := h.Store.TriggerGet(r.Context(), project, workflow, name)
	if err != nil {
		return storeError(err)
	}
	ds, err := h.Store.TriggerDeliveries(r.Context(), t.ID, before, int(limit))
	if err != nil {
		return storeError(err)
	}
	out := List[TriggerDelivery]{Items: make([]TriggerDelivery, len(ds))}
	for i, d := range ds {
		out.Items[i] = fromDelivery(d)
	}
	if len(ds) == int(limit) {
		out.NextCursor = strconv.FormatInt(ds[len(ds)-1].ID, 10)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// hookToken is the trigger token a delivery carries: X-Beluga-Token when
// set (a proxy in front may use Authorization for itself), else
// Authorization: Bearer.
func hookToken(r *http.Request) string {
	if t := r.Header.Get(HeaderTriggerToken); t != "" {
		return strings.TrimSpace(t)
	}
	t, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(t)
}

// deliver is POST /api/v1/hooks/{id}. An unknown trigger is a 404 and
// nothing is recorded (a probe for ids writes nothing); every other
// delivery is recorded: refused with the reason it is answered with, or
// accepted (201 with the run) in the run's own transaction, or a
// duplicate of an earlier key (200 with that delivery's run).
func (h *handlers) deliver(w http.ResponseWriter, r *http.Request) error {
	received := time.Now()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return errNotFound(fmt.Sprintf("trigger %q: %s", r.PathValue("id"), store.ErrNotFound))
	}
	t, err := h.Store.TriggerByID(r.Context(), id)
	if err != nil {
		return storeError(err)
	}
	key := r.Header.Get(HeaderIdempotencyKey)
	refuse := func(e *httpError) error {
		k := key
		if trigger.CheckKey(k) != nil {
			k = "" // not stored as sent: the reason says why
		}
		d, err := h.Store.TriggerRefuse(r.Context(), store.TriggerRefusal{TriggerID: t.ID, Key: k, Reason: e.msg, At: received, Keep: trigger.RefusedKept})
		if err != nil {
			return fmt.Errorf("record refused delivery to trigger %d: %w", t.ID, err)
		}
		w.Header().Set("X-Beluga-Delivery", strconv.FormatInt(d.ID, 10))
		return e
	}
	if !trigger.HashMatches(HashToken(hookToken(r)), t.TokenHash) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="beluga-trigger"`)
		return refuse(unauthorized(fmt.Sprintf("trigger %d: the token is missing or wrong: send the trigger's token as "+
			"Authorization: Bearer <token> or %s: <token>", t.ID, HeaderTriggerToken)))
	}
	if !t.Enabled {
		return refuse(forbidden("trigger %q of workflow %q is disabled", t.Name, t.Workflow))
	}
	if err := trigger.CheckKey(key); err != nil {
		return refuse(badRequest("trigger %q: %v", t.Name, err))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, trigger.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return refuse(tooLarge(trigger.MaxBody))
		}
		return refuse(badRequest("trigger %q: read the body: %v", t.Name, err))
	}
	ps, err := trigger.Params(body, t.Params)
	if err != nil {
		return refuse(badRequest("trigger %q: %v", t.Name, err))
	}
	d, err := h.Store.TriggerDeliver(r.Context(), store.TriggerDelivery{TriggerID: t.ID, Key: key, Params: ps, ReceivedAt: received})
	if err != nil {
		// Disabled, or its workflow gone, since it was read: refused.
		var he *httpError
		if errors.As(storeError(err), &he) {
			return refuse(he)
		}
		h.log.Error("trigger delivery failed", zap.Int64("trigger", t.ID), zap.String("request_id", requestID(r.Context())), zap.Error(err))
		return err
	}
	if d.Outcome == model.DeliveryAccepted {
		failpoint.Hit(failpoint.AfterTriggerDeliver)
	}
	if h.Notify != nil && d.Outcome == model.DeliveryAccepted {
		h.Notify()
	}
	w.Header().Set("X-Beluga-Delivery", strconv.FormatInt(d.ID, 10))
	w.Header().Set("Location", "/api/v1/instances/"+strconv.FormatInt(d.RunID, 10))
	status := http.StatusCreated
	if d.Outcome == model.DeliveryDuplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, fromDelivery(d))
	return nil
}
