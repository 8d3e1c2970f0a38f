package api

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
)

// The wire types of the REST API. Handlers translate model values into these
// in one place (the from* functions below) so the JSON shape does not follow
// the domain structs by accident. api/client decodes into the same types.

// TimeFormat is RFC 3339 with milliseconds; times are always written in UTC.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time is a timestamp written as TimeFormat in UTC ("2026-11-29T21:37:05.123Z").
type Time struct{ time.Time }

// MarshalJSON writes the time in UTC with milliseconds.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(TimeFormat) + `"`), nil
}

// UnmarshalJSON accepts any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("time must be an RFC 3339 string, got %s", b)
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("time %q is not RFC 3339", s)
	}
	t.Time = v
	return nil
}

func timeOf(t time.Time) Time { return Time{t.UTC()} }

// optionalID is nil for 0 (no such id), else a pointer to id.
func optionalID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

func timePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := timeOf(*t)
	return &v
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong. Code is one of the Code* constants.
type ErrorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id,omitempty"`
}

// Error codes.
const (
	CodeBadRequest       = "bad_request"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodePayloadTooLarge  = "payload_too_large"
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeInternal         = "internal"
	CodeNotImplemented   = "not_implemented"
	CodeBadGateway       = "bad_gateway"
	CodeUnavailable      = "unavailable"
)

// Health is the body of GET /healthz when ready.
type Health struct {
	Status string `json:"status"`
	// Tasks says how this server's own worker keeps tasks from it
	// (standalone; absent on an API server, which runs no task).
	Tasks *TaskIsolation `json:"tasks,omitempty"`
	// Admission says whether the leading master admits new runs (200
	// either way: a saturated master works, through its backlog).
	Admission *Admission `json:"admission"`
}

// TaskIsolation is how tasks are kept from the server (docs/security.md).
type TaskIsolation struct {
	TaskUser string `json:"task_user,omitempty"` // tasks without a tenant run as it; "": the server's own user
	Sandbox  bool   `json:"sandbox"`             // each task in a namespace hiding the data dir and the server's process
	Warning  string `json:"warning,omitempty"`   // what a task can reach when isolation is short
	// RunsAsServer: the server is not root, so tasks run as its own OS user
	// with no sandbox; UsersCode then says whether non-admins' shell and
	// python tasks are refused (setting tasks.allow_unsandboxed_code).
	RunsAsServer bool   `json:"runs_as_server,omitempty"`
	UsersCode    string `json:"users_code,omitempty"`
}

// List wraps a collection.
type List[T any] struct {
	Items []T `json:"items"`
	// NextCursor, on a paged list (limit, cursor or prefix asked), is the
	// cursor of the next page; none when this page is the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// CreateProjectRequest is the body of POST /api/v1/projects.
type CreateProjectRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Tenant is the OS user its shell and python tasks run as unless the
	// workflow or task names one ("": the worker's user).
	Tenant string `json:"tenant,omitempty"`
}

// Project is a project.
type Project struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Tenant      string `json:"tenant,omitempty"`
	CreatedAt   Time   `json:"created_at"`
}

func fromProject(p model.Project) Project {
	return Project{ID: p.ID, Name: p.Name, Description: p.Description, Tenant: p.Tenant, CreatedAt: timeOf(p.CreatedAt)}
}

// ApplyResult answers PUT .../workflows/{name}: Created is false when the
// spec was identical to the latest version and nothing was stored.
type ApplyResult struct {
	Project   string `json:"project"`
	Name      string `json:"name"`
	Version   int    `json:"version"`
	Created   bool   `json:"created"`
	SpecHash  string `json:"spec_hash"`
	CreatedAt Time   `json:"created_at"`
	// GitCommit is the commit a project in write_back mode made of the save.
	GitCommit string `json:"git_commit,omitempty"`
}

// Workflow is one version of a workflow definition. Spec is the stored
// canonical spec; lists leave it out.
type Workflow struct {
	ID        int64           `json:"id"`
	Project   string          `json:"project"`
	Name      string          `json:"name"`
	Version   int             `json:"version"`
	SpecHash  string          `json:"spec_hash"`
	CreatedAt Time            `json:"created_at"`
	Spec      json.RawMessage `json:"spec,omitempty"`
	// GitCommit is the commit the Git sync that made the version read.
	GitCommit string `json:"git_commit,omitempty"`
	// Drift is set on a read of one promotion-gated workflow edited
	// outside promotion (README, "Promotion with review").
	Drift *Drift `json:"drift,omitempty"`
}

