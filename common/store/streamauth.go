package store

import (
	"context"
	"fmt"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// LiveToken is a token that still authenticates, with its user's role now.
type LiveToken struct {
	TokenID int64
	UserID  int64
	Role    string
}

// TokenLive returns those of ids that still authenticate at at (not
// deleted, not expired, their user not disabled), by id: the check of
// every open event stream in one query, whatever their number.
func (s *Store) TokenLive(ctx context.Context, ids []int64, at time.Time) (map[int64]LiveToken, error) {
	out := map[int64]LiveToken{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []LiveToken
	err := s.read(ctx).Table("auth_token t").Select("t.id AS token_id, u.id AS user_id, u.role").
		Joins("JOIN app_user u ON u.id = t.user_id").
		Where("t.id IN ? AND t.expires_at > ? AND u.disabled = ?", ids, at.UTC(), false).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("check live tokens: %w", err)
	}
	for _, r := range rows {
		out[r.TokenID] = r
	}
	return out, nil
}

// ProjectViewable maps each of users to the names of the projects it has
// at least a view grant on (a user with none maps to an empty list), in
// one query.
func (s *Store) ProjectViewable(ctx context.Context, users []int64) (map[int64][]string, error) {
	out := make(map[int64][]string, len(users))
	for _, u := range users {
		out[u] = []string{}
	}
	if len(users) == 0 {
		return out, nil
	}
	var rows []struct {
		UserID int64
		Name   string
		Level  string
	}
	err := s.read(ctx).Table("project_grant g").Select("g.user_id, p.name, g.level").
		Joins("JOIN project p ON p.id = g.project_id").Where("g.user_id IN ?", users).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read grants of %d users: %w", len(users), err)
	}
	for _, r := range rows {
		if model.GrantRank(r.Level) >= model.GrantRank(model.GrantView) {
			out[r.UserID] = append(out[r.UserID], r.Name)
		}
	}
	return out, nil
}
