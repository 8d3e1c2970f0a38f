package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// ErrUnknownCalendar marks a schedule naming a calendar that is neither its
// project's nor a shared one (the caller's mistake: a 400).
var ErrUnknownCalendar = errors.New("unknown calendar")

type calendarRow struct {
	ID          int64
	ProjectID   int64
	Name        string
	Description string
	Weekend     string  // weekday numbers, comma-separated
	DaysJSON    *string `gorm:"column:days_json"`
	Version     int64
	UpdatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (calendarRow) TableName() string { return "calendar" }

// calendarDays is the days_json column.
type calendarDays struct {
	Holidays []model.CalendarDay `json:"holidays,omitempty"`
	Workdays []model.CalendarDay `json:"workdays,omitempty"`
}

func (r calendarRow) model(project string) (model.Calendar, error) {
	c := model.Calendar{ID: r.ID, ProjectID: r.ProjectID, Project: project, Name: r.Name, Description: r.Description,
		Weekend: []time.Weekday{}, Version: r.Version, UpdatedBy: r.UpdatedBy, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	for _, f := range strings.Split(r.Weekend, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 6 {
			return c, fmt.Errorf("calendar %q: weekend %q is not weekday numbers", r.Name, r.Weekend)
		}
		c.Weekend = append(c.Weekend, time.Weekday(n))
	}
	if r.DaysJSON != nil && *r.DaysJSON != "" {
		var d calendarDays
		if err := json.Unmarshal([]byte(*r.DaysJSON), &d); err != nil {
			return c, fmt.Errorf("calendar %q: days: %w", r.Name, err)
		}
		c.Holidays, c.Workdays = d.Holidays, d.Workdays
	}
	return c, nil
}

// calendarScope is the project id of a calendar's project ("" is shared:
// 0), which must exist.
func calendarScope(db *gorm.DB, project string) (int64, error) {
	if project == "" {
		return 0, nil
	}
	p, err := getProject(db, project)
	if err != nil {
		return 0, err
	}
	return p.ID, nil
}

// CalendarPut creates calendar c.Name of project c.Project ("" for a
// shared one) or replaces its days; created says which. With ifVersion
// set, a calendar edited since it was read (or created, for 0) is refused
// with ErrConflict. The caller has checked the days.
func (s *Store) CalendarPut(ctx context.Context, c model.Calendar, ifVersion *int64) (out model.Calendar, created bool, err error) {
	weekend := make([]string, len(c.Weekend))
	for i, w := range c.Weekend {
		weekend[i] = strconv.Itoa(int(w))
	}
	days := calendarDays{Holidays: c.Holidays, Workdays: c.Workdays}
	now := time.Now().UTC().Truncate(time.Microsecond)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		pid, err := calendarScope(tx, c.Project)
		if err != nil {
			return err
		}
		var cur calendarRow
		err = lockingRead(tx).Where("project_id = ? AND name = ?", pid, c.Name).Take(&cur).Error
		exists := err == nil
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("read calendar %q: %w", c.Name, err)
		}
		if ifVersion != nil && *ifVersion != cur.Version { // cur is zero when there is none
			return fmt.Errorf("calendar %q is at version %d (edited at %s by %s), not %d as read: read it again: %w",
				c.Name, cur.Version, cur.UpdatedAt.UTC().Format(time.RFC3339), cur.UpdatedBy, *ifVersion, ErrConflict)
		}
		r := calendarRow{ProjectID: pid, Name: c.Name, Description: c.Description, Weekend: strings.Join(weekend, ","),
			DaysJSON: jsonText(days, len(days.Holidays)+len(days.Workdays)), Version: 1, UpdatedBy: c.UpdatedBy, CreatedAt: now, UpdatedAt: now}
		if exists {
			r.ID, r.CreatedAt, r.Version = cur.ID, cur.CreatedAt, cur.Version+1
			if err := tx.Select("*").Omit("id", "created_at").Where("id = ?", cur.ID).Updates(&r).Error; err != nil {
				return fmt.Errorf("update calendar %q: %w", c.Name, err)
			}
		} else if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("calendar %q was created concurrently, retry: %w", c.Name, ErrConflict)
			}
			return fmt.Errorf("create calendar %q: %w", c.Name, err)
		}
		created = !exists
		out, err = r.model(c.Project)
		return err
	})
	return out, created, err
}

// CalendarGet returns calendar name of project ("" for a shared one).
func (s *Store) CalendarGet(ctx context.Context, project, name string) (model.Calendar, error) {
	db := s.db.WithContext(ctx)
	pid, err := calendarScope(db, project)
	if err != nil {
		return model.Calendar{}, err
	}
	var r calendarRow
	if err := db.Where("project_id = ? AND name = ?", pid, name).Take(&r).Error; err != nil {
		return model.Calendar{}, notFound(err, fmt.Sprintf("calendar %q", name))
	}
	return r.model(project)
}

// CalendarFor returns the calendar a schedule of project naming name
// uses: the project's own, else the shared one; ErrNotFound when neither
// exists.
func (s *Store) CalendarFor(ctx context.Context, project, name string) (model.Calendar, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return model.Calendar{}, err
	}
	r, err := calendarFor(db, p.ID, name)
	if err != nil {
		return model.Calendar{}, err
	}
	if r.ProjectID == 0 {
		project = ""
	}
	return r.model(project)
}

