package client

import (
	"context"

	"github.com/beluga-scheduler/beluga/api"
)

func retentionPath(project string) string { return "/api/v1/projects/" + esc(project) + "/retention" }

// RetentionDefault reads the global retention default.
func (c *Client) RetentionDefault(ctx context.Context) (api.RetentionDefault, error) {
	var d api.RetentionDefault
	err := c.call(ctx, "GET", "/api/v1/retention", nil, nil, &d)
	return d, err
}

// SetRetentionDefault changes the fields of the global default that req
// sets (admins).
func (c *Client) SetRetentionDefault(ctx context.Context, req api.RetentionDefaultRequest) (api.RetentionDefault, error) {
	var d api.RetentionDefault
	err := c.call(ctx, "PUT", "/api/v1/retention", nil, req, &d)
	return d, err
}

// ProjectRetention reads project's own policy and the one in force.
func (c *Client) ProjectRetention(ctx context.Context, project string) (api.ProjectRetention, error) {
	var p api.ProjectRetention
	err := c.call(ctx, "GET", retentionPath(project), nil, nil, &p)
	return p, err
}

// SetProjectRetention stores project's own policy (nil fields: the default).
func (c *Client) SetProjectRetention(ctx context.Context, project string, req api.ProjectRetentionRequest) (api.ProjectRetention, error) {
	var p api.ProjectRetention
	err := c.call(ctx, "PUT", retentionPath(project), nil, req, &p)
	return p, err
}

// RetentionProject dry-runs (purge false) or purges project's retention.
func (c *Client) RetentionProject(ctx context.Context, project string, purge bool) (api.RetentionPlan, error) {
	var p api.RetentionPlan
	what := "/plan"
	if purge {
		what = "/purge"
	}
	err := c.call(ctx, "POST", retentionPath(project)+what, nil, nil, &p)
	return p, err
}

// RetentionAll dry-runs or purges every project of req (all when none)
// and the audit log (admins).
func (c *Client) RetentionAll(ctx context.Context, req api.RetentionRunRequest, purge bool) (api.RetentionRun, error) {
	var r api.RetentionRun
	path := "/api/v1/retention/plan"
	if purge {
		path = "/api/v1/retention/purge"
	}
	err := c.call(ctx, "POST", path, nil, req, &r)
	return r, err
}
