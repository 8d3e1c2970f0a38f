package model

import "time"

// User roles.
const (
	RoleAdmin = "admin"
	RoleUser  = "user"
)

// Token kinds: a session comes from a login (the UI's cookie, or the token
// POST /login answers); a personal access token is made by its user for
// scripts and the CLI.
const (
	TokenSession  = "session"
	TokenPersonal = "personal"
)

// Grant levels on a project, each implying the ones before it (and
// GrantApprove, between edit and owner: edit, and review change requests).
const (
	GrantView    = "view"
	GrantOperate = "operate"
	GrantEdit    = "edit"
	GrantOwner   = "owner" // approve, and may grant others
)

// GrantRank orders levels (0: none or unknown).
func GrantRank(level string) int {
	switch level {
	case GrantView:
		return 1
	case GrantOperate:
		return 2
	case GrantEdit:
		return 3
	case GrantApprove:
		return 4
	case GrantOwner:
		return 5
	}
	return 0
}

// User is a stored user. PasswordHash is a bcrypt hash; the store neither
// makes nor checks it.
type User struct {
	ID           int64
	Name         string
	Role         string
	PasswordHash string
	Disabled     bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Token is a stored token, without its secret (only the hash is kept).
type Token struct {
	ID         int64
	UserID     int64
	Kind       string
	Name       string
	Hash       string
	ExpiresAt  time.Time
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// Grant is one user's level on one project.
type Grant struct {
	ProjectID int64
	Project   string
	UserID    int64
	User      string
	Level     string
	GrantedBy string
	CreatedAt time.Time
}

// UserChange is what UpdateUser changes (nil: kept).
type UserChange struct {
	Role         *string
	PasswordHash *string
	Disabled     *bool
}

// AuthorUnknown is applied_by of the versions applied before their author
// was recorded (sql 0029): a name no user can have, so it holds no grant.
const AuthorUnknown = "(before 0029)"

// Author is who applied a workflow version, as its run-time checks see
// them: Server for a version the server's own code applied (no user).
type Author struct {
	Name   string
	Server bool
}
