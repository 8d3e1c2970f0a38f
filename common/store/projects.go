package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// CreateProject inserts a project; ErrConflict when the name is taken.
func (s *Store) CreateProject(ctx context.Context, name, description string) (model.Project, error) {
	r := projectRow{Name: name, Description: description, CreatedAt: time.Now().UTC()}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		if isUniqueViolation(err) {
			return model.Project{}, fmt.Errorf("project %q exists: %w", name, ErrConflict)
		}
		return model.Project{}, fmt.Errorf("create project %q: %w", name, err)
	}
	return r.model(), nil
}

// GetProject returns the project by name.
func (s *Store) GetProject(ctx context.Context, name string) (model.Project, error) {
	r, err := getProject(s.db.WithContext(ctx), name)
	if err != nil {
		return model.Project{}, err
	}
	return r.model(), nil
}

func getProject(db *gorm.DB, name string) (projectRow, error) {
	var r projectRow
	if err := db.Where("name = ?", name).Take(&r).Error; err != nil {
		return r, notFound(err, fmt.Sprintf("project %q", name))
	}
	return r, nil
}

// ListProjects returns every project by name.
func (s *Store) ListProjects(ctx context.Context) ([]model.Project, error) {
	var rows []projectRow
	if err := s.db.WithContext(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	out := make([]model.Project, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}
