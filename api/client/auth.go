package client

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/beluga-scheduler/beluga/api"
)

// Login logs in and returns a session token; use it with WithToken.
func (c *Client) Login(ctx context.Context, username, password string) (LoginResponse, error) {
	var out LoginResponse
	err := c.call(ctx, "POST", "/api/v1/login", nil, api.LoginRequest{Username: username, Password: password}, &out)
	return out, err
}

// LoginForToken logs in and returns a personal access token of name valid
// for ttl, made with the password (no session).
func (c *Client) LoginForToken(ctx context.Context, username, password, name string, ttl time.Duration) (LoginResponse, error) {
	var out LoginResponse
	err := c.call(ctx, "POST", "/api/v1/login", nil, api.LoginRequest{Username: username, Password: password,
		PersonalToken: &api.TokenRequest{Name: name, ExpiresIn: ttl.String()}}, &out)
	return out, err
}

// Logout ends the session of c's token.
func (c *Client) Logout(ctx context.Context) error {
	return c.call(ctx, "POST", "/api/v1/logout", nil, nil, nil)
}

// Me is the authenticated user.
func (c *Client) Me(ctx context.Context) (Me, error) {
	var out Me
	err := c.call(ctx, "GET", "/api/v1/me", nil, nil, &out)
	return out, err
}

// CreateToken makes a personal access token valid for ttl.
func (c *Client) CreateToken(ctx context.Context, name string, ttl time.Duration) (NewToken, error) {
	var out NewToken
	err := c.call(ctx, "POST", "/api/v1/tokens", nil, api.TokenRequest{Name: name, ExpiresIn: ttl.String()}, &out)
	return out, err
}

// ListTokens lists the caller's personal access tokens.
func (c *Client) ListTokens(ctx context.Context) ([]Token, error) {
	var out api.List[Token]
	err := c.call(ctx, "GET", "/api/v1/tokens", nil, nil, &out)
	return out.Items, err
}

// DeleteToken revokes one of the caller's tokens.
func (c *Client) DeleteToken(ctx context.Context, id int64) error {
	return c.call(ctx, "DELETE", "/api/v1/tokens/"+strconv.FormatInt(id, 10), nil, nil, nil)
}

// CreateUser makes a user (admin).
func (c *Client) CreateUser(ctx context.Context, name, password, role string) (User, error) {
	var out User
	err := c.call(ctx, "POST", "/api/v1/users", nil, api.CreateUserRequest{Name: name, Password: password, Role: role}, &out)
	return out, err
}

// Grant gives user level on project.
func (c *Client) Grant(ctx context.Context, project, user, level string) error {
	return c.call(ctx, "PUT", "/api/v1/projects/"+esc(project)+"/grants/"+esc(user), nil, api.GrantRequest{Level: level}, nil)
}

// AuditFilter selects audit entries; zero fields select all.
type AuditFilter struct {
	User, Action, Resource string
	Since                  time.Time
	Limit                  int
}

// Audit lists audit entries, newest first (admin).
func (c *Client) Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	q := url.Values{}
	for k, v := range map[string]string{"user": f.User, "action": f.Action, "resource": f.Resource} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out api.List[AuditEntry]
	err := c.call(ctx, "GET", "/api/v1/audit", q, nil, &out)
	return out.Items, err
}
