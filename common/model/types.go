package model

import "time"

// Project groups workflows.
type Project struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Tenant      string    `json:"tenant,omitempty"` // OS user of its tasks unless the workflow or task names one
	CreatedAt   time.Time `json:"created_at"`
}

// WorkflowDefinition is one stored version of a workflow spec.
type WorkflowDefinition struct {
	ID        int64  `json:"id"`
	ProjectID int64  `json:"project_id"`
	Project   string `json:"project"`
	Name      string `json:"name"`
	Version   int    `json:"version"`
	SpecJSON  []byte `json:"-"`
	SpecHash  string `json:"spec_hash"`
	// ProjectTenant is the project's tenant (GetDefinition), the default
	// of the spec's.
	ProjectTenant string `json:"-"`
	// CreatedBy is the user who applied the version; AuthorAdmin says
	// whether that user is an admin now (GetDefinition): only an admin's
	// version may name a tenant other than the project's.
	CreatedBy   string `json:"created_by,omitempty"`
	AuthorAdmin bool   `json:"-"`
	// GitCommit is the commit the Git sync that made the version read
	// ("": applied by hand, or before versions recorded it).
	GitCommit string    `json:"git_commit,omitempty"`
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
	// Queued: submitted but held until its schedule (overlap wait or
	// replace) or its workflow (max_active_runs) has room; Reason says which.
	Queued       bool       `json:"queued,omitempty"`
	ScheduleID   int64      `json:"schedule_id,omitempty"` // 0: not fired by a schedule
	BackfillID   int64      `json:"backfill_id,omitempty"` // 0: not part of a backfill
	Timezone     string     `json:"timezone,omitempty"`    // zone of time params; "" is UTC
	ScheduleTime *time.Time `json:"schedule_time,omitempty"`
	StartTime    *time.Time `json:"start_time,omitempty"`
	EndTime      *time.Time `json:"end_time,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	// Parent is set on a child run a sub_workflow task started.
	Parent *ParentRef `json:"parent,omitempty"`
}

// ParentRef names the sub_workflow task attempt that started a child run.
type ParentRef struct {
	InstanceID     int64 `json:"instance_id"`
	TaskInstanceID int64 `json:"task_instance_id"`
}

// TaskInstance is one attempt of one task of a workflow instance.
type TaskInstance struct {
	ID                 int64      `json:"id"`
	WorkflowInstanceID int64      `json:"workflow_instance_id"`
	Name               string     `json:"name"`
	Type               string     `json:"type"`
	State              TaskState  `json:"state"`
	Attempt            int        `json:"attempt"`
	RetryBase          int        `json:"-"` // the attempt that began the current retry budget (1, or where a rerun or recovery started)
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
	// Params is what the attempt runs with, resolved (built-ins, workflow,
	// upstream outputs, task and run params); Outputs what it exported.
	Params  map[string]string `json:"params,omitempty"`
	Outputs map[string]string `json:"outputs,omitempty"`
	// WaitCause and WaitReason say why the attempt waits when only the
	// code that holds it knows (a dependent task: "dependent", "waiting on
	// W"); set with store.TaskSetWait. Empty otherwise: the API derives
	// the other causes (common/model/wait.go).
	WaitCause  string `json:"wait_cause,omitempty"`
	WaitReason string `json:"wait_reason,omitempty"`
	// ChildInstanceID is the child run of a sub_workflow attempt (0: none).
	ChildInstanceID int64 `json:"child_instance_id,omitempty"`
	// Message says what a master-run task (dependent) waits for and saw.
	Message string `json:"message,omitempty"`
}

// Schedule fires runs of a workflow on a cron expression. Priority,
// WorkerGroup and Params, when set, override the workflow's for its runs.
type Schedule struct {
	ID           int64             `json:"id"`
	ProjectID    int64             `json:"project_id"`
	Project      string            `json:"project"`
	Workflow     string            `json:"workflow"`
	Cron         string            `json:"cron"`
	Timezone     string            `json:"timezone"`
	StartTime    *time.Time        `json:"start_time,omitempty"`
	EndTime      *time.Time        `json:"end_time,omitempty"`
	Catchup      string            `json:"catchup"`
	Priority     *Priority         `json:"-"`
	WorkerGroup  string            `json:"worker_group,omitempty"`
	Params       map[string]string `json:"params,omitempty"`
	SecretParams []string          `json:"secret_params,omitempty"` // written: params to store sealed; read back, sealed values mark them
	Enabled      bool              `json:"enabled"`
	NextFireTime *time.Time        `json:"next_fire_time,omitempty"`
	LastFireTime *time.Time        `json:"last_fire_time,omitempty"`
	Note         string            `json:"note,omitempty"` // what the last pass skipped, if anything
	Overlap      Overlap           `json:"overlap"`        // what a fire does while a run of the schedule is unfinished
	SkippedFires int64             `json:"skipped_fires"`  // fires not run under overlap skip or replace
	// LastSkippedTime is the latest schedule time not run under overlap skip
	// or replace.
	LastSkippedTime *time.Time `json:"last_skipped_time,omitempty"`
	Revision        int64      `json:"revision"` // moves on at every edit and fire
	Version         int64      `json:"version"`  // moves on at every edit only
	UpdatedBy       string     `json:"updated_by,omitempty"`
	// Alerts and Deadline, when set, override the workflow's for the
	// schedule's runs.
	Alerts   *Alerts `json:"alerts,omitempty"`
	Deadline string  `json:"deadline,omitempty"`
	// Calendar names the business calendar the fires honour ("": none),
	// the project's own first, else a shared one; OnHoliday is what a fire
	// due on a day off does (schedule.OnHoliday*).
	Calendar  string `json:"calendar,omitempty"`
	OnHoliday string `json:"on_holiday,omitempty"`
	// PinVersion is the workflow version the fires run (0: the latest at
	// each fire).
	PinVersion int       `json:"pin_version,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// PausedFires, written by a resume (enabled again), are the fire times
	// due while the schedule was disabled: the ledger lists them missed.
	PausedFires []time.Time `json:"-"`
}