func fromDefinition(d model.WorkflowDefinition, withSpec bool) Workflow {
	w := Workflow{ID: d.ID, Project: d.Project, Name: d.Name, Version: d.Version,
		SpecHash: d.SpecHash, CreatedAt: timeOf(d.CreatedAt), GitCommit: d.GitCommit}
	if withSpec && len(d.SpecJSON) > 0 {
		w.Spec = json.RawMessage(secret.MaskJSON(d.SpecJSON))
	}
	return w
}

// RunRequest is the optional body of POST .../workflows/{name}/runs. Zero
// fields take the workflow's values (version 0: the latest).
type RunRequest struct {
	Params map[string]string `json:"params,omitempty"`
	// SecretParams names params whose values are secret (besides those the
	// workflow marks): stored sealed, shown as ***.
	SecretParams []string `json:"secret_params,omitempty"`
	Version      int      `json:"version,omitempty"`
	Priority     string   `json:"priority,omitempty"`
	WorkerGroup  string   `json:"worker_group,omitempty"`
	// StartNodes runs only these tasks and, by Scope (only, upstream or
	// downstream; default only), their upstream or downstream tasks.
	StartNodes []string `json:"start_nodes,omitempty"`
	Scope      string   `json:"scope,omitempty"`
	// DryRun records every task as succeeded without running it.
	DryRun bool `json:"dry_run,omitempty"`
}

// Instance is a workflow instance (one run).
type Instance struct {
	ID           int64             `json:"id"`
	Project      string            `json:"project"`
	Workflow     string            `json:"workflow"`
	Version      int               `json:"version"`
	State        string            `json:"state"`
	CommandType  string            `json:"command_type"`
	Priority     string            `json:"priority"`
	WorkerGroup  string            `json:"worker_group"`
	Host         string            `json:"host"`
	RunTimes     int               `json:"run_times"`
	Reason       string            `json:"reason"`
	Queued       bool              `json:"queued,omitempty"`        // submitted, waiting for its schedule or max_active_runs; reason says which
	Params       map[string]string `json:"params"`                  // secret values show as ***
	SecretParams []string          `json:"secret_params,omitempty"` // the params that are secret
	StartNodes   []string          `json:"start_nodes,omitempty"`
	Scope        string            `json:"scope,omitempty"`
	DryRun       bool              `json:"dry_run"`
	ScheduleID   int64             `json:"schedule_id,omitempty"` // the schedule that fired it; 0: none
	BackfillID   int64             `json:"backfill_id,omitempty"` // the backfill it runs a time of; 0: none
	Timezone     string            `json:"timezone,omitempty"`    // the zone of its schedule or backfill; "": UTC
	ScheduleTime *Time             `json:"schedule_time"`
	StartTime    *Time             `json:"start_time"`
	EndTime      *Time             `json:"end_time"`
	CreatedAt    Time              `json:"created_at"`
	// Parent is the sub_workflow task attempt that started this run; null
	// for a run of its own.
	Parent *model.ParentRef `json:"parent"`
}

func fromInstance(w model.WorkflowInstance) Instance {
	params, secrets := maskedParams(w.Params)
	return Instance{SecretParams: secrets, ID: w.ID, Project: w.Project, Workflow: w.Workflow, Version: w.Version,
		State: string(w.State), CommandType: string(w.CommandType), Priority: w.Priority.String(),
		WorkerGroup: w.WorkerGroup, Host: w.Host, RunTimes: w.RunTimes, Reason: w.Reason,
		Queued: w.Queued, Params: params, StartNodes: w.StartNodes, Scope: w.Scope, DryRun: w.DryRun, ScheduleID: w.ScheduleID,
		BackfillID: w.BackfillID, Timezone: w.Timezone, ScheduleTime: timePtr(w.ScheduleTime), StartTime: timePtr(w.StartTime),
		EndTime: timePtr(w.EndTime), CreatedAt: timeOf(w.CreatedAt), Parent: w.Parent}
}

