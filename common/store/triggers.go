package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// Webhook triggers (0045_trigger.sql): a workflow's triggers, and the
// ledger of their deliveries. An accepted delivery and the run it starts
// are one transaction, and its Idempotency-Key is unique per trigger, so a
// retried or raced delivery starts one run.

type triggerRow struct {
	ID           int64
	ProjectID    int64
	WorkflowName string
	Name         string
	TokenHash    string
	ParamsJSON   string
	Enabled      bool
	CreatedBy    string
	CreatedAt    time.Time
	RotatedAt    *time.Time
}

func (triggerRow) TableName() string { return "workflow_trigger" }

func (r triggerRow) model(project string) model.Trigger {
	t := model.Trigger{ID: r.ID, ProjectID: r.ProjectID, Project: project, Workflow: r.WorkflowName, Name: r.Name,
		TokenHash: r.TokenHash, Enabled: r.Enabled, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), Params: map[string]string{}}
	_ = json.Unmarshal([]byte(r.ParamsJSON), &t.Params) // written by us from a map
	if r.RotatedAt != nil {
		at := r.RotatedAt.UTC()
		t.RotatedAt = &at
	}
	return t
}

type triggerDeliveryRow struct {
	ID             int64
	TriggerID      int64
	ReceivedAt     time.Time
	IdempotencyKey string
	DedupeKey      *string
	Outcome        string
	Reason         string
	RunID          *int64
}

func (triggerDeliveryRow) TableName() string { return "trigger_delivery" }

func (r triggerDeliveryRow) model() model.TriggerDelivery {
	d := model.TriggerDelivery{ID: r.ID, TriggerID: r.TriggerID, ReceivedAt: r.ReceivedAt.UTC(),
		IdempotencyKey: r.IdempotencyKey, Outcome: r.Outcome, Reason: r.Reason}
	if r.RunID != nil {
		d.RunID = *r.RunID
	}
	return d
}

// TriggerCreate stores a new trigger of t.Workflow in t.Project (which must
// have the workflow); a second of the same name is ErrConflict.
func (s *Store) TriggerCreate(ctx context.Context, t model.Trigger) (model.Trigger, error) {
	var out model.Trigger
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, t.Project)
		if err != nil {
			return err
		}
		var n int64
		if err := tx.Model(&workflowDefinitionRow{}).Where("project_id = ? AND name = ?", p.ID, t.Workflow).Count(&n).Error; err != nil {
			return fmt.Errorf("find workflow %q: %w", t.Workflow, err)
		}
		if n == 0 {
			return fmt.Errorf("workflow %q in project %q: %w", t.Workflow, t.Project, ErrNotFound)
		}
		ps, _ := json.Marshal(t.Params)
		r := triggerRow{ProjectID: p.ID, WorkflowName: t.Workflow, Name: t.Name, TokenHash: t.TokenHash,
			ParamsJSON: string(ps), Enabled: t.Enabled, CreatedBy: t.CreatedBy, CreatedAt: now6()}
		if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("workflow %q already has a trigger %q: %w", t.Workflow, t.Name, ErrConflict)
			}
			return fmt.Errorf("insert trigger %q: %w", t.Name, err)
		}
		out = r.model(p.Name)
		return nil
	})
	return out, err
}

// triggerOf reads the trigger name of project's workflow, locked for update
// when lock (in a transaction).
func triggerOf(db *gorm.DB, lock bool, project, workflow, name string) (triggerRow, projectRow, error) {
	var r triggerRow
	p, err := getProject(db, project)
	if err != nil {
		return r, p, err
	}
	q := db
	if lock {
		q = lockingRead(db)
	}
	if err := q.Where("project_id = ? AND workflow_name = ? AND name = ?", p.ID, workflow, name).Take(&r).Error; err != nil {
		return r, p, notFound(err, fmt.Sprintf("trigger %q of workflow %q in project %q", name, workflow, project))
	}
	return r, p, nil
}

// TriggerGet returns a trigger by its project's, workflow's and own names.
func (s *Store) TriggerGet(ctx context.Context, project, workflow, name string) (model.Trigger, error) {
	r, p, err := triggerOf(s.db.WithContext(ctx), false, project, workflow, name)
	if err != nil {
		return model.Trigger{}, err
	}
	return r.model(p.Name), nil
}

// TriggerByID returns a trigger by id, for its hook.
func (s *Store) TriggerByID(ctx context.Context, id int64) (model.Trigger, error) {
	db := s.db.WithContext(ctx)
	var r triggerRow
	if err := db.Take(&r, id).Error; err != nil {
		return model.Trigger{}, notFound(err, fmt.Sprintf("trigger %d", id))
	}
	var p projectRow
	if err := db.Select("id, name").Take(&p, r.ProjectID).Error; err != nil {
		return model.Trigger{}, notFound(err, fmt.Sprintf("project of trigger %d", id))
	}
	return r.model(p.Name), nil
}

