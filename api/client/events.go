package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/model"
)

// PutSubscription creates or replaces a webhook subscription.
func (c *Client) PutSubscription(ctx context.Context, name string, req api.SubscriptionRequest) (s api.Subscription, err error) {
	err = c.call(ctx, "PUT", "/api/v1/subscriptions/"+esc(name), nil, req, &s)
	return s, err
}

// ListSubscriptions returns every subscription by name.
func (c *Client) ListSubscriptions(ctx context.Context) ([]api.Subscription, error) {
	var l api.List[api.Subscription]
	err := c.call(ctx, "GET", "/api/v1/subscriptions", nil, nil, &l)
	return l.Items, err
}

// DeleteSubscription removes a subscription.
func (c *Client) DeleteSubscription(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", "/api/v1/subscriptions/"+esc(name), nil, nil, nil)
}

// Deliveries returns a subscription's delivery log, newest first.
func (c *Client) Deliveries(ctx context.Context, name string, limit int) ([]model.Delivery, error) {
	var l api.List[model.Delivery]
	err := c.call(ctx, "GET", "/api/v1/subscriptions/"+esc(name)+"/deliveries", url.Values{"limit": {strconv.Itoa(limit)}}, nil, &l)
	return l.Items, err
}

// PutAlertChannel creates or replaces an alert channel.
func (c *Client) PutAlertChannel(ctx context.Context, name string, req api.AlertChannelRequest) (ch api.AlertChannel, err error) {
	err = c.call(ctx, "PUT", "/api/v1/alert-channels/"+esc(name), nil, req, &ch)
	return ch, err
}

// ListAlertChannels returns every alert channel by name.
func (c *Client) ListAlertChannels(ctx context.Context) ([]api.AlertChannel, error) {
	var l api.List[api.AlertChannel]
	err := c.call(ctx, "GET", "/api/v1/alert-channels", nil, nil, &l)
	return l.Items, err
}

// DeleteAlertChannel removes an alert channel.
func (c *Client) DeleteAlertChannel(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", "/api/v1/alert-channels/"+esc(name), nil, nil, nil)
}

// TestAlertChannel sends a test alert and returns it with its outcome.
func (c *Client) TestAlertChannel(ctx context.Context, name string) (a model.Alert, err error) {
	err = c.call(ctx, "POST", "/api/v1/alert-channels/"+esc(name)+"/test", nil, nil, &a)
	return a, err
}

// Alerts returns the alert history, newest first (instance, channel: zero
// for all).
func (c *Client) Alerts(ctx context.Context, instance int64, channel string, limit int) ([]model.Alert, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if instance != 0 {
		q.Set("instance", strconv.FormatInt(instance, 10))
	}
	if channel != "" {
		q.Set("channel", channel)
	}
	var l api.List[model.Alert]
	err := c.call(ctx, "GET", "/api/v1/alerts", q, nil, &l)
	return l.Items, err
}
