package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/beluga-scheduler/beluga/api"
)

// A workflow's webhook triggers (README, "Webhook triggers").

func triggersPath(project, workflow string) string {
	return "/api/v1/projects/" + esc(project) + "/workflows/" + esc(workflow) + "/triggers"
}

// CreateTrigger makes a trigger of project's workflow; the answer holds
// its token, shown only this once.
func (c *Client) CreateTrigger(ctx context.Context, project, workflow string, req api.TriggerRequest) (t api.NewTrigger, err error) {
	err = c.call(ctx, "POST", triggersPath(project, workflow), nil, req, &t)
	return t, err
}

// ListTriggers returns the triggers of project's workflow by name.
func (c *Client) ListTriggers(ctx context.Context, project, workflow string) ([]api.Trigger, error) {
	var l api.List[api.Trigger]
	err := c.call(ctx, "GET", triggersPath(project, workflow), nil, nil, &l)
	return l.Items, err
}

// UpdateTrigger enables or disables a trigger or replaces its mapping.
func (c *Client) UpdateTrigger(ctx context.Context, project, workflow, name string, req api.TriggerUpdateRequest) (t api.Trigger, err error) {
	err = c.call(ctx, "PATCH", triggersPath(project, workflow)+"/"+esc(name), nil, req, &t)
	return t, err
}

// RotateTrigger gives a trigger a new token, returned this once.
func (c *Client) RotateTrigger(ctx context.Context, project, workflow, name string) (t api.NewTrigger, err error) {
	err = c.call(ctx, "POST", triggersPath(project, workflow)+"/"+esc(name)+"/rotate", nil, nil, &t)
	return t, err
}

// DeleteTrigger removes a trigger and its deliveries.
func (c *Client) DeleteTrigger(ctx context.Context, project, workflow, name string) error {
	return c.call(ctx, "DELETE", triggersPath(project, workflow)+"/"+esc(name), nil, nil, nil)
}

// TriggerDeliveries returns up to limit of a trigger's deliveries, newest
// first, those with an id below before (0: from the newest).
func (c *Client) TriggerDeliveries(ctx context.Context, project, workflow, name string, limit int, before int64) ([]api.TriggerDelivery, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	var l api.List[api.TriggerDelivery]
	err := c.call(ctx, "GET", triggersPath(project, workflow)+"/"+esc(name)+"/deliveries", q, nil, &l)
	return l.Items, err
}
