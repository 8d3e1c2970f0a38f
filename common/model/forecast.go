package model

import "time"

// TaskSample is one attempt of a task that ran in a past run of a
// workflow: what a finish-time forecast learns from (common/forecast).
type TaskSample struct {
	InstanceID   int64
	Name         string
	WorkerGroup  string
	SubmitTime   *time.Time
	DispatchTime *time.Time
	StartTime    *time.Time
	EndTime      *time.Time
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
