package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

type datasourceRow struct {
	ID             int64
	Name           string
	Type           string
	Host           string
	Port           int
	DBName         string `gorm:"column:db_name"`
	DBUser         string `gorm:"column:db_user"`
	PasswordSealed *string
	ParamsJSON     *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func (datasourceRow) TableName() string { return "datasource" }

func (r datasourceRow) model() (model.Datasource, error) {
	d := model.Datasource{ID: r.ID, Name: r.Name, Type: r.Type, Host: r.Host, Port: r.Port, Database: r.DBName,
		User: r.DBUser, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if r.PasswordSealed != nil {
		d.PasswordSealed = *r.PasswordSealed
	}
	if r.ParamsJSON != nil && *r.ParamsJSON != "" {
		if err := json.Unmarshal([]byte(*r.ParamsJSON), &d.Params); err != nil {
			return d, fmt.Errorf("datasource %q: params: %w", r.Name, err)
		}
	}
	return d, nil
}

// ErrUnknownDatasource marks a workflow naming a datasource that does not
// exist (the caller's mistake: a 400, not a 404 of the URL).
var ErrUnknownDatasource = errors.New("unknown datasource")

// KeepPassword passed as PutDatasource's sealed password keeps the stored
// one (a client that read a datasource never saw its password).
const KeepPassword = "\x00keep"

// DatasourcePut creates the datasource d.Name or replaces its details;
// created says which. With d.PasswordSealed == KeepPassword the stored
// password stays (none on a new datasource).
func (s *Store) DatasourcePut(ctx context.Context, d model.Datasource) (out model.Datasource, created bool, err error) {
	var params *string
	if len(d.Params) > 0 {
		b, err := json.Marshal(d.Params)
		if err != nil {
			return out, false, fmt.Errorf("datasource %q: params: %w", d.Name, err)
		}
		p := string(b)
		params = &p
	}
	now := time.Now().UTC().Truncate(time.Microsecond) // what DATETIME(6) keeps
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cur datasourceRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("name = ?", d.Name).Take(&cur).Error
		exists := err == nil
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("read datasource %q: %w", d.Name, err)
		}
		r := datasourceRow{Name: d.Name, Type: d.Type, Host: d.Host, Port: d.Port, DBName: d.Database,
			DBUser: d.User, ParamsJSON: params, CreatedAt: now, UpdatedAt: now}
		switch {
		case d.PasswordSealed == KeepPassword:
			r.PasswordSealed = cur.PasswordSealed
		case d.PasswordSealed != "":
			pw := d.PasswordSealed
			r.PasswordSealed = &pw
		}
		if exists {
			r.ID, r.CreatedAt = cur.ID, cur.CreatedAt
			if err := tx.Select("*").Omit("id", "created_at").Where("id = ?", cur.ID).Updates(&r).Error; err != nil {
				return fmt.Errorf("update datasource %q: %w", d.Name, err)
			}
		} else if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("datasource %q was created concurrently, retry: %w", d.Name, ErrConflict)
			}
			return fmt.Errorf("create datasource %q: %w", d.Name, err)
		}
		created = !exists
		out, err = r.model()
		return err
	})
	return out, created, err
}

// DatasourceGet returns one datasource.
func (s *Store) DatasourceGet(ctx context.Context, name string) (model.Datasource, error) {
	r, err := getDatasource(s.db.WithContext(ctx), name)
	if err != nil {
		return model.Datasource{}, err
	}
	return r.model()
}

// DatasourceList returns every datasource by name.
func (s *Store) DatasourceList(ctx context.Context) ([]model.Datasource, error) {
	var rows []datasourceRow
	if err := s.db.WithContext(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list datasources: %w", err)
	}
	out := make([]model.Datasource, len(rows))
	for i, r := range rows {
		d, err := r.model()
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// DatasourceUsers lists "project/workflow" of the workflows whose latest
// version has a task on the datasource.
func (s *Store) DatasourceUsers(ctx context.Context, name string) ([]string, error) {
	return datasourceUsers(s.db.WithContext(ctx), name)
}

// DatasourceDelete removes a datasource. It refuses with ErrConflict while
// the latest version of a workflow uses it; older versions may name it
// (an instance of one then fails its sql task, naming the datasource).
// The row is locked first, as PutWorkflow locks the datasources it names,
// so an apply that commits meanwhile is seen here.
func (s *Store) DatasourceDelete(ctx context.Context, name string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		r, err := getDatasource(tx.Clauses(clause.Locking{Strength: "UPDATE"}), name)
		if err != nil {
			return err
		}
		users, err := datasourceUsers(tx, name)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return fmt.Errorf("datasource %q is used by the latest version of %s; change or delete those first: %w",
				name, joinMax(users, 10), ErrConflict)
		}
		if err := deleteGrants(tx, datasourceGrants, r.ID); err != nil {
			return err
		}
		if err := tx.Where("id = ?", r.ID).Delete(&datasourceRow{}).Error; err != nil {
			return fmt.Errorf("delete datasource %q: %w", name, err)
		}
		return nil
	})
}

// checkDatasources refuses (ErrNotFound naming them) datasources that do
// not exist, locking those that do until tx ends, so that a concurrent
// DeleteDatasource either sees the new version or has already committed.
func checkDatasources(tx *gorm.DB, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var found []string
	if err := lockingRead(tx).Model(&datasourceRow{}).Where("name IN ?", names).Pluck("name", &found).Error; err != nil {
		return fmt.Errorf("read datasources: %w", err)
	}
	have := map[string]bool{}
	for _, n := range found {
		have[n] = true
	}
	var missing []string
	for _, n := range names {
		if !have[n] {
			missing = append(missing, fmt.Sprintf("%q", n))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("datasource %s does not exist; create it first (PUT /api/v1/datasources/{name}, beluga datasource set): %w",
			joinMax(missing, 10), ErrUnknownDatasource)
	}
	return nil
}

func datasourceUsers(db *gorm.DB, name string) ([]string, error) {
	var rows []struct {
		ProjectName  string
		WorkflowName string
	}
	latest := db.Model(&workflowDefinitionRow{}).Select("project_id, name, MAX(version) AS version").Group("project_id, name")
	err := db.Table("task_definition AS t").
		Select("DISTINCT p.name AS project_name, d.name AS workflow_name").
		Joins("JOIN workflow_definition AS d ON d.id = t.workflow_definition_id").
		Joins("JOIN (?) AS l ON l.project_id = d.project_id AND l.name = d.name AND l.version = d.version", latest).
		Joins("JOIN project AS p ON p.id = d.project_id").
		Where("t.datasource = ?", name).Order("project_name, workflow_name").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("find users of datasource %q: %w", name, err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ProjectName + "/" + r.WorkflowName
	}
	return out, nil
}

func getDatasource(db *gorm.DB, name string) (datasourceRow, error) {
	return takeNamed[datasourceRow](db, "datasource", name)
}

func joinMax(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(xs[:n], ", "), len(xs)-n)
}
