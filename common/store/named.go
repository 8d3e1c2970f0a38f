package store

import (
	"fmt"

	"gorm.io/gorm"
)

// Projects, users, alert channels, subscriptions, datasources and task
// groups are rows addressed by a unique name; they are read by name, listed
// by name and report a missing name the same way, through these helpers.

// takeNamed reads the row named name; what names the kind in errors
// ("alert channel"), wrapping ErrNotFound when there is none.
func takeNamed[R any](db *gorm.DB, what, name string) (R, error) {
	var r R
	if err := db.Where("name = ?", name).Take(&r).Error; err != nil {
		return r, notFound(err, fmt.Sprintf("%s %q", what, name))
	}
	return r, nil
}

// listNamed reads every row ordered by name and turns each into its model;
// plural names the kind in errors ("alert channels").
func listNamed[R, M any](db *gorm.DB, plural string, toModel func(R) M) ([]M, error) {
	var rows []R
	if err := db.Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list %s: %w", plural, err)
	}
	out := make([]M, len(rows))
	for i, r := range rows {
		out[i] = toModel(r)
	}
	return out, nil
}

// sealedToStore is the sealed secret a put writes: the stored one when
// given is KeepSecret, none when given is empty, else given.
func sealedToStore(given string, stored *string) *string {
	switch given {
	case KeepSecret:
		return stored
	case "":
		return nil
	}
	return &given
}
