package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
)

type subscriptionRow struct {
	ID           int64
	Name         string
	URL          string `gorm:"column:url"`
	Project      string
	Workflow     string
	InstanceID   int64
	SecretSealed *string
	CursorSeq    int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (subscriptionRow) TableName() string { return "subscription" }

func (r subscriptionRow) model() model.Subscription {
	s := model.Subscription{ID: r.ID, Name: r.Name, URL: r.URL, Cursor: r.CursorSeq,
		Filter:    model.EventFilter{Project: r.Project, Workflow: r.Workflow, Instance: r.InstanceID},
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if r.SecretSealed != nil {
		s.SecretSealed = *r.SecretSealed
	}
	return s
}

// KeepSecret passed as PutSubscription's sealed secret keeps the stored one.
const KeepSecret = "\x00keep"

// SubscriptionPut creates the subscription sub.Name, starting after the
// newest published event, or replaces its URL, filter and secret (keeping
// its cursor); created says which.
func (s *Store) SubscriptionPut(ctx context.Context, sub model.Subscription) (out model.Subscription, created bool, err error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cur subscriptionRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("name = ?", sub.Name).Take(&cur).Error
		exists := err == nil
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("read subscription %q: %w", sub.Name, err)
		}
		r := subscriptionRow{Name: sub.Name, URL: sub.URL, Project: sub.Filter.Project, Workflow: sub.Filter.Workflow,
			InstanceID: sub.Filter.Instance, CreatedAt: now, UpdatedAt: now,
			SecretSealed: sealedToStore(sub.SecretSealed, cur.SecretSealed)}
		if exists {
			r.ID, r.CreatedAt, r.CursorSeq = cur.ID, cur.CreatedAt, cur.CursorSeq
			if err := tx.Select("*").Omit("id", "created_at", "cursor_seq").Where("id = ?", cur.ID).Updates(&r).Error; err != nil {
				return fmt.Errorf("update subscription %q: %w", sub.Name, err)
			}
		} else {
			if err := tx.Raw(`SELECT COALESCE(MAX(` + s.seqCol() + `), 0) FROM event`).Scan(&r.CursorSeq).Error; err != nil {
				return fmt.Errorf("read last event seq: %w", err)
			}
			if err := tx.Create(&r).Error; err != nil {
				if isUniqueViolation(err) {
					return fmt.Errorf("subscription %q was created concurrently, retry: %w", sub.Name, ErrConflict)
				}
				return fmt.Errorf("create subscription %q: %w", sub.Name, err)
			}
		}
		created = !exists
		out = r.model()
		return nil
	})
	return out, created, err
}

// SubscriptionGet returns one subscription.
func (s *Store) SubscriptionGet(ctx context.Context, name string) (model.Subscription, error) {
	r, err := takeNamed[subscriptionRow](s.db.WithContext(ctx), "subscription", name)
	if err != nil {
		return model.Subscription{}, err
	}
	return r.model(), nil
}

// SubscriptionList returns every subscription by name.
func (s *Store) SubscriptionList(ctx context.Context) ([]model.Subscription, error) {
	return listNamed(s.db.WithContext(ctx), "subscriptions", subscriptionRow.model)
}

// SubscriptionDelete removes a subscription and its delivery log.
func (s *Store) SubscriptionDelete(ctx context.Context, name string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		r, err := takeNamed[subscriptionRow](tx, "subscription", name)
		if err != nil {
			return err
		}
		if err := tx.Exec(`DELETE FROM delivery WHERE subscription_id = ?`, r.ID).Error; err != nil {
			return fmt.Errorf("delete deliveries of %q: %w", name, err)
		}
		return tx.Exec(`DELETE FROM subscription WHERE id = ?`, r.ID).Error
	})
}

type deliveryRow struct {
	ID             int64
	SubscriptionID int64
	EventSeq       int64
	Attempt        int
	StatusCode     int
	OK             bool `gorm:"column:ok"`
	Error          string
	DurationMs     int64
	Time           time.Time
}

func (deliveryRow) TableName() string { return "delivery" }

// SubscriptionRecordDelivery logs an attempt and, when done (delivered, or given up),
// moves the subscription's cursor to its event, in one fenced transaction:
// the leader's deliverer is the only writer. A subscription deleted
// meanwhile is left alone.
func (s *Store) SubscriptionRecordDelivery(ctx context.Context, subID int64, d model.Delivery, done bool) error {
	r := deliveryRow{SubscriptionID: subID, EventSeq: d.EventSeq, Attempt: d.Attempt, StatusCode: d.StatusCode,
		OK: d.OK, Error: clip(d.Error, 1024), DurationMs: d.DurationMs, Time: d.Time.UTC()}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&subscriptionRow{}).Where("id = ?", subID).Count(&n).Error; err != nil || n == 0 {
			return err
		}
		if err := tx.Create(&r).Error; err != nil {
			return err
		}
		if !done {
			return nil
		}
		return tx.Exec(`UPDATE subscription SET cursor_seq = ? WHERE id = ? AND cursor_seq < ?`, d.EventSeq, subID, d.EventSeq).Error
	})
	if err != nil {
		return fmt.Errorf("record delivery of event %d to subscription %d: %w", d.EventSeq, subID, err)
	}
	return nil
}

// SubscriptionDeliveries returns a subscription's newest deliveries first.
func (s *Store) SubscriptionDeliveries(ctx context.Context, name string, limit int) ([]model.Delivery, error) {
	sub, err := s.SubscriptionGet(ctx, name)
	if err != nil {
		return nil, err
	}
	var rows []deliveryRow
	if err := s.db.WithContext(ctx).Where("subscription_id = ?", sub.ID).Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list deliveries of %q: %w", name, err)
	}
	out := make([]model.Delivery, len(rows))
	for i, r := range rows {
		out[i] = model.Delivery{ID: r.ID, EventSeq: r.EventSeq, Attempt: r.Attempt, StatusCode: r.StatusCode, OK: r.OK,
			Error: r.Error, DurationMs: r.DurationMs, Time: r.Time.UTC()}
	}
	return out, nil
}
