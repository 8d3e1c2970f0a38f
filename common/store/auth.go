package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
)

type userRow struct {
	ID           int64
	Name         string
	Role         string
	PasswordHash string
	Disabled     bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (userRow) TableName() string { return "app_user" }

func (r userRow) model() model.User {
	return model.User{ID: r.ID, Name: r.Name, Role: r.Role, PasswordHash: r.PasswordHash, Disabled: r.Disabled,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

type tokenRow struct {
	ID         int64
	UserID     int64
	Kind       string
	Name       string
	TokenHash  string
	ExpiresAt  time.Time
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

func (tokenRow) TableName() string { return "auth_token" }

func (r tokenRow) model() model.Token {
	t := model.Token{ID: r.ID, UserID: r.UserID, Kind: r.Kind, Name: r.Name, Hash: r.TokenHash,
		ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.CreatedAt.UTC()}
	if r.LastUsedAt != nil {
		u := r.LastUsedAt.UTC()
		t.LastUsedAt = &u
	}
	return t
}

type grantRow struct {
	ProjectID int64
	UserID    int64
	Level     string
	GrantedBy string
	CreatedAt time.Time
}

func (grantRow) TableName() string { return "project_grant" }

// AuditEntry is one row of the audit trail.
type AuditEntry struct {
	ID       int64     `gorm:"column:id"`
	At       time.Time `gorm:"column:at"`
	User     string    `gorm:"column:username"`
	Action   string    `gorm:"column:action"`
	Resource string    `gorm:"column:resource"`
	Address  string    `gorm:"column:address"`
	Status   int       `gorm:"column:status"`
	Outcome  string    `gorm:"column:outcome"`
}

func (AuditEntry) TableName() string { return "audit_log" }

// HashToken is how a token's secret is stored: tokens are long random
// strings, so a plain SHA-256 cannot be reversed by guessing.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func now6() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// UserCount is how many users exist (0: bootstrap the admin).
func (s *Store) UserCount(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&userRow{}).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// NormalUserName is the one form of a user name: stored so, and looked up
// so. MySQL's default collation ignores case and trailing spaces, SQLite's
// does not: names are trimmed and lower-cased once, here, and compared
// exactly (GetUser), so "Admin", "ADMIN " and "admin" are one user on every
// database, and one key for the login limiter.
func NormalUserName(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// UserCreate inserts a user under its normal name (NormalUserName);
// ErrConflict when the name is taken.
func (s *Store) UserCreate(ctx context.Context, name, role, passwordHash string) (model.User, error) {
	name = NormalUserName(name)
	n := now6()
	r := userRow{Name: name, Role: role, PasswordHash: passwordHash, CreatedAt: n, UpdatedAt: n}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		if isUniqueViolation(err) {
			return model.User{}, fmt.Errorf("user %q exists: %w", name, ErrConflict)
		}
		return model.User{}, fmt.Errorf("create user %q: %w", name, err)
	}
	return r.model(), nil
}

// UserGet returns the user by name, normalised (NormalUserName). The row
// must hold the name exactly: a collation that ignores case, trailing
// spaces or accents does not make another name match.
func (s *Store) UserGet(ctx context.Context, name string) (model.User, error) {
	name = NormalUserName(name)
	r, err := takeNamed[userRow](s.db.WithContext(ctx), "user", name)
	if err != nil {
		return model.User{}, err
	}
	if r.Name != name {
		return model.User{}, fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	return r.model(), nil
}

// UserList returns every user by name.
func (s *Store) UserList(ctx context.Context) ([]model.User, error) {
	return listNamed(s.db.WithContext(ctx), "users", userRow.model)
}

// UserUpdate applies ch to the user. A new password or disabling the user
// deletes every session and token of the user in the same transaction, so
// the next call with any of them is refused.
func (s *Store) UserUpdate(ctx context.Context, name string, ch model.UserChange) (out model.User, revoked int64, err error) {
	name = NormalUserName(name)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var r userRow
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("name = ?", name).Take(&r).Error; err != nil {
			return notFound(err, fmt.Sprintf("user %q", name))
		}
		if r.Name != name {
			return fmt.Errorf("user %q: %w", name, ErrNotFound)
		}
		up := map[string]any{"updated_at": now6()}
		if ch.Role != nil {
			up["role"], r.Role = *ch.Role, *ch.Role
		}
		if ch.PasswordHash != nil {
			up["password_hash"], r.PasswordHash = *ch.PasswordHash, *ch.PasswordHash
		}
		if ch.Disabled != nil {
			up["disabled"], r.Disabled = *ch.Disabled, *ch.Disabled
		}
		if err := tx.Model(&userRow{}).Where("id = ?", r.ID).Updates(up).Error; err != nil {
			return fmt.Errorf("update user %q: %w", name, err)
		}
		if ch.PasswordHash != nil || (ch.Disabled != nil && *ch.Disabled) {
			res := tx.Where("user_id = ?", r.ID).Delete(&tokenRow{})
			if res.Error != nil {
				return fmt.Errorf("revoke tokens of user %q: %w", name, res.Error)
			}
			revoked = res.RowsAffected
		}
		out = r.model()
		return nil
	})
	return out, revoked, err
}

// TokenCreate stores a token by its hash.
func (s *Store) TokenCreate(ctx context.Context, t model.Token) (model.Token, error) {
	r := tokenRow{UserID: t.UserID, Kind: t.Kind, Name: t.Name, TokenHash: t.Hash,
		ExpiresAt: t.ExpiresAt.UTC().Truncate(time.Microsecond), CreatedAt: now6()}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return model.Token{}, fmt.Errorf("create token: %w", err)
	}
	return r.model(), nil
}

// TokenAuthenticate finds the live token with hash and its user: ErrNotFound
// when there is none, it expired, or its user is disabled.
func (s *Store) TokenAuthenticate(ctx context.Context, hash string, at time.Time) (model.User, model.Token, error) {
	// One query per request, the token and its user together, on the
	// readers: a request is not held up by a run's writes.
	var row struct {
		TokenID    int64
		Kind       string
		Name       string
		ExpiresAt  time.Time
		CreatedAt  time.Time
		LastUsedAt *time.Time
		UserID     int64
		UserName   string
		Role       string
	}
	err := s.read(ctx).Table("auth_token t").Select("t.id AS token_id, t.kind, t.name, t.expires_at, t.created_at, t.last_used_at, "+
		"u.id AS user_id, u.name AS user_name, u.role").
		Joins("JOIN app_user u ON u.id = t.user_id").
		Where("t.token_hash = ? AND t.expires_at > ? AND u.disabled = ?", hash, at.UTC(), false).Limit(1).Scan(&row).Error
	if err != nil {
		return model.User{}, model.Token{}, fmt.Errorf("authenticate: %w", err)
	}
	if row.TokenID == 0 {
		return model.User{}, model.Token{}, fmt.Errorf("token: %w", ErrNotFound)
	}
	// Last use is a hint for the token list: once a minute is enough.
	if row.LastUsedAt == nil || at.Sub(*row.LastUsedAt) > time.Minute {
		lu := at.UTC().Truncate(time.Microsecond)
		if err := s.db.WithContext(ctx).Model(&tokenRow{}).Where("id = ?", row.TokenID).Update("last_used_at", lu).Error; err != nil {
			s.log.Warn("record token use failed")
		}
	}
	u := model.User{ID: row.UserID, Name: row.UserName, Role: row.Role}
	t := model.Token{ID: row.TokenID, UserID: row.UserID, Kind: row.Kind, Name: row.Name, Hash: hash,
		ExpiresAt: row.ExpiresAt.UTC(), CreatedAt: row.CreatedAt.UTC(), LastUsedAt: row.LastUsedAt}
	return u, t, nil
}

// TokenList returns a user's tokens of kind ("": all), newest first.
func (s *Store) TokenList(ctx context.Context, userID int64, kind string) ([]model.Token, error) {
	q := s.db.WithContext(ctx).Where("user_id = ?", userID)
	if kind != "" {
		q = q.Where("kind = ?", kind)
	}
	var rows []tokenRow
	if err := q.Order("id DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]model.Token, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// TokenDelete deletes the user's token id; ErrNotFound when the user has
// no such token.
func (s *Store) TokenDelete(ctx context.Context, userID, id int64) error {
	res := s.db.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Delete(&tokenRow{})
	if res.Error != nil {
		return fmt.Errorf("delete token %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("token %d: %w", id, ErrNotFound)
	}
	return nil
}

// TokenDeleteByHash deletes the token with hash (a logout); none is fine.
func (s *Store) TokenDeleteByHash(ctx context.Context, hash string) error {
	if err := s.db.WithContext(ctx).Where("token_hash = ?", hash).Delete(&tokenRow{}).Error; err != nil {
		return fmt.Errorf("delete token: %w", err)
	}
	return nil
}

// GrantPut sets user's level on project (level "": removes the grant).
func (s *Store) GrantPut(ctx context.Context, project, user, level, by string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, project)
		if err != nil {
			return err
		}
		var u userRow
		user = NormalUserName(user)
		if err := tx.Where("name = ?", user).Take(&u).Error; err != nil {
			return notFound(err, fmt.Sprintf("user %q", user))
		}
		if u.Name != user {
			return fmt.Errorf("user %q: %w", user, ErrNotFound)
		}
		if err := tx.Where("project_id = ? AND user_id = ?", p.ID, u.ID).Delete(&grantRow{}).Error; err != nil {
			return fmt.Errorf("replace grant: %w", err)
		}
		if level == "" {
			return nil
		}
		if err := tx.Create(&grantRow{ProjectID: p.ID, UserID: u.ID, Level: level, GrantedBy: by, CreatedAt: now6()}).Error; err != nil {
			return fmt.Errorf("grant %s on %q to %q: %w", level, project, user, err)
		}
		return nil
	})
}

// GrantList lists the grants of a project (project != "") or of a user
// (userID != 0), or both.
func (s *Store) GrantList(ctx context.Context, project string, userID int64) ([]model.Grant, error) {
	q := s.db.WithContext(ctx).Table("project_grant g").
		Select("g.project_id, p.name AS project, g.user_id, u.name AS user, g.level, g.granted_by, g.created_at").
		Joins("JOIN project p ON p.id = g.project_id").Joins("JOIN app_user u ON u.id = g.user_id")
	if project != "" {
		if _, err := getProject(s.db.WithContext(ctx), project); err != nil {
			return nil, err
		}
		q = q.Where("p.name = ?", project)
	}
	if userID != 0 {
		q = q.Where("g.user_id = ?", userID)
	}
	var out []model.Grant
	if err := q.Order("p.name, u.name").Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC()
	}
	return out, nil
}

// GrantLevels maps project id to user's level, for the projects user
// has a grant on.
func (s *Store) GrantLevels(ctx context.Context, userID int64) (map[int64]string, error) {
	var rows []grantRow
	if err := s.db.WithContext(ctx).Where("user_id = ?", userID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	out := make(map[int64]string, len(rows))
	for _, r := range rows {
		out[r.ProjectID] = r.Level
	}
	return out, nil
}

// ProjectCreateOwned creates a project with its tenant and makes owner its
// owner, in one transaction.
func (s *Store) ProjectCreateOwned(ctx context.Context, name, description, tenant string, ownerID int64, ownerName string) (p model.Project, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		r := projectRow{Name: name, Description: description, Tenant: tenant, CreatedAt: time.Now().UTC()}
		if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("project %q exists: %w", name, ErrConflict)
			}
			return fmt.Errorf("create project %q: %w", name, err)
		}
		p = r.model()
		return tx.Create(&grantRow{ProjectID: r.ID, UserID: ownerID, Level: model.GrantOwner, GrantedBy: ownerName, CreatedAt: now6()}).Error
	})
	return p, err
}

