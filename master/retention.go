package master

import (
	"context"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// retentionStore is the periodic purge's slice of the store.
type retentionStore interface {
	ProjectList(ctx context.Context) ([]model.Project, error)
	RetentionGet(ctx context.Context, project string) (model.ProjectRetention, error)
	RetentionPurge(ctx context.Context, project string, p model.RetentionPolicy, now time.Time, opt store.PurgeOptions) (store.RetentionPlan, error)
	AuditRetentionPurge(ctx context.Context, days int, now time.Time, opt store.PurgeOptions) (store.AuditRetention, error)
	SettingInt(ctx context.Context, name string, def int64) (int64, error)
	SettingPut(ctx context.Context, name, value string) (store.Setting, error)
}

// retentionSweep is the leader's periodic purge (docs/architecture.md,
// "Retention"): every retention.purge_every_hours (0: never) it purges
// every project under its policy in force, and the audit log, as
// POST /api/v1/retention/purge does, in the same bounded and paced
// batches. When it last began is in the settings table, so a new leader
// keeps the period instead of sweeping at each election; a sweep cut short
// by a failover is finished by the next (retention_pending).
type retentionSweep struct {
	store retentionStore
	clock Clock
	log   *zap.Logger
	check time.Duration // how often the period and the last sweep are read
	life  startstop.Base
}

// retentionCheck is how often a leader looks whether a sweep is due: a
// changed period takes effect within it.
const retentionCheck = time.Minute

func newRetentionSweep(st retentionStore, clock Clock, log *zap.Logger, check time.Duration) *retentionSweep {
	if check <= 0 {
		check = retentionCheck
	}
	if clock == nil {
		clock = realClock{}
	}
	r := &retentionSweep{store: st, clock: clock, log: log.Named("retention"), check: check}
	r.life.Name, r.life.Log = "retention", r.log
	return r
}

func (r *retentionSweep) Start(ctx context.Context) error {
	if _, err := r.life.Begin(ctx); err != nil {
		return err
	}
	r.life.Go(r.run)
	return nil
}

func (r *retentionSweep) Stop() { _ = r.life.Stop(nil) }

func (r *retentionSweep) run(ctx context.Context) {
	for {
		every, err1 := r.store.SettingInt(ctx, model.SettingRetentionPurgeEvery, 0)
		last, err2 := r.store.SettingInt(ctx, model.SettingRetentionLastPurge, 0)
		wait := r.check
		if err1 == nil && err2 == nil {
			var due bool
			if due, wait = sweepDue(time.Duration(every)*time.Hour, time.Unix(last, 0), r.clock.Now(), r.check); due {
				r.sweep(ctx)
				continue
			}
		} else if ctx.Err() == nil {
			r.log.Warn("read the retention period; will retry", zap.NamedError("period", err1), zap.NamedError("last", err2))
		}
		select {
		case <-ctx.Done():
			return
		case <-r.clock.After(wait):
		}
	}
}

// sweepDue decides whether a sweep is due at now, given the period (0:
// never) and when the last began; if not, how long to wait before looking
// again (at most check).
func sweepDue(every time.Duration, last, now time.Time, check time.Duration) (bool, time.Duration) {
	if every <= 0 {
		return false, check
	}
	next := last.Add(every)
	if !now.Before(next) {
		return true, 0
	}
	return false, min(next.Sub(now), check)
}

// sweep purges every project and the audit log once. Its start is written
// first: a sweep that fails is not retried before the next period.
func (r *retentionSweep) sweep(ctx context.Context) {
	now := r.clock.Now().UTC()
	if _, err := r.store.SettingPut(ctx, model.SettingRetentionLastPurge, strconv.FormatInt(now.Unix(), 10)); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("record the retention sweep; will retry", zap.Error(err))
		}
		select {
		case <-ctx.Done():
		case <-r.clock.After(r.check):
		}
		return
	}
	days, _ := r.store.SettingInt(ctx, model.SettingRetentionKeepDays, 0)
	runs, _ := r.store.SettingInt(ctx, model.SettingRetentionKeepRuns, 0)
	audit, _ := r.store.SettingInt(ctx, model.SettingRetentionAuditDays, 0)
	def := model.RetentionPolicy{KeepDays: int(days), KeepRuns: int(runs)}
	projects, err := r.store.ProjectList(ctx)
	if err != nil {
		r.log.Warn("retention sweep: list projects", zap.Error(err))
		return
	}
	start := time.Now()
	var gone, rows int64
	for _, p := range projects {
		own, err := r.store.RetentionGet(ctx, p.Name)
		if err != nil {
			r.log.Warn("retention sweep: read a project's policy", zap.String("project", p.Name), zap.Error(err))
			continue
		}
		plan, err := r.store.RetentionPurge(ctx, p.Name, own.Over(def), now, store.PurgeOptions{})
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("retention sweep: purge a project", zap.String("project", p.Name), zap.Error(err))
			}
			continue
		}
		gone += int64(len(plan.Instances))
		rows += plan.TaskRows + plan.EventRows + plan.HistoryRows + plan.CommandRows + plan.LedgerRows + plan.DatasetEventRows
	}
	a, err := r.store.AuditRetentionPurge(ctx, int(audit), now, store.PurgeOptions{})
	if err != nil && ctx.Err() == nil {
		r.log.Warn("retention sweep: purge the audit log", zap.Error(err))
	}
	r.log.Info("retention sweep", zap.Int("projects", len(projects)), zap.Int64("runs", gone), zap.Int64("rows", rows),
		zap.Int64("audit_rows", a.Rows), zap.Duration("took", time.Since(start)))
}
