package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/spec"
)

type projectGitRow struct {
	ProjectID         int64 `gorm:"primaryKey;autoIncrement:false"`
	URL               string
	Branch            string
	Dir               string
	Username          string
	PasswordSealed    *string
	BoundBy           string
	UpdatedAt         time.Time
	LastCommit        string
	LastSyncedAt      *time.Time
	LastAttemptCommit string
	LastErrorFile     string
	LastError         *string
	SyncInterval      int // minutes
	Mode              string
	HookSecretSealed  *string
	AlertChannels     *string // a JSON list
	SSHKeySealed      *string `gorm:"column:ssh_key_sealed"`
	KnownHosts        *string
}

func (projectGitRow) TableName() string { return "project_git" }

func (r projectGitRow) model(project string) model.GitBinding {
	b := model.GitBinding{Project: project, URL: r.URL, Branch: r.Branch, Dir: r.Dir, User: r.Username,
		BoundBy: r.BoundBy, UpdatedAt: r.UpdatedAt.UTC(), LastCommit: r.LastCommit,
		LastAttemptCommit: r.LastAttemptCommit, LastErrorFile: r.LastErrorFile}
	if r.PasswordSealed != nil {
		b.PasswordSealed = *r.PasswordSealed
	}
	if r.LastError != nil {
		b.LastError = *r.LastError
	}
	if r.LastSyncedAt != nil {
		t := r.LastSyncedAt.UTC()
		b.LastSyncedAt = &t
	}
	b.SyncInterval, b.Mode = time.Duration(r.SyncInterval)*time.Minute, r.Mode
	if r.HookSecretSealed != nil {
		b.HookSecretSealed = *r.HookSecretSealed
	}
	if r.AlertChannels != nil {
		_ = json.Unmarshal([]byte(*r.AlertChannels), &b.AlertChannels)
	}
	if r.SSHKeySealed != nil {
		b.SSHKeySealed = *r.SSHKeySealed
	}
	if r.KnownHosts != nil {
		b.KnownHosts = *r.KnownHosts
	}
	return b
}

// KeepGitPassword passed as GitBindingPut's sealed password keeps the
// stored one (a client that read a binding never saw its password).
const KeepGitPassword = KeepPassword

// GitBindingPut binds b.Project to a Git repository or changes its
// binding; created says which. The sync state stays (a changed URL syncs
// its branch's head anew all the same: the state only says what was
// applied).
func (s *Store) GitBindingPut(ctx context.Context, b model.GitBinding) (out model.GitBinding, created bool, err error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, b.Project)
		if err != nil {
			return err
		}
		var cur projectGitRow
		err = tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("project_id = ?", p.ID).Take(&cur).Error
		exists := err == nil
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("read the git binding of project %q: %w", b.Project, err)
		}
		r := cur
		r.ProjectID, r.URL, r.Branch, r.Dir, r.Username, r.BoundBy, r.UpdatedAt = p.ID, b.URL, b.Branch, b.Dir, b.User, b.BoundBy, now
		r.SyncInterval, r.Mode = int(b.SyncInterval/time.Minute), b.Mode
		r.PasswordSealed = keepOrSet(r.PasswordSealed, b.PasswordSealed)
		r.HookSecretSealed = keepOrSet(r.HookSecretSealed, b.HookSecretSealed)
		r.SSHKeySealed = keepOrSet(r.SSHKeySealed, b.SSHKeySealed)
		r.KnownHosts = nil
		if b.KnownHosts != "" {
			r.KnownHosts = &b.KnownHosts
		}
		r.AlertChannels = jsonText(b.AlertChannels, len(b.AlertChannels))
		if exists {
			err = tx.Select("*").Where("project_id = ?", p.ID).Updates(&r).Error
		} else {
			err = tx.Create(&r).Error
			if isUniqueViolation(err) {
				return fmt.Errorf("the git binding of project %q was created concurrently, retry: %w", b.Project, ErrConflict)
			}
		}
		if err != nil {
			return fmt.Errorf("write the git binding of project %q: %w", b.Project, err)
		}
		out, created = r.model(p.Name), !exists
		return nil
	})
	return out, created, err
}

// keepOrSet is a sealed column after a put of v: KeepGitPassword keeps
// cur, "" clears it.
func keepOrSet(cur *string, v string) *string {
	switch v {
	case KeepGitPassword:
		return cur
	case "":
		return nil
	}
	return &v
}

