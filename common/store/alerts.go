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

type alertChannelRow struct {
	ID           int64
	Name         string
	Kind         string
	ConfigJSON   string `gorm:"column:config_json"`
	SecretSealed *string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (alertChannelRow) TableName() string { return "alert_channel" }

func (r alertChannelRow) model() model.AlertChannel {
	c := model.AlertChannel{ID: r.ID, Name: r.Name, Kind: r.Kind, ConfigJSON: []byte(r.ConfigJSON),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if r.SecretSealed != nil {
		c.SecretSealed = *r.SecretSealed
	}
	return c
}

// AlertChannelPut creates or replaces the channel c.Name; KeepSecret as
// c.SecretSealed keeps the stored secret.
func (s *Store) AlertChannelPut(ctx context.Context, c model.AlertChannel) (out model.AlertChannel, created bool, err error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cur alertChannelRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("name = ?", c.Name).Take(&cur).Error
		exists := err == nil
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("read alert channel %q: %w", c.Name, err)
		}
		r := alertChannelRow{Name: c.Name, Kind: c.Kind, ConfigJSON: string(c.ConfigJSON), CreatedAt: now, UpdatedAt: now,
			SecretSealed: sealedToStore(c.SecretSealed, cur.SecretSealed)}
		if exists {
			r.ID, r.CreatedAt = cur.ID, cur.CreatedAt
			if err := tx.Select("*").Omit("id", "created_at").Where("id = ?", cur.ID).Updates(&r).Error; err != nil {
				return fmt.Errorf("update alert channel %q: %w", c.Name, err)
			}
		} else if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("alert channel %q was created concurrently, retry: %w", c.Name, ErrConflict)
			}
			return fmt.Errorf("create alert channel %q: %w", c.Name, err)
		}
		created = !exists
		out = r.model()
		return nil
	})
	return out, created, err
}

// AlertChannelGet returns one channel.
func (s *Store) AlertChannelGet(ctx context.Context, name string) (model.AlertChannel, error) {
	r, err := takeNamed[alertChannelRow](s.db.WithContext(ctx), "alert channel", name)
	if err != nil {
		return model.AlertChannel{}, err
	}
	return r.model(), nil
}

// AlertChannelList returns every channel by name.
func (s *Store) AlertChannelList(ctx context.Context) ([]model.AlertChannel, error) {
	return listNamed(s.db.WithContext(ctx), "alert channels", alertChannelRow.model)
}

