package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
)

// Row types mirror sql/ exactly; they never leave this package.

type projectRow struct {
	ID          int64
	Name        string
	Description string
	Tenant      string
	CreatedAt   time.Time
}

func (projectRow) TableName() string { return "project" }

func (r projectRow) model() model.Project {
	return model.Project{ID: r.ID, Name: r.Name, Description: r.Description, Tenant: r.Tenant, CreatedAt: r.CreatedAt}
}

type workflowDefinitionRow struct {
	ID              int64
	ProjectID       int64
	Name            string
	Version         int
	SpecJSON        string `gorm:"column:spec_json"`
	SpecHash        string
	Description     string
	FailureStrategy string
	Priority        int
	WorkerGroup     string
	TimeoutMs       int64
	TaskCount       int
	MaxActiveRuns   int
	AppliedBy       string // the user who applied it ("": the server; AuthorUnknown)
	GitCommit       string // the commit a Git sync made it from ("": applied by hand)
	CreatedAt       time.Time
}

func (workflowDefinitionRow) TableName() string { return "workflow_definition" }

func (r workflowDefinitionRow) model(project string) model.WorkflowDefinition {
	return model.WorkflowDefinition{ID: r.ID, ProjectID: r.ProjectID, Project: project, Name: r.Name,
		Version: r.Version, SpecJSON: []byte(r.SpecJSON), SpecHash: r.SpecHash, GitCommit: r.GitCommit, CreatedAt: r.CreatedAt}
}

type taskDefinitionRow struct {
	ID                   int64
	WorkflowDefinitionID int64
	Name                 string
	Type                 string
	Command              string
	Priority             int
	WorkerGroup          string
	Retries              int
	RetryIntervalMs      int64
	TimeoutMs            int64
	Datasource           string // the managed datasource the task uses ("" none)
}

func (taskDefinitionRow) TableName() string { return "task_definition" }

type taskRelationRow struct {
	ID                   int64
	WorkflowDefinitionID int64
	PreTask              string
	PostTask             string
}

func (taskRelationRow) TableName() string { return "task_relation" }

type commandRow struct {
	ID                 int64
	Type               string
	WorkflowInstanceID int64
	CreatedAt          time.Time
	NotBefore          *time.Time // a run fired ahead of its second: not claimed before it (nil: at once)
}

func (commandRow) TableName() string { return "command" }

type workflowInstanceRow struct {
	ID                   int64
	ProjectID            int64
	ProjectName          string
	WorkflowName         string
	WorkflowDefinitionID int64
	Version              int
	State                string
	CommandType          string
	Host                 string
	Epoch                int64
	Priority             int
	WorkerGroup          string
	ParamsJSON           *string `gorm:"column:params_json"`
	RunTimes             int
	StartNodes           *string `gorm:"column:start_nodes"`
	Scope                string
	DryRun               bool
	Reason               string
	Queued               bool
	ScheduleID           *int64
	BackfillID           *int64
	Timezone             string
	ScheduleTime         *time.Time
	StartTime            *time.Time
	EndTime              *time.Time
	CreatedAt            time.Time
	ParentInstanceID     *int64
	ParentTaskInstanceID *int64
}

func (workflowInstanceRow) TableName() string { return "workflow_instance" }

func (r workflowInstanceRow) model() model.WorkflowInstance {
	w := model.WorkflowInstance{ID: r.ID, ProjectID: r.ProjectID, Project: r.ProjectName,
		Workflow: r.WorkflowName, DefinitionID: r.WorkflowDefinitionID, Version: r.Version,
		State: model.WorkflowState(r.State), CommandType: model.CommandType(r.CommandType),
		Host: r.Host, Epoch: r.Epoch, Priority: model.Priority(r.Priority), WorkerGroup: r.WorkerGroup,
		RunTimes: r.RunTimes, Scope: r.Scope, DryRun: r.DryRun, Reason: r.Reason, Queued: r.Queued, ScheduleTime: utc(r.ScheduleTime),
		ScheduleID: deref(r.ScheduleID), BackfillID: deref(r.BackfillID), Timezone: r.Timezone,
		StartTime: utc(r.StartTime), EndTime: utc(r.EndTime), CreatedAt: r.CreatedAt.UTC()}
	if r.ParentTaskInstanceID != nil {
		w.Parent = &model.ParentRef{InstanceID: deref(r.ParentInstanceID), TaskInstanceID: *r.ParentTaskInstanceID}
	}
	if r.StartNodes != nil && *r.StartNodes != "" {
		_ = json.Unmarshal([]byte(*r.StartNodes), &w.StartNodes) // written by us from a slice
	}
	if r.ParamsJSON != nil && *r.ParamsJSON != "" {
		_ = json.Unmarshal([]byte(*r.ParamsJSON), &w.Params) // written by us from a map; cannot fail
	}
	return w
}

type taskInstanceRow struct {
	ID                 int64
	WorkflowInstanceID int64
	Name               string
	Type               string
	State              string
	Attempt            int
	RetryBase          int
	Superseded         bool
	DryRun             bool
	Host               string
	PID                int `gorm:"column:pid"`
	LogPath            string
	ExitCode           *int
	Priority           int
	WorkerGroup        string
	TaskGroup          string
	SubmitTime         *time.Time
	DispatchTime       *time.Time
	StartTime          *time.Time
	EndTime            *time.Time
	ParamsJSON         *string `gorm:"column:params_json"`
	OutputsJSON        *string `gorm:"column:outputs_json"`
	WaitCause          string
	WaitReason         string
	ChildInstanceID    *int64
	Message            string
}

func (taskInstanceRow) TableName() string { return "task_instance" }

