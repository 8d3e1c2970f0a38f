package model

import (
	"fmt"
	"strings"
)

// WaitCause is why a task instance is not running (docs/architecture.md,
// "Reasons for a wait"). The set is open: code that holds a task for its
// own reason records its cause on the row (TaskInstance.WaitCause).
type WaitCause string

// Wait causes.
const (
	WaitUpstream    WaitCause = "upstream"     // upstream tasks not succeeded yet
	WaitQueue       WaitCause = "queue"        // queued behind N tasks (priority order)
	WaitNoWorker    WaitCause = "no_worker"    // no live worker in the group
	WaitWorkersBusy WaitCause = "workers_busy" // every worker of the group full, overloaded or failing
	WaitTaskGroup   WaitCause = "task_group"   // the task group is full
	WaitPlatform    WaitCause = "platform"     // the platform cap (--max-running)
	WaitRetry       WaitCause = "retry"        // a retry waiting for its interval
	WaitDependent   WaitCause = "dependent"    // a dependent task waiting on another workflow
	WaitWorker      WaitCause = "worker"       // dispatched, waiting for the worker to start it
)

// The dispatcher's reasons, which it writes on the instance (its reason
// field): made here so that the API can tell which of an instance's tasks
// a reason is about (ParseDispatchWait).

// WaitPlatformReason is the reason of a task held by the platform cap.
func WaitPlatformReason(running int) string {
	return fmt.Sprintf("waiting for a platform slot (%d tasks running, the cap)", running)
}

// WaitTaskGroupReason is the reason of a task held by a full task group
// (capacity < 0: the group does not exist).
func WaitTaskGroupReason(group string, inUse, capacity int) string {
	if capacity < 0 {
		return fmt.Sprintf("waiting for task group %q, which does not exist", group)
	}
	return fmt.Sprintf("waiting for task group %q (%d of %d in use)", group, inUse, capacity)
}

// WaitNoWorkerReason is the reason of a task whose worker group has no worker.
func WaitNoWorkerReason(group string) string {
	return fmt.Sprintf("waiting for a worker in group %q (none registered)", group)
}

// WaitBusyReason is the reason of a task whose group's workers are all
// skipped; why lists the counts per cause ("2 full, 1 overloaded").
func WaitBusyReason(group, why string) string {
	return fmt.Sprintf("waiting for a worker in group %q: every worker is busy (%s)", group, why)
}

// ParseDispatchWait reads a dispatcher reason back: its cause and the
// worker group or task group it names ("" for the platform cap). ok is
// false for any other reason.
func ParseDispatchWait(reason string) (cause WaitCause, key string, ok bool) {
	switch {
	case strings.HasPrefix(reason, "waiting for a platform slot"):
		return WaitPlatform, "", true
	case strings.HasPrefix(reason, "waiting for task group "):
		return WaitTaskGroup, quoted(strings.TrimPrefix(reason, "waiting for task group ")), true
	case strings.HasPrefix(reason, "waiting for a worker in group "):
		rest := strings.TrimPrefix(reason, "waiting for a worker in group ")
		g := quoted(rest)
		if strings.Contains(rest, "(none registered)") {
			return WaitNoWorker, g, true
		}
		return WaitWorkersBusy, g, true
	}
	return "", "", false
}

// quoted is the Go-quoted string s starts with, unquoted.
func quoted(s string) string {
	if !strings.HasPrefix(s, `"`) {
		return ""
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '"' {
			var v string
			if _, err := fmt.Sscanf(s[:i+1], "%q", &v); err == nil {
				return v
			}
			return ""
		}
	}
	return ""
}
