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

const claimBatch = 64

// consumer turns commands into running workflow instances, starts queued
// runs whose turn came, and hands operator actions to their instances. It is woken by
// Notify when a command is written in this process, and scans on a slow
// timer as a fallback for commands written elsewhere.
type consumer struct {
	t    *term
	log  *zap.Logger
	poll time.Duration
	wake chan struct{}
	life startstop.Base
}

func newConsumer(t *term, poll time.Duration) *consumer {
	c := &consumer{t: t, log: t.log.Named("consumer"), poll: poll, wake: make(chan struct{}, 1)}
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
	failing := false
	for {
		for ctx.Err() == nil {
			insts, err := c.t.store.ClaimCommands(ctx, c.t.m.cfg.Host, c.t.epoch, claimBatch)
			if err != nil {
				c.t.checkFenced(err)
				if !failing && ctx.Err() == nil {
					c.log.Error("claim commands failed; will retry", zap.Error(err))
				}
				failing = true
				break
			}
			failing = false
			metrics.Instance(model.WorkflowRunning, len(insts))
			for _, inst := range insts {
				if err := c.t.startInstance(inst, false); err != nil {
					c.log.Error("start workflow instance", logging.Instance(inst.ID, inst.Project, inst.Workflow), zap.Error(err))
				}
			}
			// Queued runs (schedule overlap wait/replace, max_active_runs)
			// whose turn came: a run ended, here or under an earlier leader.
			rel, err := c.t.store.ReleaseQueued(ctx, c.t.m.cfg.Host)
			if err != nil {
				c.t.checkFenced(err)
				if !failing && ctx.Err() == nil {
					c.log.Error("release queued runs failed; will retry", zap.Error(err))
				}
				failing = true
				break
			}
			metrics.Instance(model.WorkflowRunning, len(rel))
			for _, inst := range rel {
				c.log.Info("queued run released", logging.Instance(inst.ID, inst.Project, inst.Workflow))
				if err := c.t.startInstance(inst, false); err != nil {
					c.log.Error("start workflow instance", logging.Instance(inst.ID, inst.Project, inst.Workflow), zap.Error(err))
				}
			}
			acts, err := c.t.store.ClaimActions(ctx, claimBatch)
			if err != nil {
				c.t.checkFenced(err)
				if !failing && ctx.Err() == nil {
					c.log.Error("claim actions failed; will retry", zap.Error(err))
				}
				failing = true
				break
			}
			for _, a := range acts {
				c.t.route(a)
			}
			if len(insts) < claimBatch && len(acts) < claimBatch {
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
