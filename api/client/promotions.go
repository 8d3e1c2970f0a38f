package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/beluga-scheduler/beluga/api"
)

func promotionsPath(project string) string { return "/api/v1/projects/" + esc(project) + "/promotions" }

// Promote asks to promote a source workflow into target (a change request).
func (c *Client) Promote(ctx context.Context, target string, req api.PromoteRequest) (api.ChangeRequest, error) {
	var out api.ChangeRequest
	err := c.call(ctx, "POST", promotionsPath(target), nil, req, &out)
	return out, err
}

// Promotions lists the change requests into project (state "": all).
func (c *Client) Promotions(ctx context.Context, project, state string) (api.ChangeRequestList, error) {
	var q url.Values
	if state != "" {
		q = url.Values{"state": {state}}
	}
	var out api.ChangeRequestList
	err := c.call(ctx, "GET", promotionsPath(project), q, nil, &out)
	return out, err
}

// Promotion returns change request id of project, with its diff.
func (c *Client) Promotion(ctx context.Context, project string, id int64) (api.ChangeRequest, error) {
	var out api.ChangeRequest
	err := c.call(ctx, "GET", promotionsPath(project)+"/"+strconv.FormatInt(id, 10), nil, nil, &out)
	return out, err
}

// ReviewPromotion approves (approve true: and applies) or rejects change
// request id of project.
func (c *Client) ReviewPromotion(ctx context.Context, project string, id int64, approve bool, comment string) (api.ChangeRequest, error) {
	verb := "/reject"
	if approve {
		verb = "/approve"
	}
	var out api.ChangeRequest
	err := c.call(ctx, "POST", promotionsPath(project)+"/"+strconv.FormatInt(id, 10)+verb, nil, api.ReviewRequest{Comment: comment}, &out)
	return out, err
}

// PromotionGate returns project's promotion setting and drift.
func (c *Client) PromotionGate(ctx context.Context, project string) (api.PromotionGate, error) {
	var out api.PromotionGate
	err := c.call(ctx, "GET", "/api/v1/projects/"+esc(project)+"/promotion", nil, nil, &out)
	return out, err
}

// PutPromotionGate sets project's promotion setting.
func (c *Client) PutPromotionGate(ctx context.Context, project string, req api.PromotionGateRequest) (api.PromotionGate, error) {
	var out api.PromotionGate
	err := c.call(ctx, "PUT", "/api/v1/projects/"+esc(project)+"/promotion", nil, req, &out)
	return out, err
}
