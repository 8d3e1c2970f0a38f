package model

import "time"

// Subscription is a webhook subscription to the event stream. The secret is
// only ever held sealed (common/secret). Cursor is the seq of the last
// event handled (delivered, or given up on after its retries).
type Subscription struct {
	ID           int64
	Name         string
	URL          string
	Filter       EventFilter
	SecretSealed string
	Cursor       int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Delivery is one POST attempt of an event to a subscription.
type Delivery struct {
	ID         int64     `json:"id"`
	EventSeq   int64     `json:"event_id"`
	Attempt    int       `json:"attempt"`
	StatusCode int       `json:"status_code,omitempty"`
	OK         bool      `json:"ok"`
	Error      string    `json:"error,omitempty"`
	DurationMs int64     `json:"duration_ms"`
	Time       time.Time `json:"time"`
}