// GitBindingsPeriodic returns the bindings the leader syncs by itself
// (sync_interval > 0), by project name.
func (s *Store) GitBindingsPeriodic(ctx context.Context) ([]model.GitBinding, error) {
	db := s.db.WithContext(ctx)
	var rows []projectGitRow
	if err := db.Where("sync_interval > 0").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list the periodic git bindings: %w", err)
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ProjectID
	}
	var ps []projectRow
	if err := db.Where("id IN ?", ids).Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("list the periodic git bindings' projects: %w", err)
	}
	names := make(map[int64]string, len(ps))
	for _, p := range ps {
		names[p.ID] = p.Name
	}
	out := make([]model.GitBinding, 0, len(rows))
	for _, r := range rows {
		if n, ok := names[r.ProjectID]; ok {
			out = append(out, r.model(n))
		}
	}
	slices.SortFunc(out, func(a, b model.GitBinding) int { return strings.Compare(a.Project, b.Project) })
	return out, nil
}

// GitBindingGet returns a project's Git binding with its sync state
// (ErrNotFound: the project is not bound).
func (s *Store) GitBindingGet(ctx context.Context, project string) (model.GitBinding, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return model.GitBinding{}, err
	}
	var r projectGitRow
	if err := db.Where("project_id = ?", p.ID).Take(&r).Error; err != nil {
		return model.GitBinding{}, notFound(err, fmt.Sprintf("git binding of project %q", project))
	}
	return r.model(p.Name), nil
}

// GitSyncApplied is one file a sync applied: a workflow's, or a schedule's
// (Schedule set; Definition has its workflow's name only).
type GitSyncApplied struct {
	File       string
	Definition model.WorkflowDefinition
	Schedule   *model.Schedule // a schedule file's (nil: a workflow's, or a schedule deleted)
	Kind       string          // GitKindWorkflow or GitKindSchedule
	Created    bool            // a new version or a new schedule (false: the same spec as the latest, or a schedule replaced)
	Deleted    bool            // its file is gone: the workflow (or schedule) was deleted
}

// The kinds of files a sync applies, beside the workflows'.
const (
	GitKindWorkflow = "workflow"
	GitKindSchedule = "schedule"
)

// GitSchedule is a schedule file of a commit: its path and the schedule of
// workflow Schedule.Workflow, checked as a PUT of it is.
type GitSchedule struct {
	File     string
	Schedule model.Schedule
}

// GitCommit is what a sync applies: a commit's workflow files (Files[i]
// holds Workflows[i]) and schedule files.
type GitCommit struct {
	Commit    string
	Files     []string
	Workflows []*spec.Workflow
	Schedules []GitSchedule
}

// GitSyncApply applies a commit's workflows to project (GitSyncApplyCommit
// without schedules).
func (s *Store) GitSyncApply(ctx context.Context, project, author, commit string, files []string, wfs []*spec.Workflow) ([]GitSyncApplied, error) {
	return s.GitSyncApplyCommit(ctx, project, author, GitCommit{Commit: commit, Files: files, Workflows: wfs})
}