// Audit appends one entry to the audit trail.
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	e.ID = 0
	if e.At.IsZero() {
		e.At = now6()
	}
	if err := s.db.WithContext(ctx).Create(&e).Error; err != nil {
		return fmt.Errorf("write audit entry: %w", err)
	}
	return nil
}

// AuditFilter selects audit entries; zero fields select all.
type AuditFilter struct {
	User     string
	Action   string // exact, e.g. "POST /api/v1/instances/{id}/actions"
	Resource string // prefix
	Since    time.Time
	Until    time.Time
	BeforeID int64 // paging: entries older than this id
	Limit    int
}

// AuditList returns entries newest first.
func (s *Store) AuditList(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	q := s.db.WithContext(ctx).Model(&AuditEntry{})
	if f.User != "" {
		q = q.Where("username = ?", f.User)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if f.Resource != "" {
		// A prefix as a range, with no LIKE wildcards to escape.
		q = q.Where("resource >= ? AND resource < ?", f.Resource, f.Resource+"\U0010FFFF")
	}
	if !f.Since.IsZero() {
		q = q.Where("at >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		q = q.Where("at < ?", f.Until.UTC())
	}
	if f.BeforeID > 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	var out []AuditEntry
	if err := q.Order("id DESC").Limit(f.Limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	for i := range out {
		out[i].At = out[i].At.UTC()
	}
	return out, nil
}

// IsNotFound is errors.Is(err, ErrNotFound).
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
