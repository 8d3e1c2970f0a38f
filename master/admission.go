package master

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
)

// Admission (docs/architecture.md, Admission): the leader's queues that
// grow with what is asked of it, not with what it already runs, are bounded
// here. Runners (one goroutine and its state per instance) are bounded by
// admission.max_running_instances; the outbox's unpublished rows, which every
// claim and task change adds to, by admission.max_pending_events; a claim's
// transaction by admission.claim_batch. Past a limit the consumer claims no
// new runs: their commands stay in the DB, the runs stay submitted with a
// reason saying which limit, and claims resume as runs end or the
// publisher catches up. The other queues follow from these: a runner's
// mailboxes and the dispatch queue hold what its instances' tasks make,
// and the task events what workers report of them.

// load is what the consumer measured before a pass.
type load struct {
	running       int64 // runners of this term
	pendingEvents int64 // outbox rows not yet published (ids above the publisher's, up to the limit)
}

// limits are the admission settings as last read.
type limits struct {
	maxRunning, maxPendingEvents, claimBatch int64
}

// verdict is a pass's decision: how many start commands to claim, and
// whether only those of sub_workflow runs.
type verdict struct {
	claim int
	// childrenOnly: a limit is reached (reason says which, limit names the
	// setting) and only sub_workflow runs are claimed: their parents,
	// already running, wait for them, so holding them could wedge the
	// master with every runner a parent waiting on a child it never starts.
	childrenOnly bool
	limit        string
	reason       string
}

// admit decides a pass from the load and the limits: below every limit it
// claims up to claim_batch, no more than the room left for runners; at a
// limit it claims child runs only and says why the others wait.
func admit(l load, lim limits) verdict {
	switch {
	case l.pendingEvents >= lim.maxPendingEvents:
		return verdict{claim: int(lim.claimBatch), childrenOnly: true, limit: model.SettingMaxPendingEvents,
			reason: fmt.Sprintf("waiting: master has %d events not yet published (%s)", lim.maxPendingEvents, model.SettingMaxPendingEvents)}
	case l.running >= lim.maxRunning:
		return verdict{claim: int(lim.claimBatch), childrenOnly: true, limit: model.SettingMaxRunningInstances,
			reason: fmt.Sprintf("waiting: master at %d running instances (%s)", lim.maxRunning, model.SettingMaxRunningInstances)}
	}
	return verdict{claim: int(min(lim.claimBatch, lim.maxRunning-l.running))}
}

// settle is the state a pass leaves, from its decision and the commands it
// claimed: held as decided; or, when the room under the running limit cut
// the claim short and all of it was taken, still at that limit (runs are
// left waiting; so a master at its limit does not flip to admitting and
// back with every run that ends).
func settle(a verdict, claimed int, lim limits) verdict {
	if a.reason != "" || a.claim >= int(lim.claimBatch) || claimed < a.claim {
		return a
	}
	held := admit(load{running: lim.maxRunning}, lim)
	held.claim = a.claim
	return held
}

// limitsEvery is how often the consumer reads the settings again: a
// change takes effect within it, and a busy consumer's passes do not each
// read them.
const limitsEvery = time.Second

// admissionStore is what admission reads and writes.
type admissionStore interface {
	SettingInt(ctx context.Context, name string, def int64) (int64, error)
	EventBacklog(ctx context.Context, after int64, most int) (int64, error)
	AdmissionPut(ctx context.Context, reason string) error
	InstanceNoteWaiting(ctx context.Context, reason string) (int64, error)
}

// gate is the consumer's admission: it owns the limits as last read and
// the state last recorded. Only the consumer's goroutine uses it.
type gate struct {
	store admissionStore
	log   *zap.Logger
	// running and published measure the term: its runners, and the highest
	// outbox id its publisher published (the backlog is above it).
	running   func() int
	published func() int64

	lim    limits
	readAt time.Time
	// recorded is the reason in the DB ("" admitting); known says it was
	// written this term; notedAt when waiting runs were last given it.
	recorded string
	known    bool
	notedAt  time.Time
}

// noteEvery bounds how often the runs asked for while the master is held
// are given the reason (one UPDATE of the submitted ones that lack it).
const noteEvery = 500 * time.Millisecond

// decide measures the term and decides the pass.
func (g *gate) decide(ctx context.Context) (verdict, error) {
	if g.readAt.IsZero() || time.Since(g.readAt) >= limitsEvery {
		g.readLimits(ctx)
	}
	l := load{running: int64(g.running())}
	var err error
	if l.pendingEvents, err = g.store.EventBacklog(ctx, g.published(), int(g.lim.maxPendingEvents)); err != nil {
		return verdict{}, err
	}
	a := admit(l, g.lim)
	metrics.AdmissionQueue.WithLabelValues("running_instances").Set(float64(l.running))
	metrics.AdmissionQueue.WithLabelValues("pending_events").Set(float64(l.pendingEvents))
	return a, nil
}

// readLimits reads the three settings (a failed read keeps the last
// values: the master never stops for a setting).
func (g *gate) readLimits(ctx context.Context) {
	g.readAt = time.Now()
	read := func(name string, def int64, cur int64) int64 {
		v, err := g.store.SettingInt(ctx, name, def)
		if err != nil {
			if ctx.Err() == nil {
				g.log.Warn("read admission setting; keeping the last value", zap.String("setting", name), zap.Error(err))
			}
			if cur > 0 {
				return cur
			}
		}
		return v
	}
	g.lim = limits{
		maxRunning:       read(model.SettingMaxRunningInstances, model.DefaultMaxRunningInstances, g.lim.maxRunning),
		maxPendingEvents: read(model.SettingMaxPendingEvents, model.DefaultMaxPendingEvents, g.lim.maxPendingEvents),
		claimBatch:       read(model.SettingClaimBatch, model.DefaultClaimBatch, g.lim.claimBatch),
	}
	metrics.AdmissionLimit.WithLabelValues("running_instances").Set(float64(g.lim.maxRunning))
	metrics.AdmissionLimit.WithLabelValues("pending_events").Set(float64(g.lim.maxPendingEvents))
	metrics.AdmissionLimit.WithLabelValues("claimed").Set(float64(g.lim.claimBatch))
}

// record writes the state a pass left (settle) when it changed (the admission row
// the API reads, the log line, the metrics), and while held gives the
// waiting runs the reason. Errors are returned for the consumer to log.
func (g *gate) record(ctx context.Context, a verdict) error {
	if !g.known || a.reason != g.recorded {
		if err := g.store.AdmissionPut(ctx, a.reason); err != nil {
			return err
		}
		if a.reason != "" {
			metrics.AdmissionWaits.WithLabelValues(a.limit).Inc()
			metrics.AdmissionSaturated.Set(1)
			g.log.Warn("admission: holding new runs in the database", zap.String("reason", a.reason), zap.String("setting", a.limit))
		} else {
			metrics.AdmissionSaturated.Set(0)
			if g.known {
				g.log.Info("admission: claiming new runs again")
			}
		}
		g.recorded, g.known, g.notedAt = a.reason, true, time.Time{}
	}
	if a.reason != "" && time.Since(g.notedAt) >= noteEvery {
		g.notedAt = time.Now()
		if _, err := g.store.InstanceNoteWaiting(ctx, a.reason); err != nil {
			return err
		}
	}
	return nil
}
