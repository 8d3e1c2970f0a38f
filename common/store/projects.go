package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// ProjectCreate inserts a project; ErrConflict when the name is taken.
func (s *Store) ProjectCreate(ctx context.Context, name, description string) (model.Project, error) {
	r := projectRow{Name: name, Description: description, CreatedAt: time.Now().UTC()}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		if isUniqueViolation(err) {
			return model.Project{}, fmt.Errorf("project %q exists: %w", name, ErrConflict)
		}
		return model.Project{}, fmt.Errorf("create project %q: %w", name, err)
	}
	return r.model(), nil
}

// ProjectGet returns the project by name.
func (s *Store) ProjectGet(ctx context.Context, name string) (model.Project, error) {
	r, err := getProject(s.db.WithContext(ctx), name)
	if err != nil {
		return model.Project{}, err
	}
	return r.model(), nil
}

func getProject(db *gorm.DB, name string) (projectRow, error) {
	return takeNamed[projectRow](db, "project", name)
}

// ProjectList returns every project by name.
func (s *Store) ProjectList(ctx context.Context) ([]model.Project, error) {
	return listNamed(s.db.WithContext(ctx), "projects", projectRow.model)
}
