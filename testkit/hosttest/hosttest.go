// Package hosttest is a tasktype.Host that records which of the leader's
// services a type's master face called, for the types' tests.
package hosttest

import (
	"context"
	"fmt"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Host records each call as "Service(task id[, reason])".
type Host struct{ Calls []string }

// Attempt is an attempt of task ID.
type Attempt int64

// TaskInstanceID is the attempt's task.
func (a Attempt) TaskInstanceID() int64 { return int64(a) }

func (h *Host) add(s string, a tasktype.Attempt, why ...tasktype.CancelReason) {
	c := fmt.Sprintf("%s(%d", s, a.TaskInstanceID())
	for _, w := range why {
		c += ", " + string(w)
	}
	h.Calls = append(h.Calls, c+")")
}

func (h *Host) StartChild(_ context.Context, a tasktype.Attempt) { h.add("StartChild", a) }
func (h *Host) StartWait(_ context.Context, a tasktype.Attempt)  { h.add("StartWait", a) }
func (h *Host) CancelChild(_ context.Context, a tasktype.Attempt, why tasktype.CancelReason) {
	h.add("CancelChild", a, why)
}
func (h *Host) CancelWait(_ context.Context, a tasktype.Attempt, why tasktype.CancelReason) {
	h.add("CancelWait", a, why)
}

var _ tasktype.Host = (*Host)(nil)
