package model

import (
	"slices"
	"time"
)

// ActionKind names an operator action on a workflow instance or on one task
// instance.
type ActionKind string

// Instance actions.
const (
	// ActionStop kills the running tasks and starts nothing new; the
	// instance ends stopped.
	ActionStop ActionKind = "stop"
	// ActionPause lets running tasks finish and starts nothing new; the
	// instance ends paused.
	ActionPause ActionKind = "pause"
	// ActionResume continues a paused or stopped instance in place.
	ActionResume ActionKind = "resume"
	// ActionRerun runs the whole finished instance again in place (same id,
	// new attempt rows, run_times + 1).
	ActionRerun ActionKind = "rerun"
	// ActionRecoverFailed reruns only the failed and killed tasks and their
	// downstream, in place.
	ActionRecoverFailed ActionKind = "recover_failed"
)

var (
	instanceActions = []ActionKind{ActionStop, ActionPause, ActionResume, ActionRerun, ActionRecoverFailed}
	taskActions     = []ActionKind{ActionKill, ActionForceSuccess, ActionForceStart}
)

// InstanceActions lists the actions on a workflow instance.
func InstanceActions() []ActionKind { return slices.Clone(instanceActions) }

// TaskActions lists the actions on a task instance.
func TaskActions() []ActionKind { return slices.Clone(taskActions) }

// OnInstance reports whether k is an action on a workflow instance.
func (k ActionKind) OnInstance() bool { return slices.Contains(instanceActions, k) }

// OnTask reports whether k is an action on a task instance.
func (k ActionKind) OnTask() bool { return slices.Contains(taskActions, k) }

// Column sizes of sql/ (characters).
const (
	MaxActionBy     = 128
	MaxActionDetail = 1024
	MaxActionName   = 32
)

// ActionRequest asks the master to act on an instance or on one task.
type ActionRequest struct {
	// InstanceID is the instance of an instance action. For a task action
	// it may be 0 (the task's instance is used) or must be the task's.
	InstanceID int64
	// TaskInstanceID is the task of a task action; 0 for instance actions.
	TaskInstanceID int64
	Action         ActionKind
	By             string // who asked; at most MaxActionBy characters
	// Version is the workflow version a rerun or recover_failed runs: 0
	// the instance's own, VersionLatest the newest, else that number.
	Version int
}

// VersionLatest asks a restart action for the workflow's newest version.
const VersionLatest = -1

// ActionResult is what RequestAction wrote.
type ActionResult struct {
	CommandID      int64
	InstanceID     int64
	TaskInstanceID int64 // 0 for instance actions
	Action         ActionKind
	// State is the instance's state after the request: ready_stop or
	// ready_pause for stop and pause, else unchanged (the master acts later).
	State WorkflowState
	// TaskState is the task's state for task actions (unchanged).
	TaskState TaskState
}

// Action is a queued operator action, as ClaimActions hands it to the master.
type Action struct {
	ID             int64 // the command id
	InstanceID     int64
	TaskInstanceID int64 // 0 for instance actions
	Action         ActionKind
	By             string
	Version        int // rerun, recover_failed: the version to switch to (0: the instance's own)
	CreatedAt      time.Time
}

// HistoryEntry is one line of an instance's history: an operator request
// or what the master did about it.
type HistoryEntry struct {
	ID             int64
	InstanceID     int64
	TaskInstanceID int64 // 0 when about the whole instance
	Action         ActionKind
	By             string
	At             time.Time
	Detail         string
}

// TimeoutWarning is the history action the runner records when a task or
// the workflow runs past its timeout; it is also an event (EventTimeout).
const TimeoutWarning ActionKind = "timeout_warning"

// Task actions.
const (
	// ActionKill kills one task instance.
	ActionKill ActionKind = "kill"
	// ActionForceSuccess makes a failed or killed task count as
	// forced_success, so its downstream may run.
	ActionForceSuccess ActionKind = "force_success"
	// ActionForceStart lets a task waiting for a full task group start
	// once without a slot.
	ActionForceStart ActionKind = "force_start"
)