// GitSyncApplyCommit applies a commit's files to project in one transaction,
// as author: every one or none (the error of the first that fails, wrapped
// with its file). The workflows first, then the schedules (a schedule may
// name a workflow of the same commit). The workflows and schedules that
// came from the repository (their origin is recorded) and whose file is
// gone are deleted in the same transaction, as WorkflowDelete and
// ScheduleDelete do; a workflow that cannot be (it runs) refuses the
// commit. It records the commit as the project's last applied and appends
// a git_sync event, in the same transaction.
func (s *Store) GitSyncApplyCommit(ctx context.Context, project, author string, c GitCommit) ([]GitSyncApplied, error) {
	if len(c.Files) != len(c.Workflows) {
		return nil, fmt.Errorf("git sync of project %q: %d files but %d workflows", project, len(c.Files), len(c.Workflows))
	}
	prep := make([]preparedWorkflow, len(c.Workflows))
	for i, w := range c.Workflows {
		pw, err := prepareWorkflow(w)
		if err != nil {
			return nil, &GitFileError{File: c.Files[i], Err: err}
		}
		pw.commit = c.Commit
		prep[i] = pw
	}
	most, _ := s.SettingInt(ctx, model.SettingVersionsPerWorkflow, model.DefaultVersionsPerWorkflow)
	var out []GitSyncApplied
	var err error
	for range 5 { // a schedule fired meanwhile (ErrScheduleMoved): read again
		err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var terr error
			out, terr = s.gitApplyTx(tx, project, author, c, prep, most)
			return terr
		})
		if !errors.Is(err, ErrScheduleMoved) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) gitApplyTx(tx *gorm.DB, project, author string, c GitCommit, prep []preparedWorkflow, most int64) ([]GitSyncApplied, error) {
	p, err := getProject(tx, project)
	if err != nil {
		return nil, err
	}
	out := make([]GitSyncApplied, 0, len(prep)+len(c.Schedules))
	kept := make(map[string]bool, len(prep))
	for i, pw := range prep {
		def, created, err := s.putWorkflowTx(tx, p, author, pw, most)
		if err != nil {
			return nil, &GitFileError{File: c.Files[i], Err: err}
		}
		if err := setGitOrigin(tx, p.ID, def.Name, c.Files[i]); err != nil {
			return nil, err
		}
		kept[def.Name] = true
		out = append(out, GitSyncApplied{File: c.Files[i], Definition: def, Kind: GitKindWorkflow, Created: created})
	}
	gone, err := goneFromGit(tx, p.ID, kept)
	if err != nil {
		return nil, err
	}
	goneFile := make(map[string]string, len(gone))
	for _, g := range gone {
		goneFile[g.WorkflowName] = g.Path
	}
	keptSchedules := make(map[string]bool, len(c.Schedules))
	for _, gs := range c.Schedules {
		sc := gs.Schedule
		sc.Project = p.Name
		if path, going := goneFile[sc.Workflow]; going {
			return nil, &GitFileError{File: gs.File, Err: fmt.Errorf("workflow %q goes with this commit (its file %s is gone): remove its schedule's file too: %w",
				sc.Workflow, path, ErrNotFound)}
		}
		var old []scheduleRow
		if err := tx.Where("project_id = ? AND workflow_name = ?", p.ID, sc.Workflow).Find(&old).Error; err != nil {
			return nil, fmt.Errorf("read the schedule of %q: %w", sc.Workflow, err)
		}
		if len(old) == 1 && sameSchedule(old[0].model(), sc) {
			// Unchanged: not written, so a sync of the same commit moves
			// no version and takes back no fire written ahead.
			if err := setFileOrigin(tx, p.ID, GitKindSchedule, sc.Workflow, gs.File); err != nil {
				return nil, err
			}
			keptSchedules[sc.Workflow] = true
			got := old[0].model()
			out = append(out, GitSyncApplied{File: gs.File, Definition: model.WorkflowDefinition{Project: p.Name, Name: sc.Workflow},
				Schedule: &got, Kind: GitKindSchedule})
			continue
		}
		got, created, err := s.putScheduleTx(tx, sc, nil)
		if errors.Is(err, ErrScheduleMoved) {
			return nil, err
		}
		if err != nil {
			return nil, &GitFileError{File: gs.File, Err: err}
		}
		if err := setFileOrigin(tx, p.ID, GitKindSchedule, sc.Workflow, gs.File); err != nil {
			return nil, err
		}
		keptSchedules[sc.Workflow] = true
		out = append(out, GitSyncApplied{File: gs.File, Definition: model.WorkflowDefinition{Project: p.Name, Name: sc.Workflow},
			Schedule: &got, Kind: GitKindSchedule, Created: created})
	}
	goneSchedules, err := goneFiles(tx, p.ID, GitKindSchedule, keptSchedules)
	if err != nil {
		return nil, err
	}
	for _, g := range goneSchedules {
		err := deleteScheduleTx(tx, p.Name, g.Name)
		if err != nil && !errors.Is(err, ErrNotFound) { // deleted in Beluga meanwhile: only its origin is left
			return nil, &GitFileError{File: g.Path, Err: fmt.Errorf("the file is gone but the schedule of %q cannot be deleted: %w", g.Name, err)}
		}
		if err := tx.Where("project_id = ? AND kind = ? AND name = ?", p.ID, GitKindSchedule, g.Name).Delete(&gitFileRow{}).Error; err != nil {
			return nil, fmt.Errorf("forget the git origin of the schedule of %q: %w", g.Name, err)
		}
		if err == nil {
			out = append(out, GitSyncApplied{File: g.Path, Definition: model.WorkflowDefinition{Project: p.Name, Name: g.Name},
				Kind: GitKindSchedule, Deleted: true})
		}
	}
	for _, g := range gone {
		err := deleteWorkflowTx(tx, p, g.WorkflowName)
		if errors.Is(err, ErrNotFound) { // deleted in Beluga meanwhile: only its origin is left
			err = tx.Where("project_id = ? AND workflow_name = ?", p.ID, g.WorkflowName).Delete(&gitWorkflowRow{}).Error
		}
		if err != nil {
			return nil, &GitFileError{File: g.Path, Err: fmt.Errorf("the file is gone but workflow %q cannot be deleted: %w", g.WorkflowName, err)}
		}
		out = append(out, GitSyncApplied{File: g.Path, Definition: model.WorkflowDefinition{Project: p.Name, Name: g.WorkflowName},
			Kind: GitKindWorkflow, Deleted: true})
	}
	return out, recordGitSync(tx, p, c.Commit, "", "", len(out))
}

