package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// Promotion with review (README, "Promotion with review"): change
// requests carry a source workflow version into a target project; an
// approval applies it as a new target version and, in a gated project,
// pins the workflow's schedules to it, so direct edits never run on a
// schedule there. A direct edit of a gated workflow is drift: recorded once,
// with a promotion event the master alerts.

// ErrRequestClosed: the change request was already reviewed (409).
var ErrRequestClosed = errors.New("change request is not open")

// ErrTargetMoved: the target workflow got a version since the request was
// made, so the reviewed diff is stale (409).
var ErrTargetMoved = errors.New("target changed since the request")

type promotionGateRow struct {
	ProjectID     int64 `gorm:"primaryKey;autoIncrement:false"`
	SourceProject string
	RequireReview bool
	AlertChannels *string
	UpdatedBy     string
	UpdatedAt     time.Time
}

func (promotionGateRow) TableName() string { return "project_promotion" }

type changeRequestRow struct {
	ID              int64
	TargetProjectID int64
	Workflow        string
	SourceProject   string
	SourceVersion   int
	SourceHash      string
	SpecJSON        string `gorm:"column:spec_json"`
	BaseVersion     int
	Message         *string
	Author          string
	State           string
	Reviewer        string
	ReviewComment   *string
	AppliedVersion  int
	CreatedAt       time.Time
	ReviewedAt      *time.Time
}

func (changeRequestRow) TableName() string { return "change_request" }

func (r changeRequestRow) model(target string) model.ChangeRequest {
	c := model.ChangeRequest{ID: r.ID, TargetProject: target, Workflow: r.Workflow, SourceProject: r.SourceProject,
		SourceVersion: r.SourceVersion, SourceHash: r.SourceHash, SpecJSON: []byte(r.SpecJSON), BaseVersion: r.BaseVersion,
		Author: r.Author, State: r.State, Reviewer: r.Reviewer, AppliedVersion: r.AppliedVersion,
		CreatedAt: r.CreatedAt.UTC(), ReviewedAt: utc(r.ReviewedAt)}
	if r.Message != nil {
		c.Message = *r.Message
	}
	if r.ReviewComment != nil {
		c.ReviewComment = *r.ReviewComment
	}
	return c
}

type driftRow struct {
	ProjectID       int64  `gorm:"primaryKey;autoIncrement:false"`
	WorkflowName    string `gorm:"primaryKey"`
	SinceVersion    int
	PromotedVersion int
	EditedBy        string
	DetectedAt      time.Time
}

func (driftRow) TableName() string { return "promotion_drift" }

func textCol(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// PromotionGateGet returns project's promotion setting; a project never
// set has the zero gate (no review), not ErrNotFound.
func (s *Store) PromotionGateGet(ctx context.Context, project string) (model.PromotionGate, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return model.PromotionGate{}, err
	}
	g := model.PromotionGate{Project: p.Name, AlertChannels: []string{}}
	var r promotionGateRow
	err = db.Where("project_id = ?", p.ID).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return g, nil
	}
	if err != nil {
		return g, fmt.Errorf("read the promotion setting of project %q: %w", project, err)
	}
	g.SourceProject, g.RequireReview, g.UpdatedBy, g.UpdatedAt = r.SourceProject, r.RequireReview, r.UpdatedBy, r.UpdatedAt.UTC()
	if r.AlertChannels != nil {
		_ = json.Unmarshal([]byte(*r.AlertChannels), &g.AlertChannels) // written by us
	}
	return g, nil
}

// PromotionGatePut sets project's promotion setting. Turning review on
// pins the schedules of the project's workflows to their latest promoted
// version, or, for a workflow never promoted, to its latest version: the
// baseline the first promotion replaces.
func (s *Store) PromotionGatePut(ctx context.Context, g model.PromotionGate) (out model.PromotionGate, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, g.Project)
		if err != nil {
			return err
		}
		if g.SourceProject != "" {
			if _, err := getProject(tx, g.SourceProject); err != nil {
				return err
			}
			if g.SourceProject == p.Name {
				return fmt.Errorf("project %q cannot promote into itself: %w", p.Name, ErrConflict)
			}
		}
		r := promotionGateRow{ProjectID: p.ID, SourceProject: g.SourceProject, RequireReview: g.RequireReview,
			AlertChannels: jsonText(g.AlertChannels, len(g.AlertChannels)), UpdatedBy: g.UpdatedBy, UpdatedAt: now6()}
		if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "project_id"}}, UpdateAll: true}).Create(&r).Error; err != nil {
			return fmt.Errorf("write the promotion setting of project %q: %w", p.Name, err)
		}
		if g.RequireReview {
			var names []string
			if err := tx.Model(&scheduleRow{}).Where("project_id = ?", p.ID).Pluck("workflow_name", &names).Error; err != nil {
				return fmt.Errorf("read the schedules of project %q: %w", p.Name, err)
			}
			for _, n := range names {
				v, err := promotedVersion(tx, p.ID, n)
				if err != nil {
					return err
				}
				if v == 0 {
					if v, err = latestVersion(tx, p.ID, n); err != nil {
						return err
					}
				}
				if err := pinSchedule(tx, p.ID, n, v, g.UpdatedBy); err != nil {
					return err
				}
			}
		}
		out = g
		out.Project, out.UpdatedAt = p.Name, r.UpdatedAt
		if out.AlertChannels == nil {
			out.AlertChannels = []string{}
		}
		return nil
	})
	return out, err
}

