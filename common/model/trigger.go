package model

import "time"

// Trigger is a workflow's webhook trigger (README, "Webhook triggers"): a
// POST to its hook URL carrying its token starts a run of the workflow,
// with params read from the request's JSON.
type Trigger struct {
	ID        int64
	ProjectID int64
	Project   string
	Workflow  string
	Name      string
	// TokenHash is the SHA-256 of the trigger's secret (store.HashToken);
	// the secret itself is shown once, at creation or rotation.
	TokenHash string
	// Params maps a run param to a path into the delivery's JSON
	// (common/jsonpath); each must be found.
	Params    map[string]string
	Enabled   bool
	CreatedBy string
	CreatedAt time.Time
	RotatedAt *time.Time // the last token rotation
}

// The outcomes of a trigger delivery.
const (
	DeliveryAccepted  = "accepted"  // it started a run
	DeliveryDuplicate = "duplicate" // its Idempotency-Key had started one already
	DeliveryRefused   = "refused"   // no run; Reason says why
)

// TriggerDelivery is one request to a trigger's hook and what came of it.
type TriggerDelivery struct {
	ID             int64
	TriggerID      int64
	ReceivedAt     time.Time
	IdempotencyKey string
	Outcome        string
	Reason         string
	RunID          int64 // the run started (accepted) or named (duplicate); 0 none
}