// Backfill runs a workflow once per schedule time of a past range, in order,
// with at most Parallelism runs unfinished at a time.
type Backfill struct {
	ID           int64             `json:"id"`
	ProjectID    int64             `json:"project_id"`
	Project      string            `json:"project"`
	Workflow     string            `json:"workflow"`
	Cron         string            `json:"cron"`
	Timezone     string            `json:"timezone"`
	Start        time.Time         `json:"start"`
	End          time.Time         `json:"end"`
	Times        []time.Time       `json:"times"` // the schedule times, in submission order
	Total        int               `json:"total"` // len(Times), also when Times was not read
	Submitted    int               `json:"submitted"`
	Parallelism  int               `json:"parallelism"`
	OnFailure    string            `json:"on_failure"`
	Priority     *Priority         `json:"-"`
	WorkerGroup  string            `json:"worker_group,omitempty"`
	Params       map[string]string `json:"params,omitempty"`
	SecretParams []string          `json:"secret_params,omitempty"` // as Schedule's
	DryRun       bool              `json:"dry_run,omitempty"`
	State        BackfillState     `json:"state"`
	Reason       string            `json:"reason,omitempty"`
	Revision     int64             `json:"revision"`
	RequestedBy  string            `json:"requested_by,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	EndAt        *time.Time        `json:"end_at,omitempty"`
	// Read with the runs: how many are unfinished (paused ones too: they
	// can be resumed), succeeded, failed (failed or stopped) so far.
	Unfinished, Succeeded, Failed int

	// Calendar and OnHoliday are the schedule's business calendar the
	// times were decided under ("": none); Refused are the cron's times of
	// the range it did not run as themselves (left out of lists, as Times).
	Calendar  string            `json:"calendar,omitempty"`
	OnHoliday string            `json:"on_holiday,omitempty"`
	Refused   []BackfillRefusal `json:"refused,omitempty"`
}

// BackfillRefusal is a cron time of a backfill's range its calendar did
// not run as itself: moved to MovedTo (next or previous business day), or
// dropped (nil). The ledger of fires records such a time of a schedule as
// refused_calendar.
type BackfillRefusal struct {
	Time    time.Time  `json:"time"`
	MovedTo *time.Time `json:"moved_to,omitempty"`
}

// Overlap is what a schedule does with a fire while one of its runs is
// unfinished (submitted, queued, running, pausing or stopping).
type Overlap string

// Overlap policies.
const (
	OverlapAllow   Overlap = "allow"   // run it beside the others (the default)
	OverlapSkip    Overlap = "skip"    // do not run it; count it as skipped
	OverlapWait    Overlap = "wait"    // queue it; it runs when the previous runs end, in order
	OverlapReplace Overlap = "replace" // stop the unfinished runs, then run it
)

// Overlaps lists the overlap policies.
func Overlaps() []Overlap { return []Overlap{OverlapAllow, OverlapSkip, OverlapWait, OverlapReplace} }

// Valid reports whether o names a policy ("" is allow).
func (o Overlap) Valid() bool {
	return o == "" || o == OverlapAllow || o == OverlapSkip || o == OverlapWait || o == OverlapReplace
}

// Serial reports whether runs of the schedule run one at a time.
func (o Overlap) Serial() bool { return o == OverlapWait || o == OverlapReplace }

// Calendar is a named business calendar: which dates are business days.
// Project "" (ProjectID 0) is a shared calendar; a project's own calendar
// of the same name comes first for its schedules.
type Calendar struct {
	ID          int64          `json:"id"`
	ProjectID   int64          `json:"project_id"`
	Project     string         `json:"project"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Weekend     []time.Weekday `json:"weekend"`            // not business days; none is a valid choice
	Holidays    []CalendarDay  `json:"holidays,omitempty"` // dates off, by date
	Workdays    []CalendarDay  `json:"workdays,omitempty"` // extra working days (make-up workdays), by date
	Version     int64          `json:"version"`
	UpdatedBy   string         `json:"updated_by,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// CalendarDay is a date (YYYY-MM-DD) of a calendar with an optional name.
type CalendarDay struct {
	Date string `json:"date"`
	Name string `json:"name,omitempty"`
}
