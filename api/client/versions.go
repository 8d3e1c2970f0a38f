package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/beluga-scheduler/beluga/api"
)

// RestartInstance asks for a rerun or recover_failed of an instance under
// version (0: its own; api.VersionChoice of model.VersionLatest: the
// latest).
func (c *Client) RestartInstance(ctx context.Context, id int64, action, by string, version api.VersionChoice) (ActionAccepted, error) {
	req := api.InstanceActionRequest{Action: action, By: by}
	if version != 0 {
		req.Version = &version
	}
	var out ActionAccepted
	err := c.call(ctx, "POST", "/api/v1/instances/"+strconv.FormatInt(id, 10)+"/actions", nil, req, &out)
	return out, err
}

// Diff returns what changed from version from to version to of a workflow
// (each a number or "latest"; to "" is the latest).
func (c *Client) Diff(ctx context.Context, project, name, from, to string) (api.VersionDiff, error) {
	q := url.Values{"from": {from}}
	if to != "" {
		q.Set("to", to)
	}
	var d api.VersionDiff
	err := c.call(ctx, "GET", workflowPath(project, name)+"/diff", q, nil, &d)
	return d, err
}

// InstanceDiff returns what differs between an instance's version and its
// workflow's latest.
func (c *Client) InstanceDiff(ctx context.Context, id int64) (api.VersionDiff, error) {
	var d api.VersionDiff
	err := c.call(ctx, "GET", "/api/v1/instances/"+strconv.FormatInt(id, 10)+"/diff", nil, nil, &d)
	return d, err
}
