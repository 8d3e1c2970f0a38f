package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/beluga-scheduler/beluga/api"
)

func datasetsPath(project string) string { return "/api/v1/projects/" + esc(project) + "/datasets" }

// ListDatasets returns a project's datasets by name.
func (c *Client) ListDatasets(ctx context.Context, project string) ([]api.Dataset, error) {
	var l api.DatasetList
	err := c.call(ctx, "GET", datasetsPath(project), nil, nil, &l)
	return l.Datasets, err
}

// GetDataset returns a dataset with its newest limit partitions.
func (c *Client) GetDataset(ctx context.Context, project, name string, limit int) (d api.DatasetDetail, err error) {
	err = c.call(ctx, "GET", datasetsPath(project)+"/"+esc(name), url.Values{"limit": {strconv.Itoa(limit)}}, nil, &d)
	return d, err
}

// EmitDataset records a partition produced outside Beluga; key (may be
// "") is its Idempotency-Key.
func (c *Client) EmitDataset(ctx context.Context, project, name, partition, key string) (r api.DatasetEventResult, err error) {
	err = c.postEvent(ctx, datasetsPath(project)+"/"+esc(name)+"/events", partition, key, &r)
	return r, err
}

// DatasetEventPlan plans emitting a partition: the consumers it would run
// and why the others would not; apply it with ApplyPlan.
func (c *Client) DatasetEventPlan(ctx context.Context, project, name, partition, key string) (p Plan, err error) {
	err = c.postEvent(ctx, datasetsPath(project)+"/"+esc(name)+"/events/plan", partition, key, &p)
	return p, err
}

// postEvent posts a dataset event's body with its key (may be "") to
// path, and decodes the answer into out.
func (c *Client) postEvent(ctx context.Context, path, partition, key string, out any) error {
	body, _ := json.Marshal(api.DatasetEventRequest{Partition: partition})
	var hs [][2]string
	if key != "" {
		hs = append(hs, [2]string{api.HeaderIdempotencyKey, key})
	}
	res, err := c.do(ctx, "POST", path, nil, "application/json", body, hs...)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("decode the answer to POST %s: %w", path, err)
	}
	return nil
}

// DatasetFires returns the ledger of a workflow scheduled on datasets.
func (c *Client) DatasetFires(ctx context.Context, project, workflow string, limit int) ([]api.DatasetFire, error) {
	var l api.DatasetFireList
	err := c.call(ctx, "GET", workflowPath(project, workflow)+"/dataset-fires", url.Values{"limit": {strconv.Itoa(limit)}}, nil, &l)
	return l.Fires, err
}

// RunDatasets returns a run's lineage.
func (c *Client) RunDatasets(ctx context.Context, id int64) (d api.RunDatasets, err error) {
	err = c.call(ctx, "GET", "/api/v1/instances/"+strconv.FormatInt(id, 10)+"/datasets", nil, nil, &d)
	return d, err
}
