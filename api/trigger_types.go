package api

import (
	"strconv"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TriggerRequest is the JSON body of POST .../workflows/{name}/triggers.
type TriggerRequest struct {
	Name string `json:"name"`
	// Params maps a run param to a path (gjson syntax) into the JSON a
	// delivery posts; each must be found in every delivery.
	Params  map[string]string `json:"params,omitempty"`
	Enabled *bool             `json:"enabled,omitempty"` // default true
}

// TriggerUpdateRequest is the JSON body of PATCH .../triggers/{trigger}:
// what it leaves out stays.
type TriggerUpdateRequest struct {
	Enabled *bool             `json:"enabled,omitempty"`
	Params  map[string]string `json:"params,omitempty"`
}

// Trigger is a workflow's webhook trigger, without its token.
type Trigger struct {
	ID        int64             `json:"id"`
	Project   string            `json:"project"`
	Workflow  string            `json:"workflow"`
	Name      string            `json:"name"`
	Params    map[string]string `json:"params"`
	Enabled   bool              `json:"enabled"`
	HookPath  string            `json:"hook_path"` // POST here with the token
	CreatedBy string            `json:"created_by"`
	CreatedAt Time              `json:"created_at"`
	RotatedAt *Time             `json:"rotated_at,omitempty"`
}

// NewTrigger answers a trigger's creation and its token's rotation: the
// only times the token is shown.
type NewTrigger struct {
	Trigger
	Token string `json:"token"`
}

// TriggerDelivery is one delivery to a trigger's hook and its outcome.
type TriggerDelivery struct {
	ID             int64  `json:"id"`
	ReceivedAt     Time   `json:"received_at"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Outcome        string `json:"outcome"` // accepted, duplicate or refused
	Reason         string `json:"reason,omitempty"`
	RunID          int64  `json:"run_id,omitempty"`
}

// HookPath is the path a trigger's deliveries are posted to.
func HookPath(id int64) string { return "/api/v1/hooks/" + strconv.FormatInt(id, 10) }

func fromTrigger(t model.Trigger) Trigger {
	out := Trigger{ID: t.ID, Project: t.Project, Workflow: t.Workflow, Name: t.Name, Params: t.Params, Enabled: t.Enabled,
		HookPath: HookPath(t.ID), CreatedBy: t.CreatedBy, CreatedAt: timeOf(t.CreatedAt)}
	if out.Params == nil {
		out.Params = map[string]string{}
	}
	if t.RotatedAt != nil {
		at := timeOf(*t.RotatedAt)
		out.RotatedAt = &at
	}
	return out
}

func fromDelivery(d model.TriggerDelivery) TriggerDelivery {
	return TriggerDelivery{ID: d.ID, ReceivedAt: timeOf(d.ReceivedAt), IdempotencyKey: d.IdempotencyKey, Outcome: d.Outcome,
		Reason: d.Reason, RunID: d.RunID}
}
