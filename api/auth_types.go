package api

// Error codes of authentication and rate limiting.
const (
	CodeUnauthorized    = "unauthorized"
	CodeTooManyRequests = "too_many_requests"
)

// LoginRequest is the body of POST /api/v1/login.
type LoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
	// PersonalToken, when given, asks for a personal access token of that
	// name and term instead of a session (beluga login): a token that
	// outlives a session is made with the password, not with a session.
	PersonalToken *TokenRequest `json:"personal_token,omitempty"`
}

// LoginResponse answers a login: a session token (also set as the UI's
// cookie) for the Authorization: Bearer header.
type LoginResponse struct {
	Token     string `json:"token"`
	ExpiresAt Time   `json:"expires_at"`
	TokenID   int64  `json:"token_id,omitempty"` // the personal token's id (personal_token asked)
}

// Me is the caller, GET /api/v1/me.
type Me struct {
	Username string `json:"username"`
	Role     string `json:"role"`
}

// PasswordChange is the body of POST /api/v1/me/password.
type PasswordChange struct {
	Current string `json:"current"`
	New     string `json:"new"`
}

// User is a user as the API shows it (never its password).
type User struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Disabled  bool   `json:"disabled"`
	CreatedAt Time   `json:"created_at"`
	UpdatedAt Time   `json:"updated_at"`
}

// CreateUserRequest is the body of POST /api/v1/users.
type CreateUserRequest struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	Role     string `json:"role"` // admin or user; "" is user
}

// UpdateUserRequest is the body of PATCH /api/v1/users/{name}; absent
// fields are kept. A new password or disabled: true revokes every session
// and token of the user.
type UpdateUserRequest struct {
	Password *string `json:"password,omitempty"`
	Role     *string `json:"role,omitempty"`
	Disabled *bool   `json:"disabled,omitempty"`
}

// TokenRequest is the body of POST /api/v1/tokens: a name and an expiry,
// either a time or a duration from now ("720h").
type TokenRequest struct {
	Name      string `json:"name"`
	ExpiresAt *Time  `json:"expires_at,omitempty"`
	ExpiresIn string `json:"expires_in,omitempty"`
}

// Token is a personal access token as listed: never its secret.
type Token struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	ExpiresAt  Time   `json:"expires_at"`
	CreatedAt  Time   `json:"created_at"`
	LastUsedAt *Time  `json:"last_used_at,omitempty"`
}

// NewToken answers POST /api/v1/tokens: the only time the secret is shown.
type NewToken struct {
	Token
	Secret string `json:"token"`
}

// Grant is one user's level on one project.
type Grant struct {
	Project   string `json:"project"`
	User      string `json:"user"`
	Level     string `json:"level"`
	GrantedBy string `json:"granted_by"`
	CreatedAt Time   `json:"created_at"`
}

// GrantRequest is the body of PUT /api/v1/projects/{project}/grants/{user}.
type GrantRequest struct {
	Level string `json:"level"` // view, operate, edit or owner
}

// AuditEntry is one row of the audit trail.
type AuditEntry struct {
	ID       int64  `json:"id"`
	At       Time   `json:"at"`
	User     string `json:"user"`
	Action   string `json:"action"`   // method and route, e.g. "POST /api/v1/instances/{id}/actions"
	Resource string `json:"resource"` // the path called
	Address  string `json:"address"`  // the caller's IP
	Status   int    `json:"status"`
	Outcome  string `json:"outcome"` // ok, or the error message
}