func (r taskInstanceRow) model() model.TaskInstance {
	return model.TaskInstance{ID: r.ID, WorkflowInstanceID: r.WorkflowInstanceID, Name: r.Name,
		Type: r.Type, State: model.TaskState(r.State), Attempt: r.Attempt, RetryBase: r.RetryBase, Superseded: r.Superseded,
		DryRun: r.DryRun, Host: r.Host, PID: r.PID, LogPath: r.LogPath, ExitCode: r.ExitCode,
		Priority: model.Priority(r.Priority), WorkerGroup: r.WorkerGroup, TaskGroup: r.TaskGroup,
		SubmitTime: utc(r.SubmitTime), DispatchTime: utc(r.DispatchTime),
		StartTime: utc(r.StartTime), EndTime: utc(r.EndTime),
		Params: stringMap(r.ParamsJSON), Outputs: stringMap(r.OutputsJSON), WaitCause: r.WaitCause, WaitReason: r.WaitReason,
		ChildInstanceID: deref(r.ChildInstanceID), Message: r.Message}
}

// stringMap decodes a JSON object of strings; NULL or garbage is nil.
func stringMap(s *string) map[string]string {
	if s == nil || *s == "" {
		return nil
	}
	if m, ok := flatStrings(*s); ok {
		return m
	}
	var m map[string]string
	if json.Unmarshal([]byte(*s), &m) != nil {
		return nil
	}
	return m
}

// flatStrings decodes the JSON object of strings that json.Marshal writes
// for a map[string]string when nothing in it is escaped (no backslash, no
// control character): each string is then the bytes between two quotes.
// ok false sends anything else to json.Unmarshal. A page of 50 tasks spent
// a fifth of its CPU decoding their params with json.Unmarshal.
func flatStrings(s string) (m map[string]string, ok bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' || !utf8.ValidString(s) {
		return nil, false
	}
	pairs := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c < 0x20:
			return nil, false
		case c == ':':
			pairs++
		}
	}
	body := s[1 : len(s)-1]
	m = make(map[string]string, pairs)
	for len(body) > 0 {
		k, rest, ok := quoted(body)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return nil, false
		}
		v, rest, ok := quoted(rest[1:])
		if !ok {
			return nil, false
		}
		m[k] = v
		if len(rest) == 0 {
			break
		}
		if rest[0] != ',' || len(rest) == 1 {
			return nil, false
		}
		body = rest[1:]
	}
	return m, true
}

// quoted splits a leading "..." (no escapes) off s.
func quoted(s string) (v, rest string, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", "", false
	}
	return s[1 : 1+end], s[2+end:], true
}

func taskRowFrom(t *model.TaskInstance) taskInstanceRow {
	return taskInstanceRow{ID: t.ID, WorkflowInstanceID: t.WorkflowInstanceID, Name: t.Name,
		Type: t.Type, State: string(t.State), Attempt: t.Attempt, RetryBase: t.RetryBase, Superseded: t.Superseded,
		DryRun: t.DryRun, Host: t.Host, PID: t.PID, LogPath: t.LogPath, ExitCode: t.ExitCode,
		Priority: int(t.Priority), WorkerGroup: t.WorkerGroup, TaskGroup: t.TaskGroup, SubmitTime: t.SubmitTime,
		DispatchTime: t.DispatchTime, StartTime: t.StartTime, EndTime: t.EndTime,
		ParamsJSON: jsonText(t.Params, len(t.Params)), OutputsJSON: jsonText(t.Outputs, len(t.Outputs)),
		WaitCause: t.WaitCause, WaitReason: t.WaitReason,
		ChildInstanceID: nullID(t.ChildInstanceID), Message: t.Message}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// jsonText encodes v for a nullable TEXT column; empty slices and maps are
// NULL. Our values (maps and slices of strings and times) always encode.
func jsonText[T any](v T, n int) *string {
	if n == 0 {
		return nil
	}
	b, _ := json.Marshal(v)
	s := string(b)
	return &s
}

// priorityCol is a nullable priority column: nil follows the workflow.
func priorityCol(p *model.Priority) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

// workflowProject reads the project of a workflow that must exist (any
// version): schedules and backfills name workflows, not versions.
func workflowProject(tx *gorm.DB, project, workflow string) (projectRow, error) {
	p, err := getProject(tx, project)
	if err != nil {
		return p, err
	}
	n, err := lockedCount(lockingRead(tx).Model(&workflowDefinitionRow{}).Where("project_id = ? AND name = ?", p.ID, workflow))
	if err != nil {
		return p, fmt.Errorf("find workflow %q: %w", workflow, err)
	}
	if n == 0 {
		return p, fmt.Errorf("workflow %q in project %q: %w", workflow, project, ErrNotFound)
	}
	return p, nil
}

// lockingRead makes a read in tx see, and lock until commit, the latest
// committed rows on MySQL, where a plain read sees the transaction's
// snapshot: what a concurrent DeleteWorkflow checks and what it deletes
// are then ordered with the writes that depend on them. SQLite
// transactions are serialized (BEGIN IMMEDIATE) and need nothing.
func lockingRead(tx *gorm.DB) *gorm.DB {
	if !dialectOf(tx).serialWrites {
		return tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	return tx
}

// lockedCount counts the rows of a lockingRead query by reading their ids:
// PostgreSQL locks no rows of an aggregate (COUNT ... FOR UPDATE is an
// error there), and the rows are what must stay locked.
func lockedCount(q *gorm.DB) (int64, error) {
	var ids []int64
	err := q.Pluck("id", &ids).Error
	return int64(len(ids)), err
}
