package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// WorkflowVersionAuthor is who applied workflow version defID.
func (s *Store) WorkflowVersionAuthor(ctx context.Context, defID int64) (model.Author, error) {
	var by []string
	if err := s.db.WithContext(ctx).Model(&workflowDefinitionRow{}).Where("id = ?", defID).Limit(1).Pluck("applied_by", &by).Error; err != nil {
		return model.Author{}, fmt.Errorf("read author of workflow version %d: %w", defID, err)
	}
	if len(by) == 0 {
		return model.Author{}, fmt.Errorf("workflow version %d: %w", defID, ErrNotFound)
	}
	return model.Author{Name: by[0], Server: by[0] == ""}, nil
}

// authorUser is a's user when it is one that holds grants now: found by
// its exact name (a case-folding collation is no match) and enabled.
func (s *Store) authorUser(ctx context.Context, a model.Author) (userRow, bool, error) {
	var u userRow
	err := s.db.WithContext(ctx).Where("name = ?", a.Name).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return u, false, nil
	}
	if err != nil {
		return u, false, fmt.Errorf("read user %q: %w", a.Name, err)
	}
	return u, !u.Disabled && u.Name == a.Name, nil
}

// privileged says whether a holds every project: the server, or an
// enabled admin.
func (s *Store) privileged(ctx context.Context, a model.Author) (bool, error) {
	if a.Server {
		return true, nil
	}
	u, ok, err := s.authorUser(ctx, a)
	return ok && u.Role == model.RoleAdmin, err
}

// GrantAuthorLevel is the grant a's user holds now on project (by name): owner
// for the server and for an enabled admin; "" when the user is gone or
// disabled, the project does not exist, or there is no grant. A missing
// project and a forbidden one give the same answer.
func (s *Store) GrantAuthorLevel(ctx context.Context, a model.Author, project string) (string, error) {
	if a.Server {
		return model.GrantOwner, nil
	}
	u, ok, err := s.authorUser(ctx, a)
	if err != nil || !ok {
		return "", err
	}
	if u.Role == model.RoleAdmin {
		return model.GrantOwner, nil
	}
	var levels []string
	err = s.db.WithContext(ctx).Table("project_grant").Joins("JOIN project ON project.id = project_grant.project_id").
		Where("project.name = ? AND project_grant.user_id = ?", project, u.ID).Limit(1).Pluck("project_grant.level", &levels).Error
	if err != nil {
		return "", fmt.Errorf("read grant of %q on project %q: %w", a.Name, project, err)
	}
	if len(levels) == 0 {
		return "", nil
	}
	return levels[0], nil
}

// RefLevel is the grant a reference to another project's workflow needs
// there: operate to start it as a child run, view to read its runs.
func RefLevel(r tasktype.Ref) string {
	if r.Child {
		return model.GrantOperate
	}
	return model.GrantView
}
