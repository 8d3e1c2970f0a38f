package model

import (
	"encoding/json"
	"slices"
	"time"
)

// Event kinds: what changed state.
const (
	EventInstance = "instance"
	EventTask     = "task"
	EventTimeout  = "timeout" // a timeout warning (state timeout_warning)
)

// Event is one committed state change of a workflow instance or a task
// instance, as published from the outbox. Seq is its place in the stream:
// increasing, and what a reader resumes from.
type Event struct {
	Seq            int64           `json:"id"`
	Time           time.Time       `json:"time"`
	Kind           string          `json:"kind"`
	Project        string          `json:"project"`
	Workflow       string          `json:"workflow"`
	InstanceID     int64           `json:"instance_id"`
	TaskInstanceID int64           `json:"task_instance_id,omitempty"`
	TaskName       string          `json:"task_name,omitempty"`
	State          string          `json:"state"`
	Attempt        int             `json:"attempt"`
	Detail         json.RawMessage `json:"detail,omitempty"` // small JSON object, or nil
}

// Alerts says which runs alert, and through which alert channels: a
// workflow's spec (alerts:) or its schedule's override. The spec checks
// the values (common/spec).
type Alerts struct {
	On       []string `json:"on" yaml:"on"`
	Channels []string `json:"channels" yaml:"channels"`
}

// Wants reports whether trigger is in On.
func (a *Alerts) Wants(trigger string) bool {
	if a == nil {
		return false
	}
	for _, on := range a.On {
		if on == trigger {
			return true
		}
	}
	return false
}

// EventFilter selects events; zero fields match all.
type EventFilter struct {
	Project  string
	Workflow string
	Instance int64
	// Kinds limits events to these kinds (EventInstance, ...); nil: all.
	Kinds []string
	// Projects limits events to these projects (the caller's viewable
	// ones); nil: no limit. Set by the API, never from a query.
	Projects []string
}

// Match reports whether e passes f.
func (f EventFilter) Match(e Event) bool {
	return (f.Projects == nil || slices.Contains(f.Projects, e.Project)) &&
		(f.Project == "" || f.Project == e.Project) &&
		(f.Workflow == "" || f.Workflow == e.Workflow) &&
		(f.Instance == 0 || f.Instance == e.InstanceID) &&
		(f.Kinds == nil || slices.Contains(f.Kinds, e.Kind))
}

// EventKinds are the kinds an event can have, in the order documented.
var EventKinds = []string{EventInstance, EventTask, EventTimeout, EventGitSync, EventPromotion}
