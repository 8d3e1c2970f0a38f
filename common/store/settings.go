package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm/clause"
)

// SettingInt is the integer value of setting name, or def when it is
// missing, unreadable or below 1 (a quota never fails the work it caps for
// a reason of its own: the read error is returned for the caller to log).
func (s *Store) SettingInt(ctx context.Context, name string, def int64) (int64, error) {
	var vals []string
	if err := s.read(ctx).Model(&settingRow{}).Where("name = ?", name).Pluck("value", &vals).Error; err != nil {
		return def, fmt.Errorf("read setting %s: %w", name, err)
	}
	if len(vals) == 0 {
		return def, nil
	}
	v, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || v < 1 {
		return def, nil
	}
	return v, nil
}

// Setting is one server-wide setting (the quotas): a name and its value as
// text; the reader parses and checks it.
type Setting struct {
	Name  string `gorm:"column:name;primaryKey"`
	Value string `gorm:"column:value"`
}

// settingRow is a setting as written, with the time of its change (kept
// for operators reading the table; the seeded rows carry the database's
// own timestamp text, which is why reads leave it out).
type settingRow struct {
	Name      string    `gorm:"column:name;primaryKey"`
	Value     string    `gorm:"column:value"`
	UpdatedAt time.Time `gorm:"column:updated_at"`
}

func (settingRow) TableName() string { return "setting" }

func (Setting) TableName() string { return "setting" }

// SettingList returns every stored setting by name.
func (s *Store) SettingList(ctx context.Context) ([]Setting, error) {
	var out []Setting
	if err := s.read(ctx).Select("name", "value").Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	return out, nil
}

// SettingPut stores value under name (inserted or replaced).
func (s *Store) SettingPut(ctx context.Context, name, value string) (Setting, error) {
	r := settingRow{Name: name, Value: value, UpdatedAt: now6()}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"})}).Create(&r).Error
	if err != nil {
		return Setting{}, fmt.Errorf("store setting %q: %w", name, err)
	}
	return Setting{Name: r.Name, Value: r.Value}, nil
}
