package model

import "time"

// TaskSample is one succeeded attempt of a task in a past run of a
// workflow: what a finish-time forecast learns from (common/forecast).
type TaskSample struct {
	InstanceID  int64
	Name        string
	WorkerGroup string
	Run         time.Duration // end minus start
	// Queue is dispatch minus submit; HasQueue false when the attempt has
	// no such times (a task the master runs itself).
	Queue    time.Duration
	HasQueue bool
}

// TaskNow is a running instance's task as a forecast reads it: its latest
// attempt's state and start.
type TaskNow struct {
	Name        string
	State       TaskState
	Attempt     int
	WorkerGroup string
	StartTime   *time.Time
}
