package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/beluga-scheduler/beluga/common/alert"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// unknownAlertChannels names the alert channels a spec uses that do not
// exist: a workflow cannot be applied with them.
func (h *handlers) unknownAlertChannels(ctx context.Context, a *spec.Alerts) ([]string, error) {
	if a == nil {
		return nil, nil
	}
	missing, err := h.Store.AlertChannelMissing(ctx, a.Channels)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(missing))
	for i, m := range missing {
		out[i] = fmt.Sprintf("alerts.channels: no alert channel %q (create it with PUT /api/v1/alert-channels/%s)", m, m)
	}
	return out, nil
}

// AlertChannelRequest is the body of PUT /api/v1/alert-channels/{name}: a
// kind and its settings (common/alert.Config). A secret (the SMTP password,
// a webhook's signing key) left out keeps the stored one; "" removes it.
type AlertChannelRequest struct {
	Kind string `json:"kind"`
	alert.Config
	Secret *string `json:"secret,omitempty"`
}

// AlertChannel is a stored channel without its secret.
type AlertChannel struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	alert.Config
	SecretSet bool `json:"secret_set"`
	CreatedAt Time `json:"created_at"`
	UpdatedAt Time `json:"updated_at"`
}

func fromAlertChannel(c model.AlertChannel) AlertChannel {
	out := AlertChannel{Name: c.Name, Kind: c.Kind, SecretSet: c.SecretSealed != "",
		CreatedAt: timeOf(c.CreatedAt), UpdatedAt: timeOf(c.UpdatedAt)}
	_ = json.Unmarshal(c.ConfigJSON, &out.Config) // written by putAlertChannel
	return out
}

func (h *handlers) putAlertChannel(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	var req AlertChannelRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if err := alert.Check(req.Kind, req.Config); err != nil {
		return badRequest("alert channel %q: %v", name, err)
	}
	cfg, err := json.Marshal(req.Config)
	if err != nil {
		return err
	}
	c := model.AlertChannel{Name: name, Kind: req.Kind, ConfigJSON: cfg, SecretSealed: store.KeepSecret}
	if req.Secret != nil {
		c.SecretSealed = ""
		if *req.Secret != "" {
			if len(*req.Secret) > 1024 {
				return badRequest("alert channel %q: secret is longer than 1024 bytes", name)
			}
			if h.Secrets == nil {
				return noKey("store an alert channel's secret")
			}
			if c.SecretSealed, err = h.Secrets.SealFor(*req.Secret, alert.SealContext(name)); err != nil {
				return err
			}
		}
	}
	got, created, err := h.Store.AlertChannelPut(r.Context(), c)
	if err != nil {
		return storeError(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/alert-channels/"+name)
	}
	writeJSON(w, status, fromAlertChannel(got))
	return nil
}

func (h *handlers) listAlertChannels(w http.ResponseWriter, r *http.Request) error {
	cs, err := h.Store.AlertChannelList(r.Context())
	if err != nil {
		return err
	}
	out := List[AlertChannel]{Items: make([]AlertChannel, len(cs))}
	for i, c := range cs {
		out.Items[i] = fromAlertChannel(c)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getAlertChannel(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	c, err := h.Store.AlertChannelGet(r.Context(), name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromAlertChannel(c))
	return nil
}

func (h *handlers) deleteAlertChannel(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	if err := h.Store.AlertChannelDelete(r.Context(), name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testAlertChannel queues a test alert for the leader to send (so a
// script channel runs on the master's host, as real alerts do) and answers
// with its outcome once known, or as still pending after 20 s.
func (h *handlers) testAlertChannel(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	if _, err := h.Store.AlertChannelGet(r.Context(), name); err != nil {
		return storeError(err)
	}
	a, err := h.Store.AlertAddTest(r.Context(), name)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for a.State == model.AlertPending && a.Attempts == 0 && time.Now().Before(deadline) {
		select {
		case <-r.Context().Done():
			return nil
		case <-time.After(100 * time.Millisecond): // the leader sends within its poll
		}
		if a, err = h.Store.AlertGet(r.Context(), a.ID); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// listAlerts is the history of alerts, newest first.
func (h *handlers) listAlerts(w http.ResponseWriter, r *http.Request) error {
	inst, err := queryInt(r, "instance", 0, 1, 1<<62)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	ch := r.URL.Query().Get("channel")
	if ch != "" && !validName(ch) {
		return badRequest("query parameter channel: %q is not a valid name: %s", ch, nameRule)
	}
	as, err := h.Store.AlertList(r.Context(), store.AlertFilter{Instance: inst, Channel: ch, Limit: int(limit)})
	if err != nil {
		return err
	}
	if as == nil {
		as = []model.Alert{}
	}
	writeJSON(w, http.StatusOK, List[model.Alert]{Items: as})
	return nil
}
