package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"encoding/json"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/events"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Event stream tuning: how often a stream looks at the outbox when nothing
// woke it (in a cluster nothing does: the publisher runs in the leader),
// and how often an idle stream sends a comment so proxies keep it open.
const (
	eventPollCluster = 250 * time.Millisecond
	eventPollHub     = time.Second
	eventKeepAlive   = 15 * time.Second
	eventPage        = 500
)

// eventFilter reads the project, workflow, instance and kinds query
// parameters.
func eventFilter(r *http.Request) (model.EventFilter, error) {
	q := r.URL.Query()
	f := model.EventFilter{Project: q.Get("project"), Workflow: q.Get("workflow")}
	for _, c := range [...][2]string{{"project", f.Project}, {"workflow", f.Workflow}} {
		if c[1] != "" && !validName(c[1]) {
			return f, badRequest("query parameter %s: %q is not a valid name: %s", c[0], c[1], nameRule)
		}
	}
	id, err := queryInt(r, "instance", 0, 1, 1<<62)
	if err != nil {
		return f, err
	}
	f.Instance = id
	if q.Has("kinds") {
		if f.Kinds, err = eventKinds(q.Get("kinds")); err != nil {
			return f, err
		}
	}
	return f, nil
}

// eventKinds parses a comma-separated list of event kinds (kinds=instance
// is what a list of instances needs: none of the task events).
func eventKinds(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(model.EventKinds, k) {
			return nil, badRequest("query parameter kinds: %q is not an event kind (one or more of %s, comma-separated)",
				k, strings.Join(model.EventKinds, ", "))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// lastEventSeq is the newest published seq: the hub's when it holds one
// (no query on a busy database), else the outbox's.
func (h *handlers) lastEventSeq(ctx context.Context) (int64, error) {
	if seq, ok := h.streams.hub.Last(); ok {
		return seq, nil
	}
	return h.Store.EventLastSeq(ctx)
}

// events streams published events as server-sent events, each with its
// seq as id. A reconnecting client sends Last-Event-ID (or ?after=) and
// gets every event after it, in order, from the outbox: nothing is missed
// or repeated, whichever API server it reaches. Without either the stream
// starts at the newest event.
func (h *handlers) events(w http.ResponseWriter, r *http.Request) error {
	f, err := eventFilter(r)
	if err != nil {
		return err
	}
	if f.Projects, err = h.viewableNames(r.Context()); err != nil {
		return err
	}
	from := r.Header.Get("Last-Event-ID")
	src := "header Last-Event-ID"
	if from == "" {
		from, src = r.URL.Query().Get("after"), "query parameter after"
	}
	var cursor int64
	if from != "" {
		if cursor, err = strconv.ParseInt(from, 10, 64); err != nil || cursor < 0 {
			return badRequest("%s must be an event id (an integer >= 0), got %q", src, from)
		}
	} else if cursor, err = h.lastEventSeq(r.Context()); err != nil {
		return err
	}
	c := callerOf(r.Context())
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	if c != nil {
		o := &openStream{user: c.id, token: c.tokenID, admin: c.admin(), projects: f.Projects, cancel: cancel}
		if err := h.streams.join(o, int(h.settings.get(ctx, settingStreamsPerUser))); err != nil {
			return err
		}
		defer h.streams.leave(o)
	}
	hub := h.streams.hub
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil // the client is gone or the writer cannot stream
	}
	// Streams wait on the hub (this process's publisher's, or the shared
	// poll's); the timer only covers a reader behind what the hub holds.
	poll := eventPollHub
	closing := serverClosing(ctx)
	idle, alive := time.NewTimer(0), time.NewTicker(eventKeepAlive)
	defer idle.Stop()
	defer alive.Stop()
	var buf []byte
	for {
		wake := hub.Wait() // taken before reading, so no publish is missed
		evs, last, ok := hub.Since(cursor, f, eventPage)
		if !ok { // behind what the hub holds, or no hub: read the outbox
			if last, err = h.Store.EventLastSeq(ctx); err != nil {
				return nil // headers are sent: end the stream, the client resumes
			}
			if evs, err = h.Store.EventList(ctx, cursor, f, eventPage); err != nil {
				return nil
			}
		}
		buf = buf[:0]
		for _, e := range evs {
			data, err := json.Marshal(e)
			if err != nil {
				return nil
			}
			buf = fmt.Appendf(buf, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, data)
			cursor = e.Seq
		}
		if len(evs) < eventPage && last > cursor {
			cursor = last // nothing else up to last passes the filter
		}
		if len(buf) > 0 {
			if _, err := w.Write(buf); err != nil {
				return nil
			}
			if err := rc.Flush(); err != nil {
				return nil
			}
		}
		if len(evs) == eventPage {
			continue
		}
		idle.Reset(poll)
		select {
		case <-ctx.Done():
			if err := context.Cause(ctx); errors.As(err, new(errStreamRevoked)) {
				// EventSource reconnects by itself: the next attempt is refused.
				h.log.Info("event stream ended", zap.Int64("user_id", c.id), zap.Error(err))
				_, _ = fmt.Fprintf(w, ": %s\n\n", err)
				_ = rc.Flush()
			}
			return nil
		case <-closing: // the client reconnects elsewhere, or later, with Last-Event-ID
			return nil
		case <-wake:
		case <-idle.C:
		case <-alive.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return nil
			}
			if err := rc.Flush(); err != nil {
				return nil
			}
		}
	}
}

