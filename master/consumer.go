package master

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// actionBatch is the operator actions taken per pass.
const actionBatch = 64

// consumer turns commands into running workflow instances, starts queued
// runs whose turn came, and hands operator actions to their instances. It is woken by
// Notify when a command is written in this process, and scans on a slow
// timer as a fallback for commands written elsewhere. Each pass claims
// what its gate admits (admission.go).
type consumer struct {
	env   consumerEnv
	store consumerStore
	gate  gate
	host  string // this master's address: the owner of what it claims
	epoch int64
	log   *zap.Logger
	poll  time.Duration
	wake  chan struct{}
	life  startstop.Base
}

// consumerEnv is what the consumer hands on to its term: instances to run
// and actions to route (to a runner, or reopening a finished instance).
type consumerEnv interface {
	startInstance(inst model.WorkflowInstance, restore bool) error
	route(a model.Action)
	// bursting: the cron scheduler is writing a burst of fires, so only
	// runs a person asked for are claimed meanwhile.
	bursting() bool
	// running is the term's runners; published the highest outbox id its
	// publisher published (-1: none yet): the admission's measures.
	running() int
	published() int64
}

// consumerStore is what the consumer claims from the term's fenced view.
type consumerStore interface {
	InstanceClaimCommands(ctx context.Context, host string, epoch int64, limit int) ([]model.WorkflowInstance, error)
	InstanceClaimManualCommands(ctx context.Context, host string, epoch int64, limit int) ([]model.WorkflowInstance, error)
	InstanceClaimChildCommands(ctx context.Context, host string, epoch int64, limit int) ([]model.WorkflowInstance, error)
	InstanceReleaseQueued(ctx context.Context, host string, most int) ([]model.WorkflowInstance, error)
	ActionClaim(ctx context.Context, limit int) ([]model.Action, error)
	admissionStore
}

func newConsumer(env consumerEnv, st consumerStore, log *zap.Logger, host string, epoch int64, poll time.Duration) *consumer {
	c := &consumer{env: env, store: st, host: host, epoch: epoch, log: log.Named("consumer"), poll: poll, wake: make(chan struct{}, 1)}
	c.gate = gate{store: st, log: c.log, running: env.running, published: env.published}
	c.life.Name, c.life.Log = "consumer", c.log
	return c
}

func (c *consumer) Notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *consumer) Start(ctx context.Context) error {
	if _, err := c.life.Begin(ctx); err != nil {
		return err
	}
	c.life.Go(c.run)
	return nil
}

func (c *consumer) Stop() { _ = c.life.Stop(nil) }

func (c *consumer) run(ctx context.Context) {
	t := time.NewTicker(c.poll)
	defer t.Stop()
	defer metrics.AdmissionSaturated.Set(0) // a standby holds nothing
	failing := false
	for {
		for ctx.Err() == nil {
			a, err := c.gate.decide(ctx)
			if err != nil {
				if !failing && ctx.Err() == nil {
					c.log.Error("admission failed; will retry", zap.Error(err))
				}
				failing = true
				break
			}
			claim := c.store.InstanceClaimCommands
			switch {
			case a.childrenOnly:
				claim = c.store.InstanceClaimChildCommands
			case c.env.bursting():
				claim = c.store.InstanceClaimManualCommands // see scheduler.bursting
			}
			insts, err := claim(ctx, c.host, c.epoch, a.claim)
			if err != nil {
				if !failing && ctx.Err() == nil {
					c.log.Error("claim commands failed; will retry", zap.Error(err))
				}
				failing = true
				break
			}
			metrics.AdmissionQueue.WithLabelValues("claimed").Set(float64(len(insts)))
			if err := c.gate.record(ctx, settle(a, len(insts), c.gate.lim)); err != nil {
				// The claimed runs start all the same; the reason waits for the next pass.
				if !failing && ctx.Err() == nil {
					c.log.Error("record admission failed; will retry", zap.Error(err))
				}
				failing = true
			} else {
				failing = false
			}
			metrics.Instance(model.WorkflowRunning, len(insts))
			for _, inst := range insts {
				if err := c.env.startInstance(inst, false); err != nil {
					c.log.Error("start workflow instance", logging.Instance(inst.ID, inst.Project, inst.Workflow), zap.Error(err))
				}
			}
			// Queued runs (schedule overlap wait/replace, max_active_runs)
			// whose turn came: a run ended, here or under an earlier leader.
			room := a.claim - len(insts) // what admission leaves after the claim
			if a.childrenOnly {
				room = 0
			}
			rel, err := c.store.InstanceReleaseQueued(ctx, c.host, room)
			if err != nil {
				if !failing && ctx.Err() == nil {
					c.log.Error("release queued runs failed; will retry", zap.Error(err))
				}
				failing = true
				break
			}
			metrics.Instance(model.WorkflowRunning, len(rel))
			for _, inst := range rel {
				c.log.Info("queued run released", logging.Instance(inst.ID, inst.Project, inst.Workflow))
				if err := c.env.startInstance(inst, false); err != nil {
					c.log.Error("start workflow instance", logging.Instance(inst.ID, inst.Project, inst.Workflow), zap.Error(err))
				}
			}
			acts, err := c.store.ActionClaim(ctx, actionBatch)
			if err != nil {
				if !failing && ctx.Err() == nil {
					c.log.Error("claim actions failed; will retry", zap.Error(err))
				}
				failing = true
				break
			}
			for _, a := range acts {
				c.env.route(a)
			}
			if len(insts) < a.claim && len(acts) < actionBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

func (t *term) bursting() bool { return t.cron != nil && t.cron.Bursting() }

func (t *term) running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.runners)
}

func (t *term) published() int64 { return t.pub.handedOver() }
