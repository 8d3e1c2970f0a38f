package api

import "github.com/beluga-scheduler/beluga/common/model"

// The wire types of data-aware scheduling are the model's (their JSON is
// the API's; openapi.yaml describes them).
type (
	Dataset          = model.Dataset
	DatasetDetail    = model.DatasetDetail
	DatasetProducer  = model.DatasetProducer
	DatasetConsumer  = model.DatasetConsumer
	DatasetPartition = model.DatasetPartition
	DatasetEvent     = model.DatasetEvent
	DatasetFire      = model.DatasetFire
	DatasetInput     = model.DatasetInput
	RunDatasets      = model.RunDatasets
)

// DatasetList is the answer of GET .../datasets.
type DatasetList struct {
	Datasets []Dataset `json:"datasets"`
}

// DatasetFireList is the answer of GET .../workflows/{name}/dataset-fires.
type DatasetFireList struct {
	Fires []DatasetFire `json:"fires"`
}

// DatasetEventRequest is the JSON body of POST .../datasets/{dataset}/events.
type DatasetEventRequest struct {
	// Partition is the day (2026-12-07, 20261207) or hour (2026-12-07T13,
	// 2026120713) produced.
	Partition string `json:"partition"`
}

// DatasetEventResult answers a posted event: the event, and whether its
// Idempotency-Key had been posted for the partition before.
type DatasetEventResult struct {
	Event     DatasetEvent `json:"event"`
	Duplicate bool         `json:"duplicate"`
}
