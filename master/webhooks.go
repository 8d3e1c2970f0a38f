package master

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/events"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// webhooks delivers published events to the webhook subscriptions, one
// sender goroutine per subscription, each in seq order from its persisted
// cursor: at least once (the cursor moves only after the POST was answered
// 2xx, or its retries were used up), with exponential back-off between
// attempts. The owner goroutine reloads the subscriptions (they are written
// by the API, perhaps in another process) and starts and stops senders.
type webhooks struct {
	store webhookStore
	box   *secret.Box
	log   *zap.Logger
	cfg   EventsConfig
	wake  chan struct{}
	life  startstop.Base
}

// reloadEvery bounds how late a subscription the API changed is seen.
const reloadEvery = time.Second

func newWebhooks(st webhookStore, box *secret.Box, log *zap.Logger, cfg EventsConfig) *webhooks {
	w := &webhooks{store: st, box: box, log: log.Named("webhooks"), cfg: cfg, wake: make(chan struct{}, 1)}
	w.life.Name, w.life.Log = "webhooks", w.log
	return w
}

func (w *webhooks) Start(ctx context.Context) error {
	if _, err := w.life.Begin(ctx); err != nil {
		return err
	}
	w.life.Go(w.own)
	return nil
}

func (w *webhooks) Stop() { _ = w.life.Stop(nil) }

// Wake says new events were published; never blocks.
func (w *webhooks) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

type sender struct {
	sub    model.Subscription
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *webhooks) own(ctx context.Context) {
	senders := map[string]*sender{}
	defer func() {
		for _, s := range senders {
			s.cancel()
			<-s.done
		}
	}()
	tick := time.NewTicker(reloadEvery)
	defer tick.Stop()
	reload := func() {
		subs, err := w.store.SubscriptionList(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("load subscriptions", zap.Error(err))
			}
			return
		}
		seen := map[string]bool{}
		for _, sub := range subs {
			seen[sub.Name] = true
			if cur, ok := senders[sub.Name]; ok {
				if cur.sub.ID == sub.ID && cur.sub.UpdatedAt.Equal(sub.UpdatedAt) {
					continue
				}
				cur.cancel() // changed: restart from its persisted cursor
				<-cur.done
			}
			sctx, cancel := context.WithCancel(ctx)
			s := &sender{sub: sub, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
			senders[sub.Name] = s
			go func() {
				defer close(s.done)
				w.send(sctx, s)
			}()
		}
		for name, s := range senders {
			if !seen[name] {
				s.cancel()
				<-s.done
				delete(senders, name)
			}
		}
	}
	reload()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			reload()
		case <-w.wake:
		}
		for _, s := range senders {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

// send delivers the events of one subscription until ctx ends.
func (w *webhooks) send(ctx context.Context, s *sender) {
	log := w.log.With(zap.String("subscription", s.sub.Name))
	var key []byte
	if s.sub.SecretSealed != "" {
		if w.box == nil {
			log.Error("no secret key to open the subscription's secret (--secret-key-file): nothing is sent to it")
			<-ctx.Done()
			return
		}
		plain, err := w.box.OpenFor(s.sub.SecretSealed, events.SealContext(s.sub.Name))
		if err != nil {
			log.Error("cannot open the subscription's secret: nothing is sent to it", zap.Error(err))
			<-ctx.Done()
			return
		}
		key = []byte(plain)
	}
	cursor := s.sub.Cursor
	idle := time.NewTimer(0)
	defer idle.Stop()
	for {
		evs, err := w.store.EventList(ctx, cursor, s.sub.Filter, 100)
		if err != nil && ctx.Err() == nil {
			log.Warn("read events", zap.Error(err))
		}
		for _, e := range evs {
			if !w.deliver(ctx, log, s.sub, key, e) {
				return
			}
			cursor = e.Seq
		}
		if len(evs) == 100 {
			continue
		}
		idle.Reset(reloadEvery)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
			// Publishes come every few ms under load: read the outbox at
			// most every readGap, not once per publish (on SQLite a read
			// waits for the writers' one connection).
			sleep(ctx, readGap)
		case <-idle.C:
		}
	}
}

// readGap is the least time between two outbox reads of a sender.
const readGap = 100 * time.Millisecond

// deliver POSTs one event with retries; false when the sender must stop
// (ctx ended, or the term was fenced).
func (w *webhooks) deliver(ctx context.Context, log *zap.Logger, sub model.Subscription, key []byte, e model.Event) bool {
	body, err := json.Marshal(e)
	if err != nil {
		log.Error("encode event", zap.Int64("event", e.Seq), zap.Error(err))
		return true
	}
	for attempt := 1; ; attempt++ {
		d := model.Delivery{EventSeq: e.Seq, Attempt: attempt, Time: time.Now()}
		d.StatusCode, err = w.post(ctx, sub.URL, key, e.Seq, attempt, body)
		d.DurationMs = time.Since(d.Time).Milliseconds()
		d.OK = err == nil
		if err != nil {
			d.Error = err.Error()
		}
		if ctx.Err() != nil {
			return false // stopping: this attempt did not count, the next leader sends again
		}
		last := d.OK || attempt >= w.cfg.MaxAttempts
		if err := w.store.SubscriptionRecordDelivery(ctx, sub.ID, d, last); err != nil {
			if errors.Is(err, store.ErrFenced) {
				return false // the term heard it from its store view
			}
			if ctx.Err() == nil {
				log.Warn("record delivery", zap.Error(err))
			}
		}
		if d.OK {
			return true
		}
		if last {
			log.Warn("gave up delivering an event", zap.Int64("event", e.Seq), zap.Int("attempts", attempt), zap.String("error", d.Error))
			return true
		}
		wait := backoff(w.cfg.RetryBase, w.cfg.RetryMax, attempt)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// backoff is the wait after failed attempt n (1-based): base doubled per
// attempt, capped at max.
func backoff(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

func (w *webhooks) post(ctx context.Context, url string, key []byte, seq int64, attempt int, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Beluga-Event-Id", fmt.Sprint(seq))
	req.Header.Set("Beluga-Delivery-Attempt", fmt.Sprint(attempt))
	if key != nil {
		req.Header.Set(events.SignatureHeader, events.Sign(key, time.Now(), body))
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
