package master

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// GitSyncTick is how often the leader looks for Git bindings due a sync
// (Config.GitSyncTick's default).
const GitSyncTick = 30 * time.Second

// gitSyncTimeout bounds one periodic sync (its fetch has its own bound).
const gitSyncTimeout = 5 * time.Minute

// gitStore is the periodic Git sync's.
type gitStore interface {
	GitBindingsPeriodic(ctx context.Context) ([]model.GitBinding, error)
}

// gitDue is the projects whose binding is due a sync at now: never synced,
// or last synced at least its interval ago. A pure decision.
func gitDue(bs []model.GitBinding, now time.Time) []string {
	var due []string
	for _, b := range bs {
		if b.SyncInterval <= 0 {
			continue
		}
		if b.LastSyncedAt == nil || !now.Before(b.LastSyncedAt.Add(b.SyncInterval)) {
			due = append(due, b.Project)
		}
	}
	return due
}

// gitPoller is the leader's periodic Git sync: each tick it syncs the
// bindings due, one after another, through sync (the API's sync, as the
// user who set the binding). A sync's outcome is the binding's state and a
// git_sync event, which the alerter turns into an alert for a refused
// commit; the poller only logs a sync that could not run. Running on the
// leader alone, a binding is synced by one master at a time; a sync cut by a
// failover is done again by the next leader, which is harmless: a commit
// applied twice makes no new versions.
type gitPoller struct {
	store gitStore
	sync  func(ctx context.Context, project string) error
	every time.Duration
	log   *zap.Logger
	life  startstop.Base
}

func newGitPoller(st gitStore, sync func(context.Context, string) error, every time.Duration, log *zap.Logger) *gitPoller {
	if every <= 0 {
		every = GitSyncTick
	}
	p := &gitPoller{store: st, sync: sync, every: every, log: log.Named("gitsync")}
	p.life.Name, p.life.Log = "git poller", p.log
	return p
}

func (p *gitPoller) Start(ctx context.Context) error {
	if p.sync == nil { // no syncer in this process: nothing to do
		return nil
	}
	if _, err := p.life.Begin(ctx); err != nil {
		return err
	}
	p.life.Go(p.run)
	return nil
}

// Stop ends the loop and waits for it, a sync in progress cancelled.
func (p *gitPoller) Stop() { _ = p.life.Stop(nil) }

func (p *gitPoller) run(ctx context.Context) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		p.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *gitPoller) tick(ctx context.Context) {
	bs, err := p.store.GitBindingsPeriodic(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("list the periodic git bindings", zap.Error(err))
		}
		return
	}
	// the bindings' times are wall-clock times, as the store wrote them
	for _, project := range gitDue(bs, time.Now()) {
		sctx, cancel := context.WithTimeout(ctx, gitSyncTimeout)
		err := p.sync(sctx, project)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil { // the binding's state and event say what; this is for the server's log
			p.log.Info("periodic git sync did not apply", zap.String("project", project), zap.Error(err))
		}
	}
}