// SubscriptionRequest is the body of PUT /api/v1/subscriptions/{name}. A
// secret left out keeps the stored one (GET never shows it); "" removes it.
type SubscriptionRequest struct {
	URL        string  `json:"url"`
	Project    string  `json:"project,omitempty"`
	Workflow   string  `json:"workflow,omitempty"`
	InstanceID int64   `json:"instance_id,omitempty"`
	Secret     *string `json:"secret,omitempty"`
}

// Subscription is a stored webhook subscription without its secret.
type Subscription struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	Project    string `json:"project,omitempty"`
	Workflow   string `json:"workflow,omitempty"`
	InstanceID int64  `json:"instance_id,omitempty"`
	SecretSet  bool   `json:"secret_set"`
	// Cursor is the id of the last event delivered (or given up on).
	Cursor    int64 `json:"cursor"`
	CreatedAt Time  `json:"created_at"`
	UpdatedAt Time  `json:"updated_at"`
}

func fromSubscription(s model.Subscription) Subscription {
	return Subscription{Name: s.Name, URL: s.URL, Project: s.Filter.Project, Workflow: s.Filter.Workflow,
		InstanceID: s.Filter.Instance, SecretSet: s.SecretSealed != "", Cursor: s.Cursor,
		CreatedAt: timeOf(s.CreatedAt), UpdatedAt: timeOf(s.UpdatedAt)}
}

// checkWebhookURL accepts absolute http and https URLs only.
func checkWebhookURL(s string) error {
	if s == "" {
		return errors.New("url is required")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q must be an absolute http or https URL", s)
	}
	if len(s) > 2048 {
		return errors.New("url is longer than 2048 characters")
	}
	return nil
}

func (h *handlers) putSubscription(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	var req SubscriptionRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if err := checkWebhookURL(req.URL); err != nil {
		return badRequest("subscription %q: %v", name, err)
	}
	for _, c := range [...][2]string{{"project", req.Project}, {"workflow", req.Workflow}} {
		if c[1] != "" && !validName(c[1]) {
			return badRequest("subscription %q: %s %q is not a valid name: %s", name, c[0], c[1], nameRule)
		}
	}
	if req.InstanceID < 0 {
		return badRequest("subscription %q: instance_id must be positive", name)
	}
	sub := model.Subscription{Name: name, URL: req.URL, SecretSealed: store.KeepSecret,
		Filter: model.EventFilter{Project: req.Project, Workflow: req.Workflow, Instance: req.InstanceID}}
	if req.Secret != nil {
		sub.SecretSealed = ""
		if *req.Secret != "" {
			if strings.TrimSpace(*req.Secret) != *req.Secret || len(*req.Secret) > 1024 {
				return badRequest("subscription %q: secret must not start or end with spaces and is at most 1024 bytes", name)
			}
			if h.Secrets == nil {
				return noKey("store a subscription's signing secret")
			}
			if sub.SecretSealed, err = h.Secrets.SealFor(*req.Secret, events.SealContext(name)); err != nil {
				return err
			}
		}
	}
	got, created, err := h.Store.SubscriptionPut(r.Context(), sub)
	if err != nil {
		return storeError(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/subscriptions/"+name)
	}
	writeJSON(w, status, fromSubscription(got))
	return nil
}

func (h *handlers) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	subs, err := h.Store.SubscriptionList(r.Context())
	if err != nil {
		return err
	}
	out := List[Subscription]{Items: make([]Subscription, len(subs))}
	for i, s := range subs {
		out.Items[i] = fromSubscription(s)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getSubscription(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	s, err := h.Store.SubscriptionGet(r.Context(), name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromSubscription(s))
	return nil
}

func (h *handlers) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	if err := h.Store.SubscriptionDelete(r.Context(), name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listDeliveries is the delivery log of a subscription, newest first.
func (h *handlers) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	ds, err := h.Store.SubscriptionDeliveries(r.Context(), name, int(limit))
	if err != nil {
		return storeError(err)
	}
	if ds == nil {
		ds = []model.Delivery{}
	}
	writeJSON(w, http.StatusOK, List[model.Delivery]{Items: ds})
	return nil
}