func calendarFor(db *gorm.DB, projectID int64, name string) (calendarRow, error) {
	var rows []calendarRow
	if err := db.Where("name = ? AND project_id IN ?", name, []int64{projectID, 0}).Find(&rows).Error; err != nil {
		return calendarRow{}, fmt.Errorf("read calendar %q: %w", name, err)
	}
	for _, r := range rows { // the project's own comes first
		if r.ProjectID == projectID {
			return r, nil
		}
	}
	if len(rows) == 0 {
		return calendarRow{}, fmt.Errorf("calendar %q: %w", name, ErrNotFound)
	}
	return rows[0], nil
}

// CalendarList returns the calendars of project ("" for the shared ones)
// by name.
func (s *Store) CalendarList(ctx context.Context, project string) ([]model.Calendar, error) {
	db := s.db.WithContext(ctx)
	pid, err := calendarScope(db, project)
	if err != nil {
		return nil, err
	}
	var rows []calendarRow
	if err := db.Where("project_id = ?", pid).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list calendars: %w", err)
	}
	out := make([]model.Calendar, 0, len(rows))
	for _, r := range rows {
		c, err := r.model(project)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// CalendarUsers lists "project/workflow" of the schedules that use the
// calendar: for a project's, its schedules naming it; for a shared one,
// the schedules naming it in projects without their own of that name.
func (s *Store) CalendarUsers(ctx context.Context, project, name string) ([]string, error) {
	db := s.db.WithContext(ctx)
	pid, err := calendarScope(db, project)
	if err != nil {
		return nil, err
	}
	return calendarUsers(db, pid, name)
}

func calendarUsers(db *gorm.DB, pid int64, name string) ([]string, error) {
	q := db.Model(&scheduleRow{}).Where("calendar = ?", name)
	if pid != 0 {
		q = q.Where("project_id = ?", pid)
	} else {
		q = q.Where("project_id NOT IN (?)", db.Model(&calendarRow{}).Select("project_id").Where("name = ? AND project_id <> 0", name))
	}
	var rows []scheduleRow
	if err := q.Order("project_name, workflow_name").Select("project_name", "workflow_name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("schedules on calendar %q: %w", name, err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ProjectName + "/" + r.WorkflowName
	}
	return out, nil
}

// CalendarDelete removes a calendar. It refuses with ErrConflict, naming
// them, while schedules use it. The row is locked first, as a schedule's
// write locks the calendar it names, so one committing meanwhile is seen.
func (s *Store) CalendarDelete(ctx context.Context, project, name string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		pid, err := calendarScope(tx, project)
		if err != nil {
			return err
		}
		var r calendarRow
		if err := lockingRead(tx).Where("project_id = ? AND name = ?", pid, name).Take(&r).Error; err != nil {
			return notFound(err, fmt.Sprintf("calendar %q", name))
		}
		users, err := calendarUsers(tx, pid, name)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return fmt.Errorf("calendar %q is used by the schedules of %s: %w", name, strings.Join(users, ", "), ErrConflict)
		}
		if err := tx.Delete(&calendarRow{}, r.ID).Error; err != nil {
			return fmt.Errorf("delete calendar %q: %w", name, err)
		}
		return nil
	})
}

// ScheduleCalendar returns the calendar schedule id fires by, for its
// runs' business dates; ok is false when the schedule names none or is
// gone (its runs then count without one).
func (s *Store) ScheduleCalendar(ctx context.Context, scheduleID int64) (c model.Calendar, ok bool, err error) {
	db := s.db.WithContext(ctx)
	var sc scheduleRow
	if err := db.Select("project_id", "project_name", "calendar").Where("id = ?", scheduleID).Take(&sc).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return c, false, nil
	} else if err != nil {
		return c, false, fmt.Errorf("read schedule %d: %w", scheduleID, err)
	}
	if sc.Calendar == "" {
		return c, false, nil
	}
	r, err := calendarFor(db, sc.ProjectID, sc.Calendar)
	if errors.Is(err, ErrNotFound) {
		return c, false, nil
	} else if err != nil {
		return c, false, err
	}
	project := sc.ProjectName
	if r.ProjectID == 0 {
		project = ""
	}
	c, err = r.model(project)
	return c, err == nil, err
}

// ScheduleSetNext moves the next fire time of schedule sc, as read, to
// next (nil: none), when its calendar changed under it. Like a fire it
// applies only while the schedule is at the revision read and enabled
// (else ErrScheduleMoved), and moves the revision on, so a fire planned
// from the old row is refused and replanned.
func (s *Store) ScheduleSetNext(ctx context.Context, sc model.Schedule, next *time.Time) error {
	res := s.db.WithContext(ctx).Model(&scheduleRow{}).Where("id = ? AND revision = ? AND enabled = ?", sc.ID, sc.Revision, true).
		UpdateColumns(map[string]any{"next_fire_time": utc(next), "revision": sc.Revision + 1})
	if res.Error != nil {
		return fmt.Errorf("move schedule %d's next fire time: %w", sc.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("schedule %d: %w", sc.ID, ErrScheduleMoved)
	}
	return nil
}