// InstanceDetail is an instance with all its task instances (every attempt,
// superseded ones included), by id, and its history, oldest first.
type InstanceDetail struct {
	Instance
	// Tasks is one page of its task instances in id order (query
	// tasks_limit, default 10000, and tasks_offset); TasksTotal and
	// TaskCounts (per state) are over all of them.
	Tasks      []TaskInstance `json:"tasks"`
	TasksTotal int            `json:"tasks_total"`
	TaskCounts map[string]int `json:"task_counts"`
	History    []HistoryEntry `json:"history"`
	// Outputs are the values its tasks exported, each with its task.
	Outputs []Output `json:"outputs"`
	// Pending are the tasks with no attempt yet, each with its wait.
	Pending []PendingTask `json:"pending"`
	// PendingTotal is how many tasks are pending, when pending_limit
	// answered fewer.
	PendingTotal int `json:"pending_total"`
	// EventSeq is the newest event seq published before the read: every
	// change with an event up to it is in this answer, so a client that
	// follows GET /api/v1/events?after=EventSeq misses nothing.
	EventSeq int64 `json:"event_seq"`
	// Forecast is a running instance's projected end, with forecast=true
	// (absent once it ends).
	Forecast *Forecast `json:"forecast,omitempty"`
	// GitCommit is the commit its version came from (a Git project's);
	// LatestVersion the workflow's newest version now (0: the workflow is
	// gone): when it is not Version, GET .../diff shows what differs.
	GitCommit     string `json:"git_commit,omitempty"`
	LatestVersion int    `json:"latest_version"`
}

// HistoryEntry is an operator action on an instance or one of its tasks,
// or what the master did about one.
type HistoryEntry struct {
	Action         string `json:"action"`
	By             string `json:"by"`
	At             Time   `json:"at"`
	TaskInstanceID *int64 `json:"task_instance_id"` // null when about the whole instance
	Detail         string `json:"detail"`
}

func fromHistory(e model.HistoryEntry) HistoryEntry {
	return HistoryEntry{Action: string(e.Action), By: e.By, At: timeOf(e.At), Detail: e.Detail,
		TaskInstanceID: optionalID(e.TaskInstanceID)}
}

// ActionRequest is the body of POST .../instances/{id}/actions and
// .../task-instances/{id}/actions. By defaults to the X-Beluga-User header,
// else "api".
type ActionRequest struct {
	Action string `json:"action"`
	By     string `json:"by,omitempty"`
}

// InstanceActionRequest is the body of POST /api/v1/instances/{id}/actions:
// an ActionRequest, and for rerun and recover_failed the version to run
// ("latest" or a number; absent: the run's own).
type InstanceActionRequest struct {
	Action  string         `json:"action"`
	By      string         `json:"by,omitempty"`
	Version *VersionChoice `json:"version,omitempty"`
}

// ActionAccepted answers an action request: the command the master will
// act on, and the instance's state after the request was written.
type ActionAccepted struct {
	CommandID      int64  `json:"command_id"`
	InstanceID     int64  `json:"instance_id"`
	TaskInstanceID *int64 `json:"task_instance_id,omitempty"`
	Action         string `json:"action"`
	State          string `json:"state"`
}

func fromActionResult(r model.ActionResult) ActionAccepted {
	return ActionAccepted{CommandID: r.CommandID, InstanceID: r.InstanceID, Action: string(r.Action), State: string(r.State),
		TaskInstanceID: optionalID(r.TaskInstanceID)}
}

// CreateTaskGroupRequest is the body of POST /api/v1/task-groups.
type CreateTaskGroupRequest struct {
	Name        string `json:"name"`
	Capacity    int    `json:"capacity"`
	Description string `json:"description,omitempty"`
	// Projects are the projects whose workflows may use the group.
	Projects []string `json:"projects,omitempty"`
}

// ResizeTaskGroupRequest is the body of PATCH /api/v1/task-groups/{name}:
// a new capacity, the projects it is granted to, or both.
type ResizeTaskGroupRequest struct {
	Capacity *int      `json:"capacity"`
	Projects *[]string `json:"projects,omitempty"` // replaces the granted projects
}

// TaskGroup is a named concurrency limit shared across workflows and
// projects. InUse counts its tasks now dispatched or running; it may exceed
// Capacity after the group was made smaller.
type TaskGroup struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Capacity    int      `json:"capacity"`
	InUse       int      `json:"in_use"`
	Description string   `json:"description"`
	Projects    []string `json:"projects"` // granted to; none: admins' workflows only
	CreatedAt   Time     `json:"created_at"`
}