// TriggerList returns a workflow's triggers by name (none: an empty list,
// also when the workflow does not exist).
func (s *Store) TriggerList(ctx context.Context, project, workflow string) ([]model.Trigger, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return nil, err
	}
	var rows []triggerRow
	if err := db.Where("project_id = ? AND workflow_name = ?", p.ID, workflow).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list triggers of %q: %w", workflow, err)
	}
	out := make([]model.Trigger, len(rows))
	for i, r := range rows {
		out[i] = r.model(p.Name)
	}
	return out, nil
}

// TriggerChange is what TriggerUpdate changes; nil fields stay.
type TriggerChange struct {
	Enabled   *bool
	Params    map[string]string // nil: keep
	TokenHash string            // "": keep; else a rotation
}

// TriggerUpdate changes a trigger: enables or disables it, replaces its
// mapping or rotates its token (the old one stops working at once).
func (s *Store) TriggerUpdate(ctx context.Context, project, workflow, name string, ch TriggerChange) (model.Trigger, error) {
	var out model.Trigger
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		r, p, err := triggerOf(tx, true, project, workflow, name)
		if err != nil {
			return err
		}
		if ch.Enabled != nil {
			r.Enabled = *ch.Enabled
		}
		if ch.Params != nil {
			ps, _ := json.Marshal(ch.Params)
			r.ParamsJSON = string(ps)
		}
		if ch.TokenHash != "" {
			at := now6()
			r.TokenHash, r.RotatedAt = ch.TokenHash, &at
		}
		if err := tx.Select("enabled", "params_json", "token_hash", "rotated_at").Updates(&r).Error; err != nil {
			return fmt.Errorf("update trigger %q: %w", name, err)
		}
		out = r.model(p.Name)
		return nil
	})
	return out, err
}

// TriggerDelete removes a trigger and its deliveries.
func (s *Store) TriggerDelete(ctx context.Context, project, workflow, name string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		r, _, err := triggerOf(tx, true, project, workflow, name)
		if err != nil {
			return err
		}
		return deleteTriggers(tx, []int64{r.ID})
	})
}

// deleteTriggers removes triggers and their deliveries in tx.
func deleteTriggers(tx *gorm.DB, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := tx.Where("trigger_id IN ?", ids).Delete(&triggerDeliveryRow{}).Error; err != nil {
		return fmt.Errorf("delete deliveries of triggers %v: %w", ids, err)
	}
	if err := tx.Where("id IN ?", ids).Delete(&triggerRow{}).Error; err != nil {
		return fmt.Errorf("delete triggers %v: %w", ids, err)
	}
	return nil
}

// deleteWorkflowTriggers removes the triggers of a deleted workflow.
func deleteWorkflowTriggers(tx *gorm.DB, projectID int64, workflow string) error {
	var ids []int64
	if err := tx.Model(&triggerRow{}).Where("project_id = ? AND workflow_name = ?", projectID, workflow).Pluck("id", &ids).Error; err != nil {
		return fmt.Errorf("find triggers of %q: %w", workflow, err)
	}
	return deleteTriggers(tx, ids)
}

