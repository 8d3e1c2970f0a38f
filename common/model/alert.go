package model

import "time"

// AlertChannel is a stored alert channel: its kind, its settings as JSON
// (common/alert.Config) and its secret, only ever held sealed.
type AlertChannel struct {
	ID           int64
	Name         string
	Kind         string
	ConfigJSON   []byte
	SecretSealed string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Alert states.
const (
	AlertPending    = "pending"
	AlertSent       = "sent"
	AlertFailed     = "failed"     // every attempt failed
	AlertSummarized = "summarized" // folded into a summary (too many at once)
)

// Alert is one alert to send, or sent, through one channel.
type Alert struct {
	ID         int64      `json:"id"`
	Key        string     `json:"-"`
	Channel    string     `json:"channel"`
	Kind       string     `json:"kind"`
	Project    string     `json:"project,omitempty"`
	Workflow   string     `json:"workflow,omitempty"`
	InstanceID int64      `json:"instance_id,omitempty"`
	Message    string     `json:"message"`
	State      string     `json:"state"`
	Attempts   int        `json:"attempts"`
	LastError  string     `json:"last_error,omitempty"`
	NextAt     time.Time  `json:"-"`
	CreatedAt  time.Time  `json:"created_at"`
	SentAt     *time.Time `json:"sent_at,omitempty"`
}
