package master

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// datasetStore is the dataset evaluator's slice of the store.
type datasetStore interface {
	DatasetPending(ctx context.Context, limit int) ([]int64, error)
	DatasetEvaluate(ctx context.Context, eventID int64) ([]model.DatasetFire, error)
}

// datasetPoll is how often the leader looks for produced partitions it has
// not evaluated; datasetBatch how many it reads at a time.
const (
	datasetPoll  = time.Second
	datasetBatch = 200
)

// datasetEvaluator is the leader's data-aware trigger (README, "Data-aware
// scheduling"): it evaluates each produced partition once, oldest first,
// in its own fenced transaction that writes the runs it starts with their
// ledger rows and marks it evaluated (store.DatasetEvaluate), then wakes
// the command consumer. Nothing is held in memory: a new leader goes on
// from the events still unevaluated, and the ledger's unique key keeps a
// partition's run single whatever was cut short.
type datasetEvaluator struct {
	store datasetStore
	env   schedulerEnv
	log   *zap.Logger
	wake  chan struct{}
	life  startstop.Base
}

func newDatasetEvaluator(env schedulerEnv, st datasetStore, log *zap.Logger) *datasetEvaluator {
	d := &datasetEvaluator{store: st, env: env, log: log.Named("datasets"), wake: make(chan struct{}, 1)}
	d.life.Name, d.life.Log = "datasets", d.log
	return d
}

// Notify makes the evaluator look now.
func (d *datasetEvaluator) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *datasetEvaluator) Start(ctx context.Context) error {
	if _, err := d.life.Begin(ctx); err != nil {
		return err
	}
	d.life.Go(d.run)
	return nil
}

func (d *datasetEvaluator) Stop() { _ = d.life.Stop(nil) }

func (d *datasetEvaluator) run(ctx context.Context) {
	failing := false
	for {
		more, err := d.pass(ctx)
		switch {
		case err != nil:
			if !failing && ctx.Err() == nil {
				d.log.Error("dataset evaluation failed; will retry", zap.Error(err))
			}
			failing = true
		default:
			failing = false
		}
		if more && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-time.After(datasetPoll):
		}
	}
}

// pass evaluates up to datasetBatch events; more says a full batch was read.
func (d *datasetEvaluator) pass(ctx context.Context) (more bool, err error) {
	ids, err := d.store.DatasetPending(ctx, datasetBatch)
	if err != nil || len(ids) == 0 {
		return false, err
	}
	fired := false
	for _, id := range ids {
		failpoint.Hit(failpoint.BeforeDatasetFire)
		fires, err := d.store.DatasetEvaluate(ctx, id)
		if err != nil {
			return false, err
		}
		for _, f := range fires {
			d.log.Info("dataset fire", zap.String("workflow", f.Workflow), zap.String("partition", f.Partition),
				zap.String("outcome", f.Outcome), zap.Bool("rerun", f.Rerun), zap.Int64("run", f.RunID), zap.Int64("event", f.EventID))
			fired = fired || f.RunID != 0
		}
		if len(fires) > 0 {
			failpoint.Hit(failpoint.AfterDatasetFire)
		}
	}
	if fired {
		d.env.runsWritten()
	}
	return len(ids) == datasetBatch, nil
}
