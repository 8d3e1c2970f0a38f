package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TaskFilter selects task instances across runs, for the operators' list:
// each field that is set narrows it.
type TaskFilter struct {
	Project, Workflow string
	State             model.TaskState
	Host              string
	Name              string    // the task's name contains this
	From, To          time.Time // started at or after From, before To (zero: open)
	Latest            bool      // only latest attempts (not superseded)
	// OnlyProjects, when not nil, keeps the tasks of runs of these project
	// ids (the ones the caller may view); an empty list keeps none.
	OnlyProjects []int64
	Limit        int // default 50, at most 1000
	Offset       int
}

// ListedTask is a task instance with the run it belongs to.
type ListedTask struct {
	model.TaskInstance
	Project, Workflow string
}

// likeEscaper makes a string match itself in a LIKE ... ESCAPE '!'.
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// TaskFind returns the task instances f selects, newest first,
// and how many there are.
func (s *Store) TaskFind(ctx context.Context, f TaskFilter) ([]ListedTask, int64, error) {
	var where []string
	var args []any
	add := func(cond string, v any) { where = append(where, cond); args = append(args, v) }
	if f.Project != "" {
		add("wi.project_name = ?", f.Project)
	}
	if f.Workflow != "" {
		add("wi.workflow_name = ?", f.Workflow)
	}
	if f.State != "" {
		add("ti.state = ?", string(f.State))
	}
	if f.Host != "" {
		add("ti.host = ?", f.Host)
	}
	if f.Name != "" {
		add("ti.name LIKE ? ESCAPE '!'", "%"+likeEscaper.Replace(f.Name)+"%")
	}
	if !f.From.IsZero() {
		add("ti.start_time >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		add("ti.start_time < ?", f.To.UTC())
	}
	if f.Latest {
		add("ti.superseded = ?", false)
	}
	if f.OnlyProjects != nil {
		add("wi.project_id IN ?", append(f.OnlyProjects, 0)) // 0: no project, so the list is never empty
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	from := ` FROM task_instance ti JOIN workflow_instance wi ON wi.id = ti.workflow_instance_id` + cond
	var total int64
	if err := s.read(ctx).Raw(`SELECT COUNT(*)`+from, args...).Scan(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count task instances: %w", err)
	}
	f.Limit = min(max(f.Limit, 0), 1000)
	if f.Limit == 0 {
		f.Limit = 50
	}
	cols := "ti." + strings.ReplaceAll(taskCols, ", ", ", ti.")
	rows, err := s.read(ctx).Raw(`SELECT `+cols+`, wi.project_name, wi.workflow_name`+from+` ORDER BY ti.id DESC LIMIT ? OFFSET ?`,
		append(args, f.Limit, f.Offset)...).Rows()
	if err != nil {
		return nil, 0, fmt.Errorf("list task instances: %w", err)
	}
	defer rows.Close()
	var out []ListedTask
	for rows.Next() {
		var r taskInstanceRow
		var lt ListedTask
		if err := rows.Scan(r.fields(&lt.Project, &lt.Workflow)...); err != nil {
			return nil, 0, fmt.Errorf("list task instances: %w", err)
		}
		lt.TaskInstance = r.model()
		out = append(out, lt)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list task instances: %w", err)
	}
	countRows(ctx, len(out))
	return out, total, nil
}
