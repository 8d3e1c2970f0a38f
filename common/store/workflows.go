package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// WorkflowPut stores w in project as applied by the server itself (no
// user): PutWorkflowAs with author "".
func (s *Store) WorkflowPut(ctx context.Context, project string, w *spec.Workflow) (def model.WorkflowDefinition, created bool, err error) {
	return s.WorkflowPutAs(ctx, project, "", w)
}

// WorkflowPutAs stores w in project, applied by user author, as a new
// version when its canonical form or its author differs from the latest
// version's (the author's grants are what the version reaches at run);
// created is false when both were the same.
func (s *Store) WorkflowPutAs(ctx context.Context, project, author string, w *spec.Workflow) (def model.WorkflowDefinition, created bool, err error) {
	pw, err := prepareWorkflow(w)
	if err != nil {
		return def, false, err
	}
	// Read before the transaction (SQLite has one writer); an unreadable
	// setting takes its default rather than fail the apply.
	most, _ := s.SettingInt(ctx, model.SettingVersionsPerWorkflow, model.DefaultVersionsPerWorkflow)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, project)
		if err != nil {
			return err
		}
		def, created, err = s.putWorkflowTx(tx, p, author, pw, most)
		return err
	})
	return def, created, err
}

// preparedWorkflow is a spec with what its apply computes before the
// transaction.
type preparedWorkflow struct {
	w       *spec.Workflow
	secrets bool
	canon   []byte
	hash    string
	uses    map[string]string
	commit  string // the Git commit it comes from ("": applied by hand)
	// promotion is the change request applying it (0: an edit outside
	// promotion, drift in a gated project).
	promotion int64
}

func prepareWorkflow(w *spec.Workflow) (preparedWorkflow, error) {
	pw := preparedWorkflow{w: w, secrets: len(w.SecretNames()) > 0}
	var err error
	if pw.canon, pw.hash, err = w.Canonical(); err != nil {
		return pw, fmt.Errorf("workflow %q: %w", w.Name, err)
	}
	if pw.uses, err = taskDatasources(w); err != nil {
		return pw, fmt.Errorf("workflow %q: %w", w.Name, err)
	}
	return pw, nil
}

// putWorkflowTx is WorkflowPutAs's write in tx, for project p; most is
// the versions a workflow may keep.
func (s *Store) putWorkflowTx(tx *gorm.DB, p projectRow, author string, pw preparedWorkflow, most int64) (def model.WorkflowDefinition, created bool, err error) {
	w, canon, hash, uses, secrets := pw.w, pw.canon, pw.hash, pw.uses, pw.secrets
	err = func() error {
		var latest workflowDefinitionRow
		err = tx.Where("project_id = ? AND name = ?", p.ID, w.Name).Order("version DESC").Take(&latest).Error
		if secrets && (err == nil || errors.Is(err, gorm.ErrRecordNotFound)) {
			// Sealed after reading the latest version: a secret given as
			// the mask keeps the value sealed there.
			kept, kerr := keepSealed(w, latest.SpecJSON)
			if kerr == nil {
				canon, hash, kerr = s.sealSpec(kept)
			}
			if kerr != nil {
				return fmt.Errorf("workflow %q: %w", w.Name, kerr)
			}
		}
		switch {
		case err == nil && latest.SpecHash == hash && latest.AppliedBy == author:
			def = latest.model(p.Name)
			return nil
		case err != nil && !errors.Is(err, gorm.ErrRecordNotFound):
			return fmt.Errorf("read latest version: %w", err)
		}
		// Versions are numbered from 1 and only ever deleted all at once
		// (DeleteWorkflow): the latest's number is how many there are.
		if int64(latest.Version) >= most {
			return fmt.Errorf("workflow %q already keeps %d versions, the most setting %s allows; "+
				"an identical spec is still accepted; delete the workflow to start again, or ask an admin to raise the setting: %w",
				w.Name, latest.Version, model.SettingVersionsPerWorkflow, ErrVersionQuota)
		}
		if err := checkDatasources(tx, specDatasources(uses)); err != nil {
			return err
		}
		if err := checkRefs(tx, p.Name, w); err != nil {
			return err
		}
		prio, _ := model.ParsePriority(w.Priority)
		r := workflowDefinitionRow{ProjectID: p.ID, Name: w.Name, Version: latest.Version + 1,
			SpecJSON: string(canon), SpecHash: hash, Description: w.Description,
			FailureStrategy: w.FailureStrategy, Priority: int(prio), WorkerGroup: w.WorkerGroup,
			TimeoutMs: w.Timeout.D().Milliseconds(), TaskCount: len(w.Tasks), AppliedBy: author,
			GitCommit: pw.commit, CreatedAt: time.Now().UTC()}
		if w.MaxActiveRuns != nil {
			r.MaxActiveRuns = *w.MaxActiveRuns
		}
		if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("workflow %q changed concurrently, retry: %w", w.Name, ErrConflict)
			}
			return fmt.Errorf("insert definition: %w", err)
		}
		tasks := make([]taskDefinitionRow, 0, len(w.Tasks))
		var rels []taskRelationRow
		for _, t := range w.Tasks {
			tp, _ := model.ParsePriority(t.Priority)
			tasks = append(tasks, taskDefinitionRow{WorkflowDefinitionID: r.ID, Name: t.Name, Type: t.Type,
				Command: t.Command, Priority: int(tp), WorkerGroup: t.WorkerGroup, Retries: t.Retries,
				RetryIntervalMs: t.RetryInterval.D().Milliseconds(), TimeoutMs: t.Timeout.D().Milliseconds(),
				Datasource: uses[t.Name]})
			for _, d := range t.DependsOn {
				rels = append(rels, taskRelationRow{WorkflowDefinitionID: r.ID, PreTask: d, PostTask: t.Name})
			}
		}
		if err := tx.CreateInBatches(tasks, 2*insertBatch).Error; err != nil { // ~11 columns a row
			return fmt.Errorf("insert task definitions: %w", err)
		}
		if len(rels) > 0 {
			if err := tx.CreateInBatches(rels, 5*insertBatch).Error; err != nil { // 4 columns a row
				return fmt.Errorf("insert task relations: %w", err)
			}
		}
		if err := writeDatasetRefs(tx, p.ID, w); err != nil {
			return err
		}
		if pw.promotion == 0 {
			if err := noteDrift(tx, p, w.Name, r.Version, author); err != nil {
				return err
			}
		}
		def, created = r.model(p.Name), true
		return nil
	}()
	return def, created, err
}

