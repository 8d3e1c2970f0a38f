package client

import (
	"context"
	"strconv"

	"github.com/beluga-scheduler/beluga/api"
)

// Plan is an impact plan (POST /api/v1/instances/{id}/plan).
type Plan = api.Plan

// InstancePlan plans action (rerun or recover_failed) on instance id,
// following dependent workflows downstream (none, direct or all), and keeps
// the plan.
func (c *Client) InstancePlan(ctx context.Context, id int64, action, downstream string) (Plan, error) {
	var out Plan
	err := c.call(ctx, "POST", "/api/v1/instances/"+strconv.FormatInt(id, 10)+"/plan", nil,
		api.PlanRequest{Action: action, Downstream: downstream}, &out)
	return out, err
}

// GetPlan returns plan id.
func (c *Client) GetPlan(ctx context.Context, id int64) (Plan, error) {
	var out Plan
	err := c.call(ctx, "GET", "/api/v1/plans/"+strconv.FormatInt(id, 10), nil, nil, &out)
	return out, err
}

// ApplyPlan runs exactly plan id's set, or fails with a 409 naming what
// changed since it was made.
func (c *Client) ApplyPlan(ctx context.Context, id int64) (Plan, error) {
	var out Plan
	err := c.call(ctx, "POST", "/api/v1/plans/"+strconv.FormatInt(id, 10)+"/apply", nil, nil, &out)
	return out, err
}

// RunPlan plans a run of workflow name from o.StartNodes (a rerun from
// tasks), following dependent workflows downstream, and keeps the plan.
func (c *Client) RunPlan(ctx context.Context, project, name string, o RunOptions, downstream string) (Plan, error) {
	var out Plan
	err := c.call(ctx, "POST", workflowPath(project, name)+"/runs/plan", nil,
		api.RunPlanRequest{RunRequest: o, Downstream: downstream}, &out)
	return out, err
}

// BackfillPlan plans backfill req of workflow name, following dependent
// workflows downstream per time, and keeps the plan.
func (c *Client) BackfillPlan(ctx context.Context, project, name string, req BackfillRequest, downstream string) (Plan, error) {
	var out Plan
	err := c.call(ctx, "POST", workflowPath(project, name)+"/backfill/plan", nil,
		api.BackfillPlanRequest{BackfillRequest: req, Downstream: downstream}, &out)
	return out, err
}
