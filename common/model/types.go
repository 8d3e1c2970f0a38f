package model

import "time"

// Project groups workflows.
type Project struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// WorkflowDefinition is one stored version of a workflow spec.
type WorkflowDefinition struct {
	ID        int64     `json:"id"`
	ProjectID int64     `json:"project_id"`
	Project   string    `json:"project"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	SpecJSON  []byte    `json:"-"`
	SpecHash  string    `json:"spec_hash"`
	CreatedAt time.Time `json:"created_at"`
}

// WorkflowInstance is one run of a workflow definition version.
type WorkflowInstance struct {
	ID           int64             `json:"id"`
	ProjectID    int64             `json:"project_id"`
	Project      string            `json:"project"`
	Workflow     string            `json:"workflow"`
	DefinitionID int64             `json:"definition_id"`
	Version      int               `json:"version"`
	State        WorkflowState     `json:"state"`
	CommandType  CommandType       `json:"command_type"`
	Host         string            `json:"host,omitempty"`
	Epoch        int64             `json:"epoch"`
	Priority     Priority          `json:"-"`
	WorkerGroup  string            `json:"worker_group,omitempty"`
	Params       map[string]string `json:"params,omitempty"`
	RunTimes     int               `json:"run_times"`
	StartNodes   []string          `json:"start_nodes,omitempty"` // run only from these tasks...
	Scope        string            `json:"scope,omitempty"`       // ...with only, upstream or downstream
	DryRun       bool              `json:"dry_run,omitempty"`     // tasks recorded as succeeded, not run
	Reason       string            `json:"reason,omitempty"`
	ScheduleTime *time.Time        `json:"schedule_time,omitempty"`
	StartTime    *time.Time        `json:"start_time,omitempty"`
	EndTime      *time.Time        `json:"end_time,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
}

// TaskInstance is one attempt of one task of a workflow instance.
type TaskInstance struct {
	ID                 int64      `json:"id"`
	WorkflowInstanceID int64      `json:"workflow_instance_id"`
	Name               string     `json:"name"`
	Type               string     `json:"type"`
	State              TaskState  `json:"state"`
	Attempt            int        `json:"attempt"`
	Superseded         bool       `json:"superseded,omitempty"`
	DryRun             bool       `json:"dry_run,omitempty"`
	Host               string     `json:"host,omitempty"`
	PID                int        `json:"pid,omitempty"`
	LogPath            string     `json:"log_path,omitempty"`
	ExitCode           *int       `json:"exit_code"`
	Priority           Priority   `json:"-"`
	WorkerGroup        string     `json:"worker_group,omitempty"`
	TaskGroup          string     `json:"task_group,omitempty"` // "" for none
	SubmitTime         *time.Time `json:"submit_time,omitempty"`
	DispatchTime       *time.Time `json:"dispatch_time,omitempty"`
	StartTime          *time.Time `json:"start_time,omitempty"`
	EndTime            *time.Time `json:"end_time,omitempty"`
}