// ErrVersionQuota: the workflow keeps as many versions as the setting
// quota.versions_per_workflow allows (the API answers 400).
var ErrVersionQuota = errors.New("too many versions")

// WorkflowGet returns a version of a workflow; version 0 means the latest.
func (s *Store) WorkflowGet(ctx context.Context, project, name string, version int) (model.WorkflowDefinition, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return model.WorkflowDefinition{}, err
	}
	q := db.Where("project_id = ? AND name = ?", p.ID, name)
	if version > 0 {
		q = q.Where("version = ?", version)
	}
	var r workflowDefinitionRow
	if err := q.Order("version DESC").Take(&r).Error; err != nil {
		what := fmt.Sprintf("workflow %q in project %q", name, project)
		if version > 0 {
			what = fmt.Sprintf("version %d of workflow %q in project %q", version, name, project)
		}
		return model.WorkflowDefinition{}, notFound(err, what)
	}
	return r.model(p.Name), nil
}

// WorkflowDefinition returns a definition by id.
func (s *Store) WorkflowDefinition(ctx context.Context, id int64) (model.WorkflowDefinition, error) {
	var r workflowDefinitionRow
	db := s.db.WithContext(ctx)
	if err := db.Take(&r, id).Error; err != nil {
		return model.WorkflowDefinition{}, notFound(err, fmt.Sprintf("workflow definition %d", id))
	}
	var p projectRow
	if err := db.Take(&p, r.ProjectID).Error; err != nil {
		return model.WorkflowDefinition{}, notFound(err, fmt.Sprintf("project %d", r.ProjectID))
	}
	d := r.model(p.Name)
	d.ProjectTenant = p.Tenant
	// The tenant check's author is the one the walls check (applied_by):
	// the server's own code, or an enabled admin, may name any tenant.
	d.CreatedBy = r.AppliedBy
	admin, err := s.privileged(ctx, model.Author{Name: r.AppliedBy, Server: r.AppliedBy == ""})
	if err != nil {
		return model.WorkflowDefinition{}, fmt.Errorf("author of workflow definition %d: %w", id, err)
	}
	d.AuthorAdmin = admin
	return d, nil
}

// WorkflowList returns the latest version of every workflow in a project.
func (s *Store) WorkflowList(ctx context.Context, project string) ([]model.WorkflowDefinition, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return nil, err
	}
	var rows []workflowDefinitionRow
	latest := db.Model(&workflowDefinitionRow{}).Select("name, MAX(version) AS version").
		Where("project_id = ?", p.ID).Group("name")
	err = db.Omit("spec_json").
		Joins("JOIN (?) AS l ON l.name = workflow_definition.name AND l.version = workflow_definition.version", latest).
		Where("workflow_definition.project_id = ?", p.ID).Order("workflow_definition.name").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list workflows of %q: %w", project, err)
	}
	return defs(rows, p.Name), nil
}

// WorkflowVersions returns every version of a workflow, newest first.
func (s *Store) WorkflowVersions(ctx context.Context, project, name string) ([]model.WorkflowDefinition, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return nil, err
	}
	var rows []workflowDefinitionRow
	if err := db.Omit("spec_json").Where("project_id = ? AND name = ?", p.ID, name).
		Order("version DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list versions of %q: %w", name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("workflow %q in project %q: %w", name, project, ErrNotFound)
	}
	return defs(rows, p.Name), nil
}

