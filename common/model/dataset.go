package model

import "time"

// Data-aware scheduling (README, "Data-aware scheduling"): datasets are
// named per project; tasks produce their partitions, workflows consume them.

// Dataset is a dataset of a project as its producers, consumers and
// events show it.
type Dataset struct {
	Name          string            `json:"name"`
	Producers     []DatasetProducer `json:"producers"`
	Consumers     []DatasetConsumer `json:"consumers"`
	Partitions    int               `json:"partitions"`               // distinct partitions produced
	LastPartition string            `json:"last_partition,omitempty"` // the newest produced ("" none)
	LastEventAt   *time.Time        `json:"last_event_at,omitempty"`
}

// DatasetProducer is a workflow's task whose spec says it produces the
// dataset.
type DatasetProducer struct {
	Workflow string `json:"workflow"`
	Task     string `json:"task"`
}

// DatasetConsumer is a workflow scheduled on the dataset.
type DatasetConsumer struct {
	Workflow string `json:"workflow"`
	Grain    string `json:"grain"`     // of the dataset's partitions it reads
	RunGrain string `json:"run_grain"` // of its runs
	LateData string `json:"late_data"`
}

// DatasetPartition is one produced partition: how often and by whom.
type DatasetPartition struct {
	Key    string         `json:"key"`
	Events []DatasetEvent `json:"events"`
}

// DatasetDetail is one dataset with its newest partitions.
type DatasetDetail struct {
	Dataset
	PartitionList []DatasetPartition `json:"partition_list"`
}

// DatasetEvent is one produced partition of a dataset.
type DatasetEvent struct {
	ID             int64     `json:"id"`
	Dataset        string    `json:"dataset"`
	Partition      string    `json:"partition"`
	Producer       string    `json:"producer"` // task:<id> or ext:<key>
	TaskInstanceID int64     `json:"task_instance_id,omitempty"`
	RunID          int64     `json:"run_id,omitempty"`
	ProducedBy     string    `json:"produced_by,omitempty"` // the user of an event from outside
	ProducedAt     time.Time `json:"produced_at"`
	Evaluated      bool      `json:"evaluated"`
}

// Outcomes of a dataset fire.
const (
	DatasetFired   = "fired"   // the partition's run (first, or a rerun)
	DatasetIgnored = "ignored" // a re-produce under late_data: ignore
)

// DatasetFire is one row of a consumer's ledger.
type DatasetFire struct {
	ID             int64     `json:"id"`
	Workflow       string    `json:"workflow"`
	Partition      string    `json:"partition"`
	EventID        int64     `json:"event_id"`
	CoveredEventID int64     `json:"covered_event_id"`
	Outcome        string    `json:"outcome"`
	Rerun          bool      `json:"rerun"`
	Reason         string    `json:"reason,omitempty"`
	RunID          int64     `json:"run_id,omitempty"`
	FiredAt        time.Time `json:"fired_at"`
}

// DatasetInput is one input partition a dataset-triggered run waited for.
type DatasetInput struct {
	Dataset   string     `json:"dataset"`
	Partition string     `json:"partition"`
	Produced  bool       `json:"produced"`
	ReadyAt   *time.Time `json:"ready_at,omitempty"` // its first event the run's decision saw
}

// RunDatasets is a run's lineage: what it waited for and what it produced.
type RunDatasets struct {
	RunID     int64          `json:"run_id"`
	Fire      *DatasetFire   `json:"fire,omitempty"` // nil: not started by datasets
	WaitedFor []DatasetInput `json:"waited_for"`
	Produced  []DatasetEvent `json:"produced"`
}
