// Package model holds Beluga's domain types and the states of workflow and task
// instances. It has no dependency on storage or transport.
package model

import "slices"

// WorkflowState is the state of a workflow instance.
type WorkflowState string

// Workflow instance states (docs/architecture.md, "States").
const (
	WorkflowSubmitted  WorkflowState = "submitted"
	WorkflowRunning    WorkflowState = "running"
	WorkflowReadyPause WorkflowState = "ready_pause"
	WorkflowPaused     WorkflowState = "paused"
	WorkflowReadyStop  WorkflowState = "ready_stop"
	WorkflowStopped    WorkflowState = "stopped"
	WorkflowFailed     WorkflowState = "failed"
	WorkflowSucceeded  WorkflowState = "succeeded"
)

// Finished reports whether no more work happens for the instance without an
// operator action.
func (s WorkflowState) Finished() bool {
	switch s {
	case WorkflowPaused, WorkflowStopped, WorkflowFailed, WorkflowSucceeded:
		return true
	}
	return false
}

// Valid reports whether s is a known workflow state.
func (s WorkflowState) Valid() bool {
	switch s {
	case WorkflowSubmitted, WorkflowRunning, WorkflowReadyPause, WorkflowPaused,
		WorkflowReadyStop, WorkflowStopped, WorkflowFailed, WorkflowSucceeded:
		return true
	}
	return false
}

// TaskState is the state of one task instance (one attempt of a task).
type TaskState string

// Task instance states.
const (
	TaskSubmitted          TaskState = "submitted"
	TaskDispatched         TaskState = "dispatched"
	TaskRunning            TaskState = "running"
	TaskSucceeded          TaskState = "succeeded"
	TaskFailed             TaskState = "failed"
	TaskKilled             TaskState = "killed"
	TaskPaused             TaskState = "paused"
	TaskNeedFaultTolerance TaskState = "need_fault_tolerance"
	TaskDelayed            TaskState = "delayed"
	TaskForcedSuccess      TaskState = "forced_success"
	// TaskSkipped: a branch not taken (conditions, switch), or a task all of
	// whose upstreams were skipped. It never reaches a worker.
	TaskSkipped TaskState = "skipped"
)

// Finished reports whether the attempt has ended and will not change again on
// its own.
func (s TaskState) Finished() bool {
	switch s {
	case TaskSucceeded, TaskFailed, TaskKilled, TaskForcedSuccess, TaskPaused, TaskNeedFaultTolerance, TaskSkipped:
		return true
	}
	return false
}

// Success reports whether downstream tasks may run after this state.
func (s TaskState) Success() bool { return s == TaskSucceeded || s == TaskForcedSuccess }

// TaskStates are the known task states (those Valid accepts).
func TaskStates() []TaskState {
	return []TaskState{TaskSubmitted, TaskDispatched, TaskRunning, TaskSucceeded, TaskFailed, TaskKilled,
		TaskPaused, TaskNeedFaultTolerance, TaskDelayed, TaskForcedSuccess, TaskSkipped}
}

// Valid reports whether s is a known task state.
func (s TaskState) Valid() bool { return slices.Contains(TaskStates(), s) }

// Priority orders workflows and tasks in the dispatch queue; lower is more urgent.
type Priority int

// Priorities, most urgent first.
const (
	PriorityHighest Priority = 0
	PriorityHigh    Priority = 1
	PriorityMedium  Priority = 2
	PriorityLow     Priority = 3
	PriorityLowest  Priority = 4
)

var priorityNames = [...]string{"highest", "high", "medium", "low", "lowest"}

// String returns the lower-case name of the priority.
func (p Priority) String() string {
	if p < 0 || int(p) >= len(priorityNames) {
		return "medium"
	}
	return priorityNames[p]
}

// ParsePriority maps a name to a Priority; "" is medium.
func ParsePriority(s string) (Priority, bool) {
	if s == "" {
		return PriorityMedium, true
	}
	for i, n := range priorityNames {
		if n == s {
			return Priority(i), true
		}
	}
	return PriorityMedium, false
}

// FailureStrategy says what a workflow does after a task fails.
type FailureStrategy string

// Failure strategies.
const (
	// FailureEnd stops submitting new tasks; running ones finish; the instance fails.
	FailureEnd FailureStrategy = "end"
	// FailureContinue lets branches not downstream of the failure go on.
	FailureContinue FailureStrategy = "continue"
)

// CommandType is the kind of a queued command.
type CommandType string

// Command types.
const (
	CommandStart     CommandType = "start"
	CommandScheduled CommandType = "scheduled" // fired by a cron schedule
	CommandBackfill  CommandType = "backfill"  // one schedule time of a backfill
	CommandTriggered CommandType = "triggered" // started by a webhook trigger's delivery
	CommandDataset   CommandType = "dataset"   // started by its on_datasets inputs being produced
)

// BackfillState is the state of a backfill.
type BackfillState string

// Backfill states. Only running backfills submit runs.
const (
	BackfillRunning BackfillState = "running" // submitting its times, or waiting for its runs
	BackfillDone    BackfillState = "done"    // every time submitted and every run finished
	BackfillFailed  BackfillState = "failed"  // a run failed under on_failure stop: no more submitted
	BackfillStopped BackfillState = "stopped" // an operator stopped it: no more submitted
)

// Backfill failure policies.
const (
	BackfillContinue = "continue" // a failed run does not hold the others back (default)
	BackfillStop     = "stop"     // a failed run stops the backfill
)

// DefaultWorkerGroup is the group of a worker or task that names none.
const DefaultWorkerGroup = "default"