// TriggerDeliveries returns a trigger's deliveries, newest first, up to
// limit, those before id before (0: from the newest).
func (s *Store) TriggerDeliveries(ctx context.Context, triggerID, before int64, limit int) ([]model.TriggerDelivery, error) {
	q := s.db.WithContext(ctx).Where("trigger_id = ?", triggerID)
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	var rows []triggerDeliveryRow
	if err := q.Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list deliveries of trigger %d: %w", triggerID, err)
	}
	out := make([]model.TriggerDelivery, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// TriggerRefusal is a delivery a trigger refused.
type TriggerRefusal struct {
	TriggerID int64
	Key       string
	Reason    string
	At        time.Time
	// Keep bounds the refused deliveries kept per trigger (0: all): the
	// oldest beyond it go, so a sender probing tokens cannot grow the
	// ledger without end. Accepted and duplicate ones are all kept.
	Keep int
}

// TriggerRefuse records a refused delivery and why; it starts nothing and
// holds no key, so a corrected retry with the same key is accepted.
func (s *Store) TriggerRefuse(ctx context.Context, f TriggerRefusal) (model.TriggerDelivery, error) {
	r := triggerDeliveryRow{TriggerID: f.TriggerID, ReceivedAt: f.At.UTC().Truncate(time.Microsecond), IdempotencyKey: f.Key,
		Outcome: model.DeliveryRefused, Reason: clip(f.Reason, 1024)}
	db := s.db.WithContext(ctx)
	if err := db.Create(&r).Error; err != nil {
		return model.TriggerDelivery{}, fmt.Errorf("record refused delivery to trigger %d: %w", f.TriggerID, err)
	}
	if f.Keep > 0 {
		refused := func() *gorm.DB {
			return db.Model(&triggerDeliveryRow{}).Where("trigger_id = ? AND outcome = ?", f.TriggerID, model.DeliveryRefused)
		}
		var oldest []int64 // the newest refusal beyond Keep, if any
		if err := refused().Order("id DESC").Offset(f.Keep).Limit(1).Pluck("id", &oldest).Error; err != nil {
			return r.model(), fmt.Errorf("bound the refused deliveries of trigger %d: %w", f.TriggerID, err)
		}
		if len(oldest) == 1 {
			if err := refused().Where("id <= ?", oldest[0]).Delete(&triggerDeliveryRow{}).Error; err != nil {
				return r.model(), fmt.Errorf("bound the refused deliveries of trigger %d: %w", f.TriggerID, err)
			}
		}
	}
	return r.model(), nil
}

// TriggerDelivery is a delivery a trigger accepts.
type TriggerDelivery struct {
	TriggerID  int64
	Key        string // Idempotency-Key; "": every such delivery starts a run
	Params     map[string]string
	ReceivedAt time.Time
}

// TriggerDeliver starts the run of an accepted delivery: the delivery row
// (holding its key), the instance and its start command in one
// transaction, so the run exists exactly when its delivery is recorded.
// A key a delivery of the trigger already used answers that delivery's
// run, recorded as a duplicate: two deliveries with one key, raced on two
// servers, wait on the unique index and the later sees the earlier's row.
// A trigger disabled or deleted meanwhile is ErrNotFound/ErrConflict; a
// run the workflow refuses (its params) is the store's error, and the
// caller records the delivery refused.
func (s *Store) TriggerDeliver(ctx context.Context, d TriggerDelivery) (model.TriggerDelivery, error) {
	at := d.ReceivedAt.UTC().Truncate(time.Microsecond)
	var out model.TriggerDelivery
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var t triggerRow
		if err := tx.Take(&t, d.TriggerID).Error; err != nil {
			return notFound(err, fmt.Sprintf("trigger %d", d.TriggerID))
		}
		if !t.Enabled {
			return fmt.Errorf("trigger %q is disabled: %w", t.Name, ErrConflict)
		}
		r := triggerDeliveryRow{TriggerID: t.ID, ReceivedAt: at, IdempotencyKey: d.Key, Outcome: model.DeliveryAccepted}
		if d.Key != "" {
			r.DedupeKey = &d.Key
		}
		// The key first: a racing delivery with the same key waits here
		// for this transaction, and fails once it commits.
		if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return errDuplicateDelivery
			}
			return fmt.Errorf("record delivery to trigger %d: %w", t.ID, err)
		}
		var p projectRow
		if err := tx.Take(&p, t.ProjectID).Error; err != nil {
			return notFound(err, fmt.Sprintf("project of trigger %d", t.ID))
		}
		req := RunRequest{Project: p.Name, Workflow: t.WorkflowName, Params: d.Params, CommandType: model.CommandTriggered}
		p, def, err := runTarget(tx, req)
		if err != nil {
			return err
		}
		inst, err := insertRun(tx, s.box, p, def, req, at)
		if err != nil {
			return err
		}
		r.RunID = &inst.ID
		if err := tx.Model(&r).Update("run_id", inst.ID).Error; err != nil {
			return fmt.Errorf("record the run of delivery %d: %w", r.ID, err)
		}
		out = r.model()
		return nil
	})
	if !errors.Is(err, errDuplicateDelivery) {
		return out, err
	}
	return s.recordDuplicate(ctx, d.TriggerID, d.Key, at)
}

// errDuplicateDelivery rolls back a delivery whose key was used.
var errDuplicateDelivery = errors.New("duplicate delivery")

// recordDuplicate records a delivery whose key an accepted one used,
// naming that one's run.
func (s *Store) recordDuplicate(ctx context.Context, triggerID int64, key string, at time.Time) (model.TriggerDelivery, error) {
	var out model.TriggerDelivery
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var first triggerDeliveryRow
		if err := tx.Where("trigger_id = ? AND dedupe_key = ?", triggerID, key).Take(&first).Error; err != nil {
			return notFound(err, fmt.Sprintf("the first delivery with key %q to trigger %d", key, triggerID))
		}
		r := triggerDeliveryRow{TriggerID: triggerID, ReceivedAt: at, IdempotencyKey: key, Outcome: model.DeliveryDuplicate,
			Reason: fmt.Sprintf("Idempotency-Key %q was delivered at %s (delivery %d)", clip(key, 64), first.ReceivedAt.UTC().Format(time.RFC3339), first.ID),
			RunID:  first.RunID}
		if err := tx.Create(&r).Error; err != nil {
			return fmt.Errorf("record duplicate delivery to trigger %d: %w", triggerID, err)
		}
		out = r.model()
		return nil
	})
	return out, err
}
