package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/beluga-scheduler/beluga/common/model"
	"gorm.io/gorm"
)

// Datasources and task groups are created by admins and granted to
// projects: the tasks of a project's workflows may use those granted to it.
// A version an admin (or the server's own code) applied may use any
// (docs/security.md, section 4).

// granted is a kind of resource granted to projects.
type granted struct {
	table  string // the resource's, keyed by id with a unique name
	grants string // resource id, project id, granted by, created at
	idCol  string
	what   string // for messages
}

var (
	datasourceGrants = granted{"datasource", "datasource_grant", "datasource_id", "datasource"}
	taskGroupGrants  = granted{"task_group", "task_group_grant", "task_group_id", "task group"}
)

// DatasourceSetProjects makes projects (by name) the ones datasource name
// is granted to, replacing the set. A project that does not exist is
// ErrNotFound naming it, and nothing changes.
func (s *Store) DatasourceSetProjects(ctx context.Context, name string, projects []string, by string) error {
	return s.setProjects(ctx, datasourceGrants, name, projects, by)
}

// TaskGroupSetProjects is SetDatasourceProjects for task group name.
func (s *Store) TaskGroupSetProjects(ctx context.Context, name string, projects []string, by string) error {
	return s.setProjects(ctx, taskGroupGrants, name, projects, by)
}

// DatasourceProjects maps datasource id to the names of the projects it
// is granted to, sorted.
func (s *Store) DatasourceProjects(ctx context.Context) (map[int64][]string, error) {
	return s.projectsOf(ctx, datasourceGrants)
}

// TaskGroupProjects maps task group id to the names of the projects it is
// granted to, sorted.
func (s *Store) TaskGroupProjects(ctx context.Context) (map[int64][]string, error) {
	return s.projectsOf(ctx, taskGroupGrants)
}

// DatasourceGranted says whether datasource name is granted to project
// (by name); false when either does not exist.
func (s *Store) DatasourceGranted(ctx context.Context, name, project string) (bool, error) {
	return s.isGranted(ctx, datasourceGrants, name, project)
}

// TaskGroupGranted is DatasourceGranted for task group name.
func (s *Store) TaskGroupGranted(ctx context.Context, name, project string) (bool, error) {
	return s.isGranted(ctx, taskGroupGrants, name, project)
}

// DatasourceUsable says whether a version author applied in project may
// use datasource name at run: the server and admins may use any; others
// those granted to the project.
func (s *Store) DatasourceUsable(ctx context.Context, a model.Author, name, project string) (bool, error) {
	return s.usable(ctx, datasourceGrants, a, name, project)
}

// TaskGroupUsable is DatasourceUsable for task group name.
func (s *Store) TaskGroupUsable(ctx context.Context, a model.Author, name, project string) (bool, error) {
	return s.usable(ctx, taskGroupGrants, a, name, project)
}

func (s *Store) usable(ctx context.Context, g granted, a model.Author, name, project string) (bool, error) {
	priv, err := s.privileged(ctx, a)
	if err != nil || priv {
		return priv, err
	}
	return s.isGranted(ctx, g, name, project)
}

func (s *Store) setProjects(ctx context.Context, g granted, name string, projects []string, by string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids []int64
		if err := tx.Table(g.table).Where("name = ?", name).Limit(1).Pluck("id", &ids).Error; err != nil {
			return fmt.Errorf("read %s %q: %w", g.what, name, err)
		}
		if len(ids) == 0 {
			return fmt.Errorf("%s %q: %w", g.what, name, ErrNotFound)
		}
		var rows []map[string]any
		seen := map[int64]bool{}
		for _, pn := range projects {
			p, err := getProject(tx, pn)
			if err != nil {
				return err
			}
			if !seen[p.ID] {
				seen[p.ID] = true
				rows = append(rows, map[string]any{g.idCol: ids[0], "project_id": p.ID, "granted_by": by, "created_at": now6()})
			}
		}
		if err := tx.Exec("DELETE FROM "+g.grants+" WHERE "+g.idCol+" = ?", ids[0]).Error; err != nil {
			return fmt.Errorf("clear grants of %s %q: %w", g.what, name, err)
		}
		if len(rows) > 0 {
			if err := tx.Table(g.grants).Create(rows).Error; err != nil {
				return fmt.Errorf("grant %s %q: %w", g.what, name, err)
			}
		}
		return nil
	})
}

func (s *Store) projectsOf(ctx context.Context, g granted) (map[int64][]string, error) {
	var rows []struct {
		ID   int64
		Name string
	}
	if err := s.db.WithContext(ctx).Table(g.grants).Select(g.grants + "." + g.idCol + " AS id, project.name AS name").
		Joins("JOIN project ON project.id = " + g.grants + ".project_id").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read %s grants: %w", g.what, err)
	}
	out := map[int64][]string{}
	for _, r := range rows {
		out[r.ID] = append(out[r.ID], r.Name)
	}
	for _, ps := range out {
		sort.Strings(ps)
	}
	return out, nil
}

func (s *Store) isGranted(ctx context.Context, g granted, name, project string) (bool, error) {
	var n int64
	err := s.db.WithContext(ctx).Table(g.grants).
		Joins("JOIN "+g.table+" ON "+g.table+".id = "+g.grants+"."+g.idCol).
		Joins("JOIN project ON project.id = "+g.grants+".project_id").
		Where(g.table+".name = ? AND project.name = ?", name, project).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("read grant of %s %q to project %q: %w", g.what, name, project, err)
	}
	return n > 0, nil
}

// deleteGrants removes the grants of resource id, in tx (its deletion).
func deleteGrants(tx *gorm.DB, g granted, id int64) error {
	if err := tx.Exec("DELETE FROM "+g.grants+" WHERE "+g.idCol+" = ?", id).Error; err != nil {
		return fmt.Errorf("delete grants of %s %d: %w", g.what, id, err)
	}
	return nil
}
