package client

import (
	"context"

	"github.com/beluga-scheduler/beluga/api"
)

// Settings lists the server-wide settings (admins).
func (c *Client) Settings(ctx context.Context) ([]api.SettingValue, error) {
	var l api.List[api.SettingValue]
	err := c.call(ctx, "GET", "/api/v1/settings", nil, nil, &l)
	return l.Items, err
}

// SetSetting changes one setting (admins; out of its bounds: 400).
func (c *Client) SetSetting(ctx context.Context, name string, value int64) (api.SettingValue, error) {
	var s api.SettingValue
	err := c.call(ctx, "PUT", "/api/v1/settings/"+esc(name), nil, api.SettingRequest{Value: value}, &s)
	return s, err
}

// Healthz reads /healthz: the leader's admission among it.
func (c *Client) Healthz(ctx context.Context) (api.Health, error) {
	var h api.Health
	err := c.call(ctx, "GET", "/healthz", nil, nil, &h)
	return h, err
}
