package model

import (
	"math"
	"time"
)

// Datasource is a stored datasource. The password is only ever held
// sealed (common/secret); the store neither seals nor opens it.
type Datasource struct {
	ID             int64
	Name           string
	Type           string
	Host           string
	Port           int
	Database       string
	User           string
	PasswordSealed string // "" when there is no password
	Params         map[string]string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// TaskGroup is a named concurrency limit shared across workflows and
// projects: at most Capacity task instances of the group are dispatched or
// running at a time.
type TaskGroup struct {
	ID          int64
	Name        string
	Capacity    int
	Description string
	CreatedAt   time.Time
	// InUse counts the group's task instances now dispatched or running.
	// It may exceed Capacity after the group was made smaller.
	InUse int
}

// MaxTaskGroupCapacity is the largest capacity (the column is an INT).
const MaxTaskGroupCapacity = math.MaxInt32