// gateOf is project id's gate row (zero: none).
func gateOf(tx *gorm.DB, projectID int64) (promotionGateRow, error) {
	var r promotionGateRow
	err := tx.Where("project_id = ?", projectID).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return promotionGateRow{}, nil
	}
	if err != nil {
		return r, fmt.Errorf("read the promotion setting: %w", err)
	}
	return r, nil
}

// promotedVersion is the target version the newest applied request made
// of workflow name (0: never promoted).
func promotedVersion(tx *gorm.DB, projectID int64, name string) (int, error) {
	var v int
	if err := tx.Model(&changeRequestRow{}).Select("COALESCE(MAX(applied_version), 0)").
		Where("target_project_id = ? AND workflow = ? AND state = ?", projectID, name, model.RequestApplied).
		Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("read the promoted version of %q: %w", name, err)
	}
	return v, nil
}

// pinSchedule pins the schedule of workflow name (if it has one) to
// version, moving its revision on as an edit does, so a fire planned from
// the old row is refused and the masters read it again; a fire written
// ahead of its second under the old pin is taken back (cancelAhead), as an
// edit takes it back, and fires again under the new one.
func pinSchedule(tx *gorm.DB, projectID int64, name string, version int, by string) error {
	if version == 0 {
		return nil
	}
	var rows []scheduleRow
	if err := lockingRead(tx).Select("id, last_fire_time").Where("project_id = ? AND workflow_name = ? AND pin_version <> ?", projectID, name, version).
		Find(&rows).Error; err != nil {
		return fmt.Errorf("read the schedule of %q: %w", name, err)
	}
	now := now6()
	for _, r := range rows {
		cols := map[string]any{"pin_version": version, "revision": gorm.Expr("revision + 1"), "version": gorm.Expr("version + 1"),
			"updated_by": by, "updated_at": now}
		if last, cancelled, err := cancelAhead(tx, r.ID, r.LastFireTime, now); err != nil {
			return err
		} else if cancelled {
			cols["last_fire_time"] = last
		}
		if err := tx.Model(&scheduleRow{}).Where("id = ?", r.ID).UpdateColumns(cols).Error; err != nil {
			return fmt.Errorf("pin the schedule of %q to version %d: %w", name, version, err)
		}
	}
	return nil
}

// PromotionPin is the version a schedule of workflow name in project must
// pin: in a gated project, the latest promoted version (or, never
// promoted, the latest: the baseline); 0 in a project without review.
func (s *Store) PromotionPin(ctx context.Context, project, name string) (int, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return 0, err
	}
	g, err := gateOf(db, p.ID)
	if err != nil || !g.RequireReview {
		return 0, err
	}
	v, err := promotedVersion(db, p.ID, name)
	if err != nil || v > 0 {
		return v, err
	}
	return latestVersion(db, p.ID, name)
}

// ChangeRequestCreate records a request to promote version (0: latest)
// of workflow name from source into target, by author, against the
// target's latest version now.
func (s *Store) ChangeRequestCreate(ctx context.Context, source, name string, version int, target, author, message string) (out model.ChangeRequest, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sp, err := getProject(tx, source)
		if err != nil {
			return err
		}
		tp, err := getProject(tx, target)
		if err != nil {
			return err
		}
		if sp.ID == tp.ID {
			return fmt.Errorf("source and target are both project %q; promote into another project: %w", sp.Name, ErrConflict)
		}
		q := tx.Where("project_id = ? AND name = ?", sp.ID, name)
		if version > 0 {
			q = q.Where("version = ?", version)
		}
		var def workflowDefinitionRow
		if err := q.Order("version DESC").Take(&def).Error; err != nil {
			what := fmt.Sprintf("workflow %q in project %q", name, sp.Name)
			if version > 0 {
				what = fmt.Sprintf("version %d of workflow %q in project %q", version, name, sp.Name)
			}
			return notFound(err, what)
		}
		base, err := latestVersion(tx, tp.ID, name)
		if err != nil {
			return err
		}
		r := changeRequestRow{TargetProjectID: tp.ID, Workflow: name, SourceProject: sp.Name, SourceVersion: def.Version,
			SourceHash: def.SpecHash, SpecJSON: def.SpecJSON, BaseVersion: base, Message: textCol(message), Author: author,
			State: model.RequestOpen, CreatedAt: now6()}
		if err := tx.Create(&r).Error; err != nil {
			return fmt.Errorf("create the change request: %w", err)
		}
		out = r.model(tp.Name)
		return nil
	})
	return out, err
}

