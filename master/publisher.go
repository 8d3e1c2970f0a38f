package master

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/events"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// EventsConfig configures the leader side of the event stream
// (docs/architecture.md, Events). Zero fields take the defaults.
type EventsConfig struct {
	// Hub wakes SSE readers in this process (standalone); nil in a cluster,
	// where the API polls the outbox.
	Hub *events.Hub
	// Poll is how soon the publisher looks for new outbox rows after it
	// found some (writes meanwhile do not hasten it); after it found none it
	// looks at once when this process appends some (a missed early look
	// included), and each empty look doubles the wait up to IdlePoll, the
	// pace at which writes of other processes are found. Defaults 20ms,
	// 250ms.
	Poll, IdlePoll time.Duration
	// Retention: published events older than this are pruned. Default 7 days.
	Retention time.Duration
	// Keep bounds the published events kept. Default 1,000,000.
	Keep int64
	// PruneEvery is how often retention runs. Default 1 minute.
	PruneEvery time.Duration
	// RetryBase is a webhook's first retry delay, doubled per attempt up to
	// RetryMax. Defaults 1s and 5 minutes.
	RetryBase, RetryMax time.Duration
	// MaxAttempts per event and subscription before it is given up (logged
	// in the delivery log). Default 8.
	MaxAttempts int
	// Client sends webhook POSTs (default: 10 s timeout).
	Client *http.Client
	// Secrets opens subscriptions' signing secrets, sealed by the API with
	// the same key (--secret-key-file); nil: signed subscriptions get
	// nothing, and say so in the log.
	Secrets *secret.Box
}

func (c EventsConfig) withDefaults() EventsConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Poll, 20*time.Millisecond)
	def(&c.IdlePoll, 250*time.Millisecond)
	def(&c.Retention, 7*24*time.Hour)
	def(&c.PruneEvery, time.Minute)
	def(&c.RetryBase, time.Second)
	def(&c.RetryMax, 5*time.Minute)
	if c.Keep <= 0 {
		c.Keep = 1_000_000
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 8
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: 10 * time.Second}
	}
	return c
}

// publishBatch is the most outbox rows numbered in one transaction.
const publishBatch = 1000

// publisher is the leader-only service that numbers committed outbox rows
// (store.EventPublishFrom; on SQLite they are public at commit and it only
// hands them over) and wakes the readers: the in-process hub, the webhook
// deliverer and the alerter. A new leader's publisher goes on from the
// outbox where the last one stopped, so nothing is lost across a failover,
// and only committed rows are ever numbered.
type publisher struct {
	store  publishStore
	log    *zap.Logger
	cfg    EventsConfig
	hooks  *webhooks
	alerts *alerter
	life   startstop.Base
	// last is the cursor's ID after each batch (-1 before the first): the
	// highest outbox id published, above which is the admission's backlog.
	last atomic.Int64
}

// newPublisher builds the term's publisher with its readers: the webhook
// deliverer and the alerter (def reads a workflow version's spec).
func newPublisher(st publishStore, log *zap.Logger, cfg EventsConfig, def func(context.Context, int64) (*definition, error)) *publisher {
	p := &publisher{store: st, log: log.Named("events"), cfg: cfg,
		hooks: newWebhooks(st, cfg.Secrets, log, cfg), alerts: newAlerter(st, log, cfg, def)}
	p.life.Name, p.life.Log = "event publisher", p.log
	p.last.Store(-1)
	return p
}

// handedOver is the highest outbox id the publisher published (-1: unknown).
func (p *publisher) handedOver() int64 { return p.last.Load() }

func (p *publisher) Start(ctx context.Context) error {
	return p.life.StartWith(ctx, func() error {
		// Taken before the readers start: what the loop hands over then
		// follows on from what they read from the outbox.
		cur, err := p.store.EventCursorNew(ctx)
		if err != nil {
			return fmt.Errorf("start event publisher: %w", err)
		}
		if err := startstop.StartAll(ctx, p.hooks, p.alerts); err != nil {
			return err
		}
		p.life.Go(func(ctx context.Context) { p.loop(ctx, cur) })
		return nil
	}, p.stopReaders)
}

// Stop ends publishing, then the alerter and the webhook deliveries.
func (p *publisher) Stop() { _ = p.life.Stop(p.stopReaders) }

func (p *publisher) stopReaders() {
	p.alerts.Stop()
	p.hooks.Stop()
}

func (p *publisher) loop(ctx context.Context, cur store.EventCursor) {
	prune := time.NewTicker(p.cfg.PruneEvery)
	defer prune.Stop()
	idle := time.NewTimer(0)
	defer idle.Stop()
	appended := p.store.EventAppended()
	wait := p.cfg.Poll
	for {
		evs, err := p.store.EventPublishFrom(ctx, &cur, publishBatch)
		p.last.Store(cur.ID)
		wait = min(2*wait, p.cfg.IdlePoll)
		switch {
		case errors.Is(err, store.ErrFenced):
			return // the term heard it from its store view
		case err != nil && ctx.Err() == nil:
			p.log.Warn("publish events", zap.Error(err))
		case len(evs) > 0:
			wait = p.cfg.Poll
			p.cfg.Hub.Published(evs)
			p.hooks.Wake()
			p.alerts.Feed(evs)
			if len(evs) == publishBatch {
				continue // more waiting
			}
		}
		idle.Reset(wait)
		signal := appended
		if len(evs) > 0 {
			// Read again after Poll, not after each of the writes meanwhile:
			// a fan-out commits hundreds a second, each read costing as much
			// as a few events.
			signal = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-signal:
			wait = p.cfg.Poll / 2 // doubled to Poll by a look that comes too early
		case <-idle.C:
		case <-prune.C:
			n, err := p.store.EventPrune(ctx, time.Now().Add(-p.cfg.Retention), p.cfg.Keep)
			if err != nil && ctx.Err() == nil {
				p.log.Warn("prune events", zap.Error(err))
			} else if n > 0 {
				p.log.Info("pruned events", zap.Int64("events", n))
			}
		}
	}
}