// WorkflowDelete removes every version of a workflow and its schedule. It
// refuses with ErrConflict while an instance of it is unfinished, since a
// runner or a later recovery still needs the definition, or while a
// backfill of it runs. Its definitions are locked first (lockingRead), as
// every run, fire, schedule edit and backfill does before anything else, so
// one that commits meanwhile is either seen here or waits and finds the
// workflow gone, and the common lock order leaves no deadlock.
func (s *Store) WorkflowDelete(ctx context.Context, project, name string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, project)
		if err != nil {
			return err
		}
		return deleteWorkflowTx(tx, p, name)
	})
}

// deleteWorkflowTx is WorkflowDelete in tx (a Git sync deletes the
// workflows whose file is gone in its own transaction); the workflow's Git
// origin goes with it.
func deleteWorkflowTx(tx *gorm.DB, p projectRow, name string) error {
	project := p.Name
	var ids []int64
	if err := lockingRead(tx).Model(&workflowDefinitionRow{}).Where("project_id = ? AND name = ?", p.ID, name).
		Pluck("id", &ids).Error; err != nil {
		return fmt.Errorf("find workflow %q: %w", name, err)
	}
	if len(ids) == 0 {
		return fmt.Errorf("workflow %q in project %q: %w", name, project, ErrNotFound)
	}
	var sched []scheduleRow
	if err := tx.Select("id, last_fire_time").Where("project_id = ? AND workflow_name = ?", p.ID, name).Find(&sched).Error; err != nil {
		return fmt.Errorf("read schedule of %q: %w", name, err)
	}
	for _, sc := range sched { // its fire written ahead and not due is no unfinished run: it goes with the schedule
		if _, _, err := cancelAhead(tx, sc.ID, sc.LastFireTime, time.Now()); err != nil {
			return err
		}
		if err := tx.Where("schedule_id = ?", sc.ID).Delete(&fireRow{}).Error; err != nil {
			return fmt.Errorf("delete the fires of schedule %d: %w", sc.ID, err)
		}
	}
	if err := tx.Where("project_id = ? AND workflow_name = ?", p.ID, name).Delete(&scheduleRow{}).Error; err != nil {
		return fmt.Errorf("delete schedule of %q: %w", name, err)
	}
	var live int64
	var err error
	if live, err = lockedCount(lockingRead(tx).Model(&workflowInstanceRow{}).Where("workflow_definition_id IN ? AND state NOT IN ?", ids, finishedWorkflowStates())); err != nil {
		return fmt.Errorf("count instances of %q: %w", name, err)
	}
	if live > 0 {
		return fmt.Errorf("workflow %q has %d unfinished instance(s); stop them first: %w", name, live, ErrConflict)
	}
	if live, err = lockedCount(lockingRead(tx).Model(&backfillRow{}).Where("project_id = ? AND workflow_name = ? AND state = ?", p.ID, name, model.BackfillRunning)); err != nil {
		return fmt.Errorf("count backfills of %q: %w", name, err)
	}
	if live > 0 {
		return fmt.Errorf("workflow %q has %d running backfill(s); stop them first: %w", name, live, ErrConflict)
	}
	if err := forgetPromotions(tx, p.ID, name); err != nil {
		return err
	}
	if err := deleteWorkflowTriggers(tx, p.ID, name); err != nil {
		return err
	}
	if err := deleteDatasetRefs(tx, p.ID, name); err != nil {
		return err
	}
	for _, del := range []struct {
		m     any
		where string
	}{{&taskRelationRow{}, "workflow_definition_id IN ?"}, {&taskDefinitionRow{}, "workflow_definition_id IN ?"},
		{&workflowDefinitionRow{}, "id IN ?"}} {
		if err := tx.Where(del.where, ids).Delete(del.m).Error; err != nil {
			return fmt.Errorf("delete workflow %q: %w", name, err)
		}
	}
	if err := tx.Where("project_id = ? AND workflow_name = ?", p.ID, name).Delete(&gitWorkflowRow{}).Error; err != nil {
		return fmt.Errorf("delete the git origin of workflow %q: %w", name, err)
	}
	return nil
}

// taskDatasources maps each task that uses a managed datasource to its
// name, as its type declares (tasktype.Def.Datasource).
func taskDatasources(w *spec.Workflow) (map[string]string, error) {
	out := map[string]string{}
	for i := range w.Tasks {
		t := &w.Tasks[i]
		def, ok := tasktype.Lookup(t.Type)
		if !ok || def.Datasource == nil {
			continue
		}
		s, problems := def.Decode(t.TypeFields())
		if len(problems) > 0 {
			return nil, fmt.Errorf("task %s: %s", t.Name, strings.Join(problems, "; "))
		}
		if n := def.Datasource(s); n != "" {
			out[t.Name] = n
		}
	}
	return out, nil
}

func specDatasources(uses map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range uses {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func finishedWorkflowStates() []string {
	return []string{string(model.WorkflowPaused), string(model.WorkflowStopped),
		string(model.WorkflowFailed), string(model.WorkflowSucceeded)}
}

func defs(rows []workflowDefinitionRow, project string) []model.WorkflowDefinition {
	out := make([]model.WorkflowDefinition, len(rows))
	for i, r := range rows {
		out[i] = r.model(project)
	}
	return out
}