// ChangeRequestGet returns request id of project target.
func (s *Store) ChangeRequestGet(ctx context.Context, target string, id int64) (model.ChangeRequest, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, target)
	if err != nil {
		return model.ChangeRequest{}, err
	}
	var r changeRequestRow
	if err := db.Where("id = ? AND target_project_id = ?", id, p.ID).Take(&r).Error; err != nil {
		return model.ChangeRequest{}, notFound(err, fmt.Sprintf("change request %d in project %q", id, p.Name))
	}
	return r.model(p.Name), nil
}

// ChangeRequestList returns the requests into project target, newest
// first, in state ("": all); their specs are left out.
func (s *Store) ChangeRequestList(ctx context.Context, target, state string, limit int) ([]model.ChangeRequest, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, target)
	if err != nil {
		return nil, err
	}
	q := db.Omit("spec_json").Where("target_project_id = ?", p.ID)
	if state != "" {
		q = q.Where("state = ?", state)
	}
	if limit <= 0 {
		limit = 100
	}
	var rows []changeRequestRow
	if err := q.Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list the change requests of project %q: %w", p.Name, err)
	}
	out := make([]model.ChangeRequest, len(rows))
	for i, r := range rows {
		out[i] = r.model(p.Name)
	}
	return out, nil
}

// openRequest locks request id of target for its review: ErrNotFound,
// ErrRequestClosed when it was reviewed already.
func openRequest(tx *gorm.DB, p projectRow, id int64) (changeRequestRow, error) {
	var r changeRequestRow
	if err := lockingRead(tx).Where("id = ? AND target_project_id = ?", id, p.ID).Take(&r).Error; err != nil {
		return r, notFound(err, fmt.Sprintf("change request %d in project %q", id, p.Name))
	}
	if r.State != model.RequestOpen {
		return r, fmt.Errorf("change request %d is %s (by %s): %w", id, r.State, r.Reviewer, ErrRequestClosed)
	}
	return r, nil
}

// ChangeRequestReject closes request id of target as rejected by
// reviewer; the caller has checked reviewer may.
func (s *Store) ChangeRequestReject(ctx context.Context, target string, id int64, reviewer, comment string) (out model.ChangeRequest, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, target)
		if err != nil {
			return err
		}
		r, err := openRequest(tx, p, id)
		if err != nil {
			return err
		}
		at := now6()
		res := tx.Model(&changeRequestRow{}).Where("id = ? AND state = ?", id, model.RequestOpen).
			UpdateColumns(map[string]any{"state": model.RequestRejected, "reviewer": reviewer, "review_comment": textCol(comment), "reviewed_at": at})
		if res.Error != nil {
			return fmt.Errorf("reject change request %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("change request %d was reviewed concurrently: %w", id, ErrRequestClosed)
		}
		r.State, r.Reviewer, r.ReviewComment, r.ReviewedAt = model.RequestRejected, reviewer, textCol(comment), &at
		out = r.model(p.Name)
		return nil
	})
	return out, err
}