func fromTaskGroup(g model.TaskGroup, projects []string) TaskGroup {
	if projects == nil {
		projects = []string{}
	}
	return TaskGroup{ID: g.ID, Name: g.Name, Capacity: g.Capacity, InUse: g.InUse,
		Description: g.Description, Projects: projects, CreatedAt: timeOf(g.CreatedAt)}
}

// InstanceList is one page of instances, newest first; Total counts every
// instance the filter matches (-1 on a page asked for by cursor, which
// counts nothing); NextCursor, on such a page, is the cursor of the next.
type InstanceList struct {
	Items      []Instance `json:"items"`
	Total      int64      `json:"total"`
	Limit      int        `json:"limit"`
	Offset     int        `json:"offset"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// TaskInstance is one attempt of one task.
type TaskInstance struct {
	ID                 int64  `json:"id"`
	WorkflowInstanceID int64  `json:"workflow_instance_id"`
	Name               string `json:"name"`
	Type               string `json:"type"`
	State              string `json:"state"`
	Attempt            int    `json:"attempt"`
	Superseded         bool   `json:"superseded"`
	DryRun             bool   `json:"dry_run"`
	Host               string `json:"host"`
	PID                int    `json:"pid"`
	ExitCode           *int   `json:"exit_code"`
	Priority           string `json:"priority"`
	WorkerGroup        string `json:"worker_group"`
	TaskGroup          string `json:"task_group"`
	LogPath            string `json:"log_path"`
	SubmitTime         *Time  `json:"submit_time"`
	DispatchTime       *Time  `json:"dispatch_time"`
	StartTime          *Time  `json:"start_time"`
	EndTime            *Time  `json:"end_time"`
	// Params is what the attempt ran with, resolved; Outputs what it
	// exported. Both are objects, empty when there are none.
	Params  map[string]string `json:"params"`
	Outputs map[string]string `json:"outputs"`
	// Wait says why the attempt is not running; null when it runs, ended
	// or is superseded.
	Wait *Wait `json:"wait"`
	// ChildInstanceID is a sub_workflow attempt's child run (null: none);
	// Message what a dependent waits for and has seen.
	ChildInstanceID *int64 `json:"child_instance_id"`
	Message         string `json:"message"`
}

// Output is one value a task of an instance exported.
type Output struct {
	Name           string `json:"name"`
	Value          string `json:"value"`
	Task           string `json:"task"`
	TaskInstanceID int64  `json:"task_instance_id"`
}

// outputsOf lists the outputs of each task's latest attempt that
// succeeded, by task then name.
func outputsOf(tasks []model.TaskInstance) []Output {
	latest := map[string]model.TaskInstance{}
	var order []string
	for _, t := range tasks {
		if t.Superseded || !t.State.Success() || len(t.Outputs) == 0 {
			continue
		}
		if _, ok := latest[t.Name]; !ok {
			order = append(order, t.Name)
		}
		if cur, ok := latest[t.Name]; !ok || t.ID > cur.ID {
			latest[t.Name] = t
		}
	}
	sort.Strings(order)
	out := []Output{}
	for _, name := range order {
		t := latest[name]
		keys := make([]string, 0, len(t.Outputs))
		for k := range t.Outputs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, Output{Name: k, Value: t.Outputs[k], Task: name, TaskInstanceID: t.ID})
		}
	}
	return out
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func fromTask(t model.TaskInstance) TaskInstance {
	return TaskInstance{ID: t.ID, WorkflowInstanceID: t.WorkflowInstanceID, Name: t.Name, Type: t.Type,
		State: string(t.State), Attempt: t.Attempt, Superseded: t.Superseded, DryRun: t.DryRun, Host: t.Host, PID: t.PID,
		ExitCode: t.ExitCode, Priority: t.Priority.String(), WorkerGroup: t.WorkerGroup, TaskGroup: t.TaskGroup, LogPath: t.LogPath,
		SubmitTime: timePtr(t.SubmitTime), DispatchTime: timePtr(t.DispatchTime),
		StartTime: timePtr(t.StartTime), EndTime: timePtr(t.EndTime),
		Params: nonNil(secret.MaskMap(t.Params)), Outputs: nonNil(t.Outputs), // sealed values show as ***
		ChildInstanceID: optionalID(t.ChildInstanceID), Message: t.Message}
}
