package store

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// NamePage asks for one page of a list in name order: at most Limit names
// after After ("": from the first) that start with Prefix ("": any). A
// page is read from an index from its key on (keyset), so page 200 costs
// what page 1 does and nothing is counted.
type NamePage struct {
	After  string
	Prefix string
	Limit  int
}

// MaxPage bounds a page of any list.
const MaxPage = 1000

func (p NamePage) limit() int {
	switch {
	case p.Limit <= 0:
		return 50
	case p.Limit > MaxPage:
		return MaxPage
	}
	return p.Limit
}

// prefixed keeps the rows whose col starts with prefix, as a range the
// column's index serves (a LIKE would not on SQLite). Names are ASCII
// letters, digits and "_-.", all before "~".
func prefixed(q *gorm.DB, col, prefix string) *gorm.DB {
	if prefix == "" {
		return q
	}
	return q.Where(col+" >= ? AND "+col+" < ?", prefix, prefix+"~")
}

// after keeps the rows whose col is after the cursor key and starts with
// prefix, with one lower bound: given two (the cursor's and the
// prefix's), SQLite seeks to the cursor's and reads every name up to the
// prefix's range (an empty first page of a prefix read all the names
// before it: 16.6 ms of CPU at 100,000 workflows, BenchmarkWorkflowsPage).
func after(q *gorm.DB, col, key, prefix string) *gorm.DB {
	if prefix == "" || key >= prefix {
		return prefixedBelow(q.Where(col+" > ?", key), col, prefix)
	}
	return prefixed(q, col, prefix)
}

// prefixedBelow is the upper bound of prefixed alone.
func prefixedBelow(q *gorm.DB, col, prefix string) *gorm.DB {
	if prefix == "" {
		return q
	}
	return q.Where(col+" < ?", prefix+"~")
}

// WorkflowPage returns one page of the latest versions of a project's
// workflows by name, and whether more follow.
func (s *Store) WorkflowPage(ctx context.Context, project string, pg NamePage) ([]model.WorkflowDefinition, bool, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return nil, false, err
	}
	n := pg.limit()
	// The names and their latest versions first, from uk_wfdef_version
	// (project_id, name, version): the group stops after n+1 names.
	latest := after(db.Model(&workflowDefinitionRow{}).Select("name, MAX(version) AS version").
		Where("project_id = ?", p.ID), "name", pg.After, pg.Prefix).Group("name").Order("name").Limit(n + 1)
	var keys []struct {
		Name    string
		Version int
	}
	if err := latest.Find(&keys).Error; err != nil {
		return nil, false, fmt.Errorf("list workflows of %q: %w", project, err)
	}
	more := len(keys) > n
	if more {
		keys = keys[:n]
	}
	if len(keys) == 0 {
		return nil, false, nil
	}
	// The keys' names and versions as two IN lists, which SQLite serves
	// from the index, key by key, and the rows of other pairs dropped
	// here: a "(name, version) IN" list or an OR of the pairs is planned
	// as a read of the whole project when the tables have no statistics.
	want := make(map[string]int, len(keys))
	names := make([]string, len(keys))
	var versions []int
	for i, k := range keys {
		want[k.Name], names[i] = k.Version, k.Name
		if !slices.Contains(versions, k.Version) {
			versions = append(versions, k.Version)
		}
	}
	var found []workflowDefinitionRow
	if err := db.Omit("spec_json").Where("project_id = ? AND name IN ? AND version IN ?", p.ID, names, versions).
		Order("name").Find(&found).Error; err != nil {
		return nil, false, fmt.Errorf("list workflows of %q: %w", project, err)
	}
	rows := found[:0]
	for _, r := range found {
		if want[r.Name] == r.Version {
			rows = append(rows, r)
		}
	}
	return defs(rows, p.Name), more, nil
}

// ScheduleName is a schedule's place in the list order: its project's
// and workflow's names.
type ScheduleName struct {
	Project  string
	Workflow string
}

// SchedulePage returns one page of the schedules of a project ("": all)
// by project and workflow name, after the schedule from (zero: from the
// first), whose workflow names start with prefix, and whether more follow.
func (s *Store) SchedulePage(ctx context.Context, project string, from ScheduleName, prefix string, limit int) ([]model.Schedule, bool, error) {
	n := NamePage{Limit: limit}.limit()
	q := s.db.WithContext(ctx)
	switch {
	case project != "":
		q = after(q.Where("project_name = ?", project), "workflow_name", from.Workflow, prefix)
	case from != (ScheduleName{}):
		// A row value: SQLite seeks the index to it (an OR of the two
		// columns would scan the cursor's project from its start).
		q = prefixed(q.Where("(project_name, workflow_name) > (?, ?)", from.Project, from.Workflow), "workflow_name", prefix)
	default:
		q = prefixed(q, "workflow_name", prefix)
	}
	var rows []scheduleRow
	if err := q.Order("project_name, workflow_name").Limit(n + 1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("list schedules: %w", err)
	}
	more := len(rows) > n
	if more {
		rows = rows[:n]
	}
	out := make([]model.Schedule, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, more, nil
}