// gitFileRow says a file of another kind than a workflow's (a schedule's)
// came from its project's repository, and from which file.
type gitFileRow struct {
	ProjectID int64  `gorm:"primaryKey;autoIncrement:false"`
	Kind      string `gorm:"primaryKey"`
	Name      string `gorm:"primaryKey"`
	Path      string
}

func (gitFileRow) TableName() string { return "git_file" }

func setFileOrigin(tx *gorm.DB, projectID int64, kind, name, path string) error {
	r := gitFileRow{ProjectID: projectID, Kind: kind, Name: name, Path: path}
	if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "project_id"}, {Name: "kind"}, {Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"path"})}).Create(&r).Error; err != nil {
		return fmt.Errorf("record the git origin of %s %q: %w", kind, name, err)
	}
	return nil
}

func goneFiles(tx *gorm.DB, projectID int64, kind string, kept map[string]bool) ([]gitFileRow, error) {
	var rows []gitFileRow
	if err := tx.Where("project_id = ? AND kind = ?", projectID, kind).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the git origins: %w", err)
	}
	var gone []gitFileRow
	for _, r := range rows {
		if !kept[r.Name] {
			gone = append(gone, r)
		}
	}
	return gone, nil
}

// GitFileOrigin is the file the schedule (kind GitKindSchedule) or workflow
// (GitKindWorkflow, as GitOrigin) name of project came from ("": none).
func (s *Store) GitFileOrigin(ctx context.Context, project, kind, name string) (string, error) {
	if kind == GitKindWorkflow {
		return s.GitOrigin(ctx, project, name)
	}
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return "", err
	}
	var rows []gitFileRow
	if err := db.Where("project_id = ? AND kind = ? AND name = ?", p.ID, kind, name).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("read the git origin of %s %q: %w", kind, name, err)
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].Path, nil
}

// GitFileOriginSet records that the schedule (or workflow) name of project
// came from the file path of its repository (a write-back commit made it so).
func (s *Store) GitFileOriginSet(ctx context.Context, project, kind, name, path string) error {
	if kind == GitKindWorkflow {
		return s.GitOriginSet(ctx, project, name, path)
	}
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return err
	}
	return setFileOrigin(db, p.ID, kind, name, path)
}

// gitWorkflowRow says a workflow came from its project's repository, and
// from which file.
type gitWorkflowRow struct {
	ProjectID    int64  `gorm:"primaryKey;autoIncrement:false"`
	WorkflowName string `gorm:"primaryKey"`
	Path         string
}

func (gitWorkflowRow) TableName() string { return "git_workflow" }

// setGitOrigin records that workflow name of project id is the file path.
func setGitOrigin(tx *gorm.DB, projectID int64, name, path string) error {
	r := gitWorkflowRow{ProjectID: projectID, WorkflowName: name, Path: path}
	if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "project_id"}, {Name: "workflow_name"}},
		DoUpdates: clause.AssignmentColumns([]string{"path"})}).Create(&r).Error; err != nil {
		return fmt.Errorf("record the git origin of workflow %q: %w", name, err)
	}
	return nil
}

// goneFromGit is the workflows of project id that came from Git but are
// not in kept (their file is gone), by name.
func goneFromGit(tx *gorm.DB, projectID int64, kept map[string]bool) ([]gitWorkflowRow, error) {
	var rows []gitWorkflowRow
	if err := tx.Where("project_id = ?", projectID).Order("workflow_name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the git origins: %w", err)
	}
	var gone []gitWorkflowRow
	for _, r := range rows {
		if !kept[r.WorkflowName] {
			gone = append(gone, r)
		}
	}
	return gone, nil
}