// ChangeRequestApply approves request id of target as reviewer and
// applies it, in one transaction: wf (the request's spec, parsed and
// checked by the caller as reviewer) becomes a new target version applied
// by reviewer, the request records it, the workflow's schedule in a gated
// project is pinned to it, and its drift is cleared. A target that got a
// version since the request is ErrTargetMoved: the reviewed diff is stale.
func (s *Store) ChangeRequestApply(ctx context.Context, target string, id int64, reviewer, comment string, wf *spec.Workflow) (out model.ChangeRequest, err error) {
	pw, err := prepareWorkflow(wf)
	if err != nil {
		return out, err
	}
	pw.promotion = id
	most, _ := s.SettingInt(ctx, model.SettingVersionsPerWorkflow, model.DefaultVersionsPerWorkflow)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, target)
		if err != nil {
			return err
		}
		r, err := openRequest(tx, p, id)
		if err != nil {
			return err
		}
		if wf.Name != r.Workflow {
			return fmt.Errorf("the spec names %q, the request %q: %w", wf.Name, r.Workflow, ErrConflict)
		}
		cur, err := latestVersion(tx, p.ID, r.Workflow)
		if err != nil {
			return err
		}
		if cur != r.BaseVersion {
			return fmt.Errorf("workflow %q in project %q is at version %d, not %d as when request %d was made: "+
				"the diff reviewed is stale; reject it and promote again: %w", r.Workflow, p.Name, cur, r.BaseVersion, id, ErrTargetMoved)
		}
		def, _, err := s.putWorkflowTx(tx, p, reviewer, pw, most)
		if err != nil {
			return err
		}
		at := now6()
		res := tx.Model(&changeRequestRow{}).Where("id = ? AND state = ?", id, model.RequestOpen).
			UpdateColumns(map[string]any{"state": model.RequestApplied, "reviewer": reviewer, "review_comment": textCol(comment),
				"reviewed_at": at, "applied_version": def.Version})
		if res.Error != nil {
			return fmt.Errorf("approve change request %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("change request %d was reviewed concurrently: %w", id, ErrRequestClosed)
		}
		g, err := gateOf(tx, p.ID)
		if err != nil {
			return err
		}
		if g.RequireReview {
			if err := pinSchedule(tx, p.ID, r.Workflow, def.Version, reviewer); err != nil {
				return err
			}
		}
		if err := tx.Where("project_id = ? AND workflow_name = ?", p.ID, r.Workflow).Delete(&driftRow{}).Error; err != nil {
			return fmt.Errorf("clear the drift of %q: %w", r.Workflow, err)
		}
		r.State, r.Reviewer, r.ReviewComment, r.ReviewedAt, r.AppliedVersion = model.RequestApplied, reviewer, textCol(comment), &at, def.Version
		out = r.model(p.Name)
		return nil
	})
	return out, err
}

// noteDrift records that version of workflow name in p was made outside
// promotion by author. It is drift in a gated project once the workflow
// has a promoted version: the first such version is kept (later ones
// change nothing) and its insert appends the promotion event the master
// alerts, so a drift alerts once until a promotion clears it.
func noteDrift(tx *gorm.DB, p projectRow, name string, version int, author string) error {
	g, err := gateOf(tx, p.ID)
	if err != nil || !g.RequireReview {
		return err
	}
	promoted, err := promotedVersion(tx, p.ID, name)
	if err != nil || promoted == 0 {
		return err
	}
	// Read first: MySQL counts a row found by ON DUPLICATE KEY as affected
	// with found-rows on. Two edits racing here may both alert; each names
	// its own version.
	var since []int
	if err := lockingRead(tx).Model(&driftRow{}).Where("project_id = ? AND workflow_name = ?", p.ID, name).
		Pluck("since_version", &since).Error; err != nil || len(since) > 0 {
		return err
	}
	now := now6()
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&driftRow{ProjectID: p.ID, WorkflowName: name,
		SinceVersion: version, PromotedVersion: promoted, EditedBy: author, DetectedAt: now})
	if res.Error != nil {
		return fmt.Errorf("record the drift of %q: %w", name, res.Error)
	}
	signalAppended(tx)
	detail := map[string]any{"since_version": version, "promoted_version": promoted, "edited_by": author}
	ev := eventRow{Time: now, Kind: model.EventPromotion, Project: p.Name, Workflow: name, State: "drift", DetailJSON: jsonText(detail, 1)}
	if err := tx.Create(&ev).Error; err != nil {
		return fmt.Errorf("append the drift event of %q: %w", name, err)
	}
	return nil
}

// DriftList returns the drifted workflows of project (name "": all).
func (s *Store) DriftList(ctx context.Context, project, name string) ([]model.Drift, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return nil, err
	}
	q := db.Where("project_id = ?", p.ID)
	if name != "" {
		q = q.Where("workflow_name = ?", name)
	}
	var rows []driftRow
	if err := q.Order("workflow_name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the drift of project %q: %w", p.Name, err)
	}
	out := make([]model.Drift, len(rows))
	for i, r := range rows {
		out[i] = model.Drift{Project: p.Name, Workflow: r.WorkflowName, SinceVersion: r.SinceVersion,
			PromotedVersion: r.PromotedVersion, EditedBy: r.EditedBy, DetectedAt: r.DetectedAt.UTC()}
	}
	return out, nil
}

// forgetPromotions is a workflow delete's part: the versions its applied
// requests made go with it (applied_version 0: gone), so a workflow made
// again under the name is not pinned to a number that is now another
// version, and its drift goes too. The requests stay, for the record.
func forgetPromotions(tx *gorm.DB, projectID int64, name string) error {
	if err := tx.Model(&changeRequestRow{}).Where("target_project_id = ? AND workflow = ? AND applied_version <> 0", projectID, name).
		UpdateColumn("applied_version", 0).Error; err != nil {
		return fmt.Errorf("forget the promoted versions of %q: %w", name, err)
	}
	if err := tx.Where("project_id = ? AND workflow_name = ?", projectID, name).Delete(&driftRow{}).Error; err != nil {
		return fmt.Errorf("forget the drift of %q: %w", name, err)
	}
	return nil
}
