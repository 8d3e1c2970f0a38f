package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/beluga-scheduler/beluga/api"
)

func firesPath(project string, id int64) string {
	return "/api/v1/projects/" + esc(project) + "/schedules/" + strconv.FormatInt(id, 10) + "/fires"
}

// ScheduleFires returns one page of the ledger of fires of schedule id of
// project; q carries from, to, outcome, limit and cursor.
func (c *Client) ScheduleFires(ctx context.Context, project string, id int64, q url.Values) (api.FireList, error) {
	var l api.FireList
	err := c.call(ctx, "GET", firesPath(project, id), q, nil, &l)
	return l, err
}

// CompensateFires runs (or with DryRun, lists) missed fires of schedule id.
func (c *Client) CompensateFires(ctx context.Context, project string, id int64, req api.CompensateRequest) (api.CompensateResult, error) {
	var r api.CompensateResult
	err := c.call(ctx, "POST", firesPath(project, id)+"/compensate", nil, req, &r)
	return r, err
}
