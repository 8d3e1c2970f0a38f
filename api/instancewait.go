package api

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

const (
	// defaultTasksLimit is the task page of GET /instances/{id} when none is
	// asked for: every task of all but the largest instances, as before the
	// page existed (clients that read all tasks keep working); maxTasksLimit
	// bounds one answer. Watchers ask for a small page or none.
	defaultTasksLimit = 10000
	maxTasksLimit     = 10000
	// maxInstanceWait bounds ?wait= (a long poll for the instance's end).
	maxInstanceWait = time.Minute
	// endRecheck is how often a waiting GET re-reads the instance: the end
	// is signalled in-process when this process's master writes it (a
	// standalone), and seen within this much otherwise (a separate api).
	endRecheck = 250 * time.Millisecond
)

// instanceParams are GET /instances/{id}'s query parameters.
type instanceParams struct {
	limit, offset int
	wait          time.Duration
	pending       int  // at most this many pending tasks in the answer
	noWaits       bool // waits=false: no waits and no pending tasks derived
	forecast      bool // forecast=true: the running instance's projected end
}

func instanceQuery(r *http.Request) (instanceParams, error) {
	var p instanceParams
	limit, err := queryInt(r, "tasks_limit", defaultTasksLimit, 0, maxTasksLimit)
	if err != nil {
		return p, err
	}
	offset, err := queryInt(r, "tasks_offset", 0, 0, 1<<31-1)
	if err != nil {
		return p, err
	}
	p.limit, p.offset = int(limit), int(offset)
	// A run whose tasks are still being made has thousands pending: a page
	// that shows a few asks for a few (pending_total says how many).
	pending, err := queryInt(r, "pending_limit", math.MaxInt32, 0, math.MaxInt32)
	if err != nil {
		return p, err
	}
	p.pending = int(pending)
	// Deriving waits reads every task of the instance and its definition:
	// a first paint that needs only states asks for none.
	if v := r.URL.Query().Get("waits"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return p, badRequest("query parameter waits must be true or false, got %q", v)
		}
		p.noWaits = !b
	}
	// A forecast reads every task of the instance and the history of its
	// workflow: asked for, so a page's cost stays a page's.
	if v := r.URL.Query().Get("forecast"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return p, badRequest("query parameter forecast must be true or false, got %q", v)
		}
		p.forecast = b
	}
	if s := r.URL.Query().Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > maxInstanceWait {
			return p, badRequest("query parameter wait must be a duration from 0s to %v (e.g. 30s), got %q", maxInstanceWait, s)
		}
		p.wait = d
	}
	return p, nil
}

// waitInstance reads instance id; with wait > 0 it answers when the
// instance has finished or wait has passed, whichever comes first. It
// sleeps on the store's end signal, not in a polling loop.
func (h *handlers) waitInstance(ctx context.Context, id int64, wait time.Duration) (model.WorkflowInstance, error) {
	if wait <= 0 {
		return h.Store.InstanceGet(ctx, id)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		// Listen before reading: an end written in between still wakes us.
		ended, stop := h.Store.InstanceWaitEnd(id)
		inst, err := h.Store.InstanceGet(ctx, id)
		if err != nil || inst.State.Finished() {
			stop()
			return inst, err
		}
		every := h.EndRecheck
		if every <= 0 {
			every = endRecheck
		}
		recheck := time.NewTimer(every)
		select {
		case <-ended:
		case <-recheck.C:
		case <-deadline.C:
			stop()
			recheck.Stop()
			return h.Store.InstanceGet(ctx, id)
		case <-ctx.Done():
			stop()
			recheck.Stop()
			return inst, ctx.Err()
		}
		stop()
		recheck.Stop()
	}
}