// GitOriginSet records that workflow name of project came from the file
// path of its repository (a write-back commit made it so).
func (s *Store) GitOriginSet(ctx context.Context, project, name, path string) error {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return err
	}
	return setGitOrigin(db, p.ID, name, path)
}

// GitOrigin is the file workflow name of project came from ("": none).
func (s *Store) GitOrigin(ctx context.Context, project, name string) (string, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return "", err
	}
	var rows []gitWorkflowRow
	if err := db.Where("project_id = ? AND workflow_name = ?", p.ID, name).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("read the git origin of workflow %q: %w", name, err)
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].Path, nil
}

// GitSyncRefused records that a sync of commit changed nothing, because of
// file (may be "": the repository itself) and reason, with a git_sync
// event.
func (s *Store) GitSyncRefused(ctx context.Context, project, commit, file, reason string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, project)
		if err != nil {
			return err
		}
		return recordGitSync(tx, p, commit, file, reason, 0)
	})
}

// recordGitSync writes a sync's outcome to the binding's state and the
// event outbox; reason "" is an applied commit.
func recordGitSync(tx *gorm.DB, p projectRow, commit, file, reason string, applied int) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	set := map[string]any{"last_synced_at": now, "last_attempt_commit": commit, "last_error_file": file, "last_error": nil}
	state, detail := "synced", map[string]any{"commit": commit, "workflows": applied}
	if reason != "" {
		set["last_error"] = reason
		state, detail = "refused", map[string]any{"commit": commit, "file": file, "error": reason}
	} else {
		set["last_commit"] = commit
	}
	res := tx.Model(&projectGitRow{}).Where("project_id = ?", p.ID).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("record the git sync of project %q: %w", p.Name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("git binding of project %q: %w", p.Name, ErrNotFound)
	}
	signalAppended(tx)
	ev := eventRow{Time: now, Kind: model.EventGitSync, Project: p.Name, State: state, DetailJSON: jsonText(detail, 1)}
	if err := tx.Create(&ev).Error; err != nil {
		return fmt.Errorf("append the git sync event of project %q: %w", p.Name, err)
	}
	return nil
}

// GitFileError is a sync's refusal of one file.
type GitFileError struct {
	File string
	Err  error
}

func (e *GitFileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *GitFileError) Unwrap() error { return e.Err }

// GitBindingDelete unbinds a project from its repository; its workflows
// stay as they are.
func (s *Store) GitBindingDelete(ctx context.Context, project string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, project)
		if err != nil {
			return err
		}
		res := tx.Where("project_id = ?", p.ID).Delete(&projectGitRow{})
		if res.Error != nil {
			return fmt.Errorf("delete the git binding of project %q: %w", project, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("git binding of project %q: %w", project, ErrNotFound)
		}
		return nil
	})
}

// sameSchedule says whether the schedule a file gives (nw) is the one
// stored (old): every field a PUT sets, a secret param's mask standing for
// the sealed value stored.
func sameSchedule(old, nw model.Schedule) bool {
	eqTime := func(a, b *time.Time) bool { return a == nil && b == nil || a != nil && b != nil && a.Equal(*b) }
	eqPrio := func(a, b *model.Priority) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	overlap := nw.Overlap
	if overlap == "" {
		overlap = model.OverlapAllow
	}
	if old.Cron != nw.Cron || old.Timezone != nw.Timezone || !eqTime(old.StartTime, nw.StartTime) || !eqTime(old.EndTime, nw.EndTime) ||
		old.Catchup != nw.Catchup || !eqPrio(old.Priority, nw.Priority) || old.WorkerGroup != nw.WorkerGroup ||
		old.Enabled != nw.Enabled || old.Overlap != overlap || old.Deadline != nw.Deadline || old.Calendar != nw.Calendar ||
		old.OnHoliday != nw.OnHoliday || old.PinVersion != nw.PinVersion || len(old.Params) != len(nw.Params) {
		return false
	}
	oa, _ := json.Marshal(old.Alerts)
	na, _ := json.Marshal(nw.Alerts)
	if string(oa) != string(na) {
		return false
	}
	for k, v := range nw.Params {
		was, ok := old.Params[k]
		sealed := secret.IsSealed(was)
		if !ok || sealed != (v == secret.Mask || slices.Contains(nw.SecretParams, k)) || !sealed && was != v {
			return false
		}
	}
	return true
}
