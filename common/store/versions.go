package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// ErrUnknownVersion: a request named a version (or a commit) the workflow
// has none of (the API answers 400).
var ErrUnknownVersion = errors.New("unknown version")

// latestVersion is the number of the newest version of project p's
// workflow name (0: none). Versions are numbered from 1 and only deleted
// with their workflow, so 1..latest all exist.
func latestVersion(tx *gorm.DB, projectID int64, name string) (int, error) {
	var latest int
	if err := tx.Model(&workflowDefinitionRow{}).Select("COALESCE(MAX(version), 0)").
		Where("project_id = ? AND name = ?", projectID, name).Scan(&latest).Error; err != nil {
		return 0, fmt.Errorf("read the latest version of %q: %w", name, err)
	}
	return latest, nil
}

// versionExists refuses a version the workflow has not (ErrUnknownVersion,
// naming the versions it has).
func versionExists(tx *gorm.DB, projectID int64, name string, version int) error {
	latest, err := latestVersion(tx, projectID, name)
	if err != nil {
		return err
	}
	if version < 1 || version > latest {
		return fmt.Errorf("workflow %q has no version %d; its versions are 1 to %d: %w", name, version, latest, ErrUnknownVersion)
	}
	return nil
}

// resolveVersion is the version a restart action asks for: want
// model.VersionLatest is the newest, a number must exist.
func resolveVersion(tx *gorm.DB, projectID int64, name string, want int) (int, error) {
	if want == model.VersionLatest {
		latest, err := latestVersion(tx, projectID, name)
		if err == nil && latest == 0 {
			err = fmt.Errorf("workflow %q has no versions left: %w", name, ErrUnknownVersion)
		}
		return latest, err
	}
	return want, versionExists(tx, projectID, name, want)
}

// WorkflowVersionOfCommit returns the version of a workflow a Git sync
// made from commit (a full hash, or a prefix of at least 7 hex digits): the
// newest one when the commit made several, ErrUnknownVersion when it made
// none (the file was unchanged by it: the version of an earlier commit ran).
func (s *Store) WorkflowVersionOfCommit(ctx context.Context, project, name, commit string) (model.WorkflowDefinition, error) {
	commit = strings.ToLower(commit)
	if !validCommitPrefix(commit) {
		return model.WorkflowDefinition{}, fmt.Errorf("commit %q: want 7 to 64 hex digits: %w", commit, ErrUnknownVersion)
	}
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return model.WorkflowDefinition{}, err
	}
	var r workflowDefinitionRow
	err = db.Omit("spec_json").Where("project_id = ? AND name = ? AND git_commit LIKE ?", p.ID, name, commit+"%").
		Order("version DESC").Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		var made []string
		if err := db.Model(&workflowDefinitionRow{}).Where("project_id = ? AND name = ? AND git_commit <> ''", p.ID, name).
			Order("version DESC").Limit(5).Pluck("git_commit", &made).Error; err != nil {
			return model.WorkflowDefinition{}, fmt.Errorf("read the commits of %q: %w", name, err)
		}
		for i, c := range made {
			made[i] = c[:min(12, len(c))]
		}
		hint := "no version of it came from a Git sync"
		if len(made) > 0 {
			hint = "the newest versions came from " + strings.Join(made, ", ")
		}
		return model.WorkflowDefinition{}, fmt.Errorf("no version of workflow %q was made from commit %s (a sync that left its file unchanged makes none); %s: %w",
			name, commit, hint, ErrUnknownVersion)
	}
	if err != nil {
		return model.WorkflowDefinition{}, fmt.Errorf("find the version of %q from commit %s: %w", name, commit, err)
	}
	return r.model(p.Name), nil
}

func validCommitPrefix(c string) bool {
	if len(c) < 7 || len(c) > 64 {
		return false
	}
	for _, r := range c {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// VersionFacts answers, in one read through the read pool, the Git commit
// definition defID came from ("": applied by hand, or gone with its
// workflow) and the newest version of workflow name in project projectID
// (0: none left). An instance page polls it with every read.
func (s *Store) VersionFacts(ctx context.Context, defID, projectID int64, name string) (commit string, latest int, err error) {
	var row struct {
		GitCommit     string
		LatestVersion int
	}
	if err := s.read(ctx).Raw(`SELECT COALESCE((SELECT git_commit FROM workflow_definition WHERE id = ?), '') AS git_commit,
		COALESCE((SELECT MAX(version) FROM workflow_definition WHERE project_id = ? AND name = ?), 0) AS latest_version`,
		defID, projectID, name).Scan(&row).Error; err != nil {
		return "", 0, fmt.Errorf("read the versions of workflow %q: %w", name, err)
	}
	return row.GitCommit, row.LatestVersion, nil
}