// AlertChannelDelete removes a channel (alerts already planned for it fail
// when their turn comes).
func (s *Store) AlertChannelDelete(ctx context.Context, name string) error {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM alert_channel WHERE name = ?`, name)
	if res.Error != nil {
		return fmt.Errorf("delete alert channel %q: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("alert channel %q: %w", name, ErrNotFound)
	}
	return nil
}

// AlertChannelMissing returns those of names that are not channels.
func (s *Store) AlertChannelMissing(ctx context.Context, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var have []string
	if err := s.db.WithContext(ctx).Model(&alertChannelRow{}).Where("name IN ?", names).Pluck("name", &have).Error; err != nil {
		return nil, fmt.Errorf("read alert channels: %w", err)
	}
	var missing []string
	for _, n := range names {
		found := false
		for _, h := range have {
			found = found || h == n
		}
		if !found {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

type alertRow struct {
	ID         int64
	DedupeKey  string
	Channel    string
	Kind       string
	Project    string
	Workflow   string
	InstanceID int64
	Message    string
	State      string
	Attempts   int
	LastError  string
	NextAt     time.Time
	CreatedAt  time.Time
	SentAt     *time.Time
}

func (alertRow) TableName() string { return "alert" }

func (r alertRow) model() model.Alert {
	return model.Alert{ID: r.ID, Key: r.DedupeKey, Channel: r.Channel, Kind: r.Kind, Project: r.Project, Workflow: r.Workflow,
		InstanceID: r.InstanceID, Message: r.Message, State: r.State, Attempts: r.Attempts, LastError: r.LastError,
		NextAt: r.NextAt.UTC(), CreatedAt: r.CreatedAt.UTC(), SentAt: utc(r.SentAt)}
}

// AlertAdd writes alerts as pending (those whose key exists are left
// alone: an outcome alerts once), and when cursor > 0 moves the alert
// planner's place in the event stream to it, in one fenced transaction.
// It returns the alerts written.
func (s *Store) AlertAdd(ctx context.Context, as []model.Alert, cursor int64) ([]model.Alert, error) {
	var out []model.Alert
	now := time.Now().UTC()
	err := s.tx(ctx, func(tx *gorm.DB) error {
		out = out[:0]
		for _, a := range as {
			var n int64
			if err := tx.Model(&alertRow{}).Where("dedupe_key = ?", a.Key).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			r := alertRow{DedupeKey: clip(a.Key, 255), Channel: a.Channel, Kind: a.Kind, Project: a.Project, Workflow: a.Workflow,
				InstanceID: a.InstanceID, Message: clip(a.Message, 2048), State: model.AlertPending, NextAt: now, CreatedAt: now}
			if err := tx.Create(&r).Error; err != nil {
				return fmt.Errorf("add alert %s: %w", a.Key, err)
			}
			out = append(out, r.model())
		}
		if cursor > 0 {
			return tx.Exec(`UPDATE alert_cursor SET seq = ? WHERE id = 1 AND seq < ?`, cursor, cursor).Error
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("add alerts: %w", err)
	}
	return out, nil
}

// AlertCursor is the last event seq the alert planner handled.
func (s *Store) AlertCursor(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.db.WithContext(ctx).Raw(`SELECT seq FROM alert_cursor WHERE id = 1`).Scan(&seq).Error; err != nil {
		return 0, fmt.Errorf("read alert cursor: %w", err)
	}
	return seq, nil
}

// AlertDue returns up to limit pending alerts whose next attempt is due.
func (s *Store) AlertDue(ctx context.Context, now time.Time, limit int) ([]model.Alert, error) {
	var rows []alertRow
	if err := s.db.WithContext(ctx).Where("state = ? AND next_at <= ?", model.AlertPending, now.UTC()).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("due alerts: %w", err)
	}
	out := make([]model.Alert, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// AlertAttempt records an attempt to send alert id: its new state (pending
// again with next for a retry), its error.
func (s *Store) AlertAttempt(ctx context.Context, id int64, state, lastErr string, next time.Time) error {
	fields := map[string]any{"state": state, "attempts": gorm.Expr("attempts + 1"), "last_error": clip(lastErr, 1024), "next_at": next.UTC()}
	if state == model.AlertSent {
		fields["sent_at"] = time.Now().UTC()
	}
	if state == model.AlertSummarized {
		fields["attempts"] = gorm.Expr("attempts")
	}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		return tx.Model(&alertRow{}).Where("id = ? AND state = ?", id, model.AlertPending).Updates(fields).Error
	})
	if err != nil {
		return fmt.Errorf("record alert %d: %w", id, err)
	}
	return nil
}

// AlertFilter selects alerts; zero fields match all.
type AlertFilter struct {
	Instance int64
	Channel  string
	Limit    int
}

// AlertList returns alerts newest first.
func (s *Store) AlertList(ctx context.Context, f AlertFilter) ([]model.Alert, error) {
	q := s.db.WithContext(ctx).Order("id DESC")
	if f.Instance != 0 {
		q = q.Where("instance_id = ?", f.Instance)
	}
	if f.Channel != "" {
		q = q.Where("channel = ?", f.Channel)
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	var rows []alertRow
	if err := q.Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	out := make([]model.Alert, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// AlertGet returns one alert.
func (s *Store) AlertGet(ctx context.Context, id int64) (model.Alert, error) {
	var r alertRow
	if err := s.db.WithContext(ctx).Take(&r, id).Error; err != nil {
		return model.Alert{}, notFound(err, fmt.Sprintf("alert %d", id))
	}
	return r.model(), nil
}

// AlertAddTest writes a pending test alert for channel (unfenced: the API
// asks, the leader sends it).
func (s *Store) AlertAddTest(ctx context.Context, channel string) (model.Alert, error) {
	now := time.Now().UTC()
	r := alertRow{DedupeKey: fmt.Sprintf("test:%s:%d", channel, now.UnixNano()), Channel: channel, Kind: "test",
		Message: "a test alert from Beluga", State: model.AlertPending, NextAt: now, CreatedAt: now}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return model.Alert{}, fmt.Errorf("add test alert: %w", err)
	}
	return r.model(), nil
}

// InstanceUnfinished returns the instances not finished yet (submitted,
// queued or running), for a new leader's deadline timers.
func (s *Store) InstanceUnfinished(ctx context.Context) ([]model.WorkflowInstance, error) {
	var rows []workflowInstanceRow
	if err := s.db.WithContext(ctx).Where("state IN ?", unfinishedStates()).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("unfinished instances: %w", err)
	}
	out := make([]model.WorkflowInstance, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}
