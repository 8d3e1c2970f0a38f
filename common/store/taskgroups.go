package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
)

type taskGroupRow struct {
	ID          int64
	Name        string
	Capacity    int
	Description string
	CreatedAt   time.Time
}

func (taskGroupRow) TableName() string { return "task_group" }

func (r taskGroupRow) model(inUse int) model.TaskGroup {
	return model.TaskGroup{ID: r.ID, Name: r.Name, Capacity: r.Capacity, Description: r.Description,
		CreatedAt: r.CreatedAt.UTC(), InUse: inUse}
}

// groupBusyStates are the task states that hold a slot of their group.
func groupBusyStates() []string {
	return []string{string(model.TaskDispatched), string(model.TaskRunning)}
}

func checkCapacity(name string, capacity int) error {
	if capacity < 1 || capacity > model.MaxTaskGroupCapacity {
		return fmt.Errorf("task group %q: capacity must be from 1 to %d, got %d", name, model.MaxTaskGroupCapacity, capacity)
	}
	return nil
}

// TaskGroupCreate stores a new group; ErrConflict when the name is taken.
func (s *Store) TaskGroupCreate(ctx context.Context, name string, capacity int, description string) (model.TaskGroup, error) {
	if err := checkCapacity(name, capacity); err != nil {
		return model.TaskGroup{}, err
	}
	r := taskGroupRow{Name: name, Capacity: capacity, Description: description, CreatedAt: time.Now().UTC()}
	db := s.db.WithContext(ctx)
	if err := db.Create(&r).Error; err != nil {
		if isUniqueViolation(err) {
			return model.TaskGroup{}, fmt.Errorf("task group %q exists: %w", name, ErrConflict)
		}
		return model.TaskGroup{}, fmt.Errorf("create task group %q: %w", name, err)
	}
	// Tasks may name a group before it exists (or after it was deleted).
	n, err := groupInUse(db, name)
	if err != nil {
		return model.TaskGroup{}, err
	}
	return r.model(n), nil
}

// TaskGroupGet returns a group with its use.
func (s *Store) TaskGroupGet(ctx context.Context, name string) (model.TaskGroup, error) {
	db := s.db.WithContext(ctx)
	r, err := getTaskGroup(db, name)
	if err != nil {
		return model.TaskGroup{}, err
	}
	n, err := groupInUse(db, name)
	if err != nil {
		return model.TaskGroup{}, err
	}
	return r.model(n), nil
}

// TaskGroupList returns every group by name, with its use.
func (s *Store) TaskGroupList(ctx context.Context) ([]model.TaskGroup, error) {
	db := s.db.WithContext(ctx)
	var rows []taskGroupRow
	if err := db.Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list task groups: %w", err)
	}
	var counts []struct {
		TaskGroup string
		N         int
	}
	if err := db.Model(&taskInstanceRow{}).Select("task_group, COUNT(*) AS n").
		Where("task_group <> '' AND state IN ?", groupBusyStates()).Group("task_group").Scan(&counts).Error; err != nil {
		return nil, fmt.Errorf("count task group use: %w", err)
	}
	use := make(map[string]int, len(counts))
	for _, c := range counts {
		use[c.TaskGroup] = c.N
	}
	out := make([]model.TaskGroup, len(rows))
	for i, r := range rows {
		out[i] = r.model(use[r.Name])
	}
	return out, nil
}

// TaskGroupResize sets a group's capacity. Tasks already running above a
// smaller capacity finish; no new one starts until the group has room.
func (s *Store) TaskGroupResize(ctx context.Context, name string, capacity int) (model.TaskGroup, error) {
	if err := checkCapacity(name, capacity); err != nil {
		return model.TaskGroup{}, err
	}
	var out model.TaskGroup
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Read first: MySQL reports 0 rows affected when the capacity
		// does not change, which must not look like a missing group.
		r, err := getTaskGroup(tx.Clauses(clause.Locking{Strength: "UPDATE"}), name)
		if err != nil {
			return err
		}
		if err := tx.Model(&taskGroupRow{}).Where("id = ?", r.ID).Update("capacity", capacity).Error; err != nil {
			return fmt.Errorf("resize task group %q: %w", name, err)
		}
		n, err := groupInUse(tx, name)
		if err != nil {
			return err
		}
		r.Capacity = capacity
		out = r.model(n)
		return nil
	})
	return out, err
}

// TaskGroupDelete removes a group. It refuses with ErrConflict while a task
// of the group is dispatched or running. Tasks of the group still waiting
// keep waiting until a group of that name exists again.
func (s *Store) TaskGroupDelete(ctx context.Context, name string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		r, err := getTaskGroup(tx.Clauses(clause.Locking{Strength: "UPDATE"}), name)
		if err != nil {
			return err
		}
		n, err := groupInUse(tx, name)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("task group %q has %d task(s) dispatched or running; delete it when they have finished: %w", name, n, ErrConflict)
		}
		if err := deleteGrants(tx, taskGroupGrants, r.ID); err != nil {
			return err
		}
		if err := tx.Where("id = ?", r.ID).Delete(&taskGroupRow{}).Error; err != nil {
			return fmt.Errorf("delete task group %q: %w", name, err)
		}
		return nil
	})
}

func getTaskGroup(db *gorm.DB, name string) (taskGroupRow, error) {
	return takeNamed[taskGroupRow](db, "task group", name)
}

func groupInUse(db *gorm.DB, name string) (int, error) {
	var n int64
	if err := db.Model(&taskInstanceRow{}).Where("task_group = ? AND state IN ?", name, groupBusyStates()).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count use of task group %q: %w", name, err)
	}
	return int(n), nil
}
