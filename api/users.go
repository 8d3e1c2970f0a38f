package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

var jsonUnmarshal = json.Unmarshal

// Password rules: bcrypt reads at most 72 bytes.
const (
	minPassword = 8
	maxPassword = 72
	maxTokenTTL = 366 * 24 * time.Hour
)

// HashPassword is the bcrypt hash of a password.
func HashPassword(pw string) (string, error) {
	b, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(b), nil
}

// dummyHash is checked against when the user does not exist, so a login
// takes as long for an unknown name as for a wrong password. It is a
// constant (a hash of a phrase at bcrypt.DefaultCost, the cost
// HashPassword uses): computing it at package init cost every beluga
// process, the CLI included, ~57 ms of CPU at start.
var dummyHash = []byte("$2a$10$k5ZG7UkfQHpPrsIubi.lNe0xJ5vMFPQY0dfEfj4oXybJlv0vXBE3u")

func checkPassword(pw string) error {
	if len(pw) < minPassword || len(pw) > maxPassword {
		return badRequest("a password must be %d to %d bytes long", minPassword, maxPassword)
	}
	return nil
}

func checkRole(role string) error {
	if role != model.RoleAdmin && role != model.RoleUser {
		return badRequest("role %q is not valid; use admin or user", role)
	}
	return nil
}

// newSecret is a token's secret: 26 random base32 characters (130 bits).
func newSecret() string { return "blg_" + rand.Text() }

// issue makes a token of kind for u and returns its secret.
func (h *handlers) issue(ctx context.Context, u model.User, kind, name string, expires time.Time) (string, model.Token, error) {
	secret := newSecret()
	t, err := h.Store.TokenCreate(ctx, model.Token{UserID: u.ID, Kind: kind, Name: name, Hash: HashToken(secret), ExpiresAt: expires})
	return secret, t, err
}

func (h *handlers) login(w http.ResponseWriter, r *http.Request) error {
	var req LoginRequest
	rec := &auditRecorder{ResponseWriter: w}
	err := decodeJSON(r, &req, false)
	if err == nil {
		err = h.doLogin(rec, r, req)
	}
	if err != nil {
		h.fail(rec, r, err)
	}
	h.audit(r, truncate(req.Username, 64), "POST /api/v1/login", rec)
	return nil
}

func (h *handlers) doLogin(w http.ResponseWriter, r *http.Request, req LoginRequest) error {
	if req.Username == "" || req.Password == "" {
		return badRequest("username and password are required")
	}
	var personal time.Time
	if req.PersonalToken != nil {
		var err error
		if personal, err = tokenTerms(*req.PersonalToken, time.Now()); err != nil {
			return err
		}
	}
	addr := clientAddr(r)
	name := store.NormalUserName(req.Username) // one key however it is spelt
	wait, slow := h.limits.check(name, addr)
	if wait > 0 {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		return &httpError{http.StatusTooManyRequests, CodeTooManyRequests,
			fmt.Sprintf("too many failed logins for %q from %s; try again in %d s", name, addr, secs)}
	}
	if slow > 0 {
		// The name is being guessed from many places: every login for it
		// is slowed, none refused.
		t := time.NewTimer(slow)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return r.Context().Err()
		}
	}
	u, err := h.Store.UserGet(r.Context(), name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	hash := dummyHash
	if err == nil {
		hash = []byte(u.PasswordHash)
	}
	var wrong error
	if !h.limits.compare(r.Context(), func() { wrong = bcrypt.CompareHashAndPassword(hash, []byte(req.Password)) }) {
		w.Header().Set("Retry-After", "1")
		return &httpError{http.StatusTooManyRequests, CodeTooManyRequests,
			fmt.Sprintf("too many logins being checked at once (at most %d); try again in 1 s", loginCompares)}
	}
	if wrong != nil || err != nil || u.Disabled {
		h.limits.fail(name, addr)
		return unauthorized("wrong username or password, or the user is disabled")
	}
	h.limits.succeed(name, addr)
	if req.PersonalToken != nil {
		// The password itself vouches for a token of any term: no session,
		// no cookie.
		secret, t, err := h.issue(r.Context(), u, model.TokenPersonal, req.PersonalToken.Name, personal)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, LoginResponse{Token: secret, ExpiresAt: Time{t.ExpiresAt}, TokenID: t.ID})
		return nil
	}
	expires := time.Now().Add(SessionTTL).UTC().Truncate(time.Second)
	secret, _, err := h.issue(r.Context(), u, model.TokenSession, "login", expires)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: secret, Path: "/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	writeJSON(w, http.StatusOK, LoginResponse{Token: secret, ExpiresAt: Time{expires}})
	return nil
}

func (h *handlers) logout(w http.ResponseWriter, r *http.Request) error {
	c := callerOf(r.Context())
	// A personal access token is revoked by DELETE /tokens/{id}, not by
	// a logout that happens to carry it.
	if c.kind == model.TokenSession {
		if err := h.Store.TokenDeleteByHash(r.Context(), HashToken(credential(r))); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handlers) me(w http.ResponseWriter, r *http.Request) error {
	c := callerOf(r.Context())
	writeJSON(w, http.StatusOK, Me{Username: c.name, Role: c.role})
	return nil
}

func (h *handlers) changeOwnPassword(w http.ResponseWriter, r *http.Request) error {
	c := callerOf(r.Context())
	var req PasswordChange
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	ch, err := userChange(nil, &req.New, nil)
	if err != nil {
		return err
	}
	u, err := h.Store.UserGet(r.Context(), c.name)
	if err != nil {
		return storeError(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(req.Current)) != nil {
		return forbidden("the current password is wrong")
	}
	if _, _, err := h.Store.UserUpdate(r.Context(), c.name, ch); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// userChange checks a change of role, password or state and hashes the
// password: the one path of an admin's edit and a user's own password.
func userChange(role, password *string, disabled *bool) (model.UserChange, error) {
	ch := model.UserChange{Role: role, Disabled: disabled}
	if role != nil {
		if err := checkRole(*role); err != nil {
			return ch, err
		}
	}
	if password != nil {
		if err := checkPassword(*password); err != nil {
			return ch, err
		}
		hash, err := HashPassword(*password)
		if err != nil {
			return ch, err
		}
		ch.PasswordHash = &hash
	}
	return ch, nil
}

func fromToken(t model.Token) Token {
	out := Token{ID: t.ID, Name: t.Name, ExpiresAt: Time{t.ExpiresAt}, CreatedAt: Time{t.CreatedAt}}
	if t.LastUsedAt != nil {
		out.LastUsedAt = &Time{*t.LastUsedAt}
	}
	return out
}

// tokenTerms checks a personal token's name and works out its expiry.
func tokenTerms(req TokenRequest, now time.Time) (time.Time, error) {
	if strings.TrimSpace(req.Name) == "" || len(req.Name) > 128 || !validBy(req.Name) {
		return time.Time{}, badRequest("a token needs a name: printable text of at most 128 characters")
	}
	var expires time.Time
	switch {
	case req.ExpiresAt != nil && req.ExpiresIn != "":
		return time.Time{}, badRequest("give expires_at or expires_in, not both")
	case req.ExpiresAt != nil:
		expires = req.ExpiresAt.Time
	case req.ExpiresIn != "":
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil {
			return time.Time{}, badRequest("expires_in %q is not a duration such as 720h", req.ExpiresIn)
		}
		expires = now.Add(d)
	default:
		return time.Time{}, badRequest("a token needs an expiry: expires_at (RFC 3339) or expires_in (such as 720h)")
	}
	if !expires.After(now) || expires.Sub(now) > maxTokenTTL {
		return time.Time{}, badRequest("a token must expire in the future and within %d days", int(maxTokenTTL.Hours()/24))
	}
	return expires, nil
}

func (h *handlers) createToken(w http.ResponseWriter, r *http.Request) error {
	c := callerOf(r.Context())
	var req TokenRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	expires, err := tokenTerms(req, time.Now())
	if err != nil {
		return err
	}
	// A token must not outlive the one that made it: else a stolen session
	// (12 h) would buy a year's access that survives the session's end. A
	// longer one is asked for with the password (POST /login with
	// personal_token), as beluga login does.
	if !c.expires.IsZero() && expires.After(c.expires) {
		return badRequest("a token cannot outlive the token that makes it: this request's %s token expires at %s; "+
			"ask for an expiry no later than that, or log in with personal_token for a longer one", c.kind, c.expires.UTC().Format(time.RFC3339))
	}
	u, err := h.Store.UserGet(r.Context(), c.name)
	if err != nil {
		return storeError(err)
	}
	secret, t, err := h.issue(r.Context(), u, model.TokenPersonal, req.Name, expires)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, NewToken{Token: fromToken(t), Secret: secret})
	return nil
}

func (h *handlers) listTokens(w http.ResponseWriter, r *http.Request) error {
	ts, err := h.Store.TokenList(r.Context(), callerOf(r.Context()).id, model.TokenPersonal)
	if err != nil {
		return err
	}
	out := List[Token]{Items: make([]Token, len(ts))}
	for i, t := range ts {
		out.Items[i] = fromToken(t)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) deleteToken(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := h.Store.TokenDelete(r.Context(), callerOf(r.Context()).id, id); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func fromUser(u model.User) User {
	return User{Name: u.Name, Role: u.Role, Disabled: u.Disabled, CreatedAt: Time{u.CreatedAt}, UpdatedAt: Time{u.UpdatedAt}}
}

func (h *handlers) createUser(w http.ResponseWriter, r *http.Request) error {
	var req CreateUserRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	req.Name = store.NormalUserName(req.Name) // stored so: see store.NormalUserName
	if !validName(req.Name) || len(req.Name) > 64 {
		return badRequest("user name %q is not valid: %s (at most 64)", req.Name, nameRule)
	}
	if req.Role == "" {
		req.Role = model.RoleUser
	}
	if err := checkRole(req.Role); err != nil {
		return err
	}
	if err := checkPassword(req.Password); err != nil {
		return err
	}
	hash, err := HashPassword(req.Password)
	if err != nil {
		return err
	}
	u, err := h.Store.UserCreate(r.Context(), req.Name, req.Role, hash)
	if err != nil {
		return storeError(err)
	}
	w.Header().Set("Location", "/api/v1/users/"+u.Name)
	writeJSON(w, http.StatusCreated, fromUser(u))
	return nil
}

func (h *handlers) listUsers(w http.ResponseWriter, r *http.Request) error {
	us, err := h.Store.UserList(r.Context())
	if err != nil {
		return err
	}
	out := List[User]{Items: make([]User, len(us))}
	for i, u := range us {
		out.Items[i] = fromUser(u)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getUser(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	u, err := h.Store.UserGet(r.Context(), name)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromUser(u))
	return nil
}

func (h *handlers) updateUser(w http.ResponseWriter, r *http.Request) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	var req UpdateUserRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	ch, err := userChange(req.Role, req.Password, req.Disabled)
	if err != nil {
		return err
	}
	if c := callerOf(r.Context()); c.name == name && (req.Disabled != nil && *req.Disabled || req.Role != nil && *req.Role != model.RoleAdmin) {
		return badRequest("an admin cannot disable or demote themselves; ask another admin")
	}
	u, _, err := h.Store.UserUpdate(r.Context(), name, ch)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromUser(u))
	return nil
}

func fromGrant(g model.Grant) Grant {
	return Grant{Project: g.Project, User: g.User, Level: g.Level, GrantedBy: g.GrantedBy, CreatedAt: Time{g.CreatedAt}}
}

func (h *handlers) listGrants(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	gs, err := h.Store.GrantList(r.Context(), project, 0)
	if err != nil {
		return storeError(err)
	}
	out := List[Grant]{Items: make([]Grant, len(gs))}
	for i, g := range gs {
		out.Items[i] = fromGrant(g)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) putGrant(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	user, err := pathName(r, "user")
	if err != nil {
		return err
	}
	var req GrantRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if model.GrantRank(req.Level) == 0 {
		return badRequest("level %q is not valid; use view, operate, edit or owner", req.Level)
	}
	if err := h.Store.GrantPut(r.Context(), project, user, req.Level, callerOf(r.Context()).name); err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, Grant{Project: project, User: user, Level: req.Level, GrantedBy: callerOf(r.Context()).name, CreatedAt: Time{time.Now()}})
	return nil
}

func (h *handlers) deleteGrant(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	user, err := pathName(r, "user")
	if err != nil {
		return err
	}
	if err := h.Store.GrantPut(r.Context(), project, user, "", callerOf(r.Context()).name); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handlers) listAudit(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.AuditFilter{User: q.Get("user"), Action: q.Get("action"), Resource: q.Get("resource")}
	for _, p := range [...]struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := q.Get(p.name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return badRequest("query parameter %s: %q is not an RFC 3339 time", p.name, s)
			}
			*p.to = t
		}
	}
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	before, err := queryInt(r, "before", 0, 0, math.MaxInt64)
	if err != nil {
		return err
	}
	f.Limit, f.BeforeID = int(limit), before
	es, err := h.Store.AuditList(r.Context(), f)
	if err != nil {
		return err
	}
	out := List[AuditEntry]{Items: make([]AuditEntry, len(es))}
	for i, e := range es {
		out.Items[i] = AuditEntry{ID: e.ID, At: Time{e.At}, User: e.User, Action: e.Action, Resource: e.Resource,
			Address: e.Address, Status: e.Status, Outcome: e.Outcome}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// AdminPasswordFile is where Bootstrap writes a generated admin password.
func AdminPasswordFile(dataDir string) string { return filepath.Join(dataDir, "admin-password") }

// Bootstrap creates the user admin when there is no user at all, with
// password when given, else a random one written to
// AdminPasswordFile(dataDir) (0600). It returns what the start line should
// say ("" when users existed).
func Bootstrap(ctx context.Context, st BootstrapStore, password, dataDir string, log *zap.Logger) (string, error) {
	n, err := st.UserCount(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	note := "user admin created with the given password"
	if password == "" {
		password = rand.Text()
		path := AdminPasswordFile(dataDir)
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return "", fmt.Errorf("admin password: %w", err)
		}
		if err := os.WriteFile(path, []byte(password+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("admin password: %w", err)
		}
		if err := os.Chmod(path, 0o600); err != nil { // an older file keeps its mode otherwise
			return "", fmt.Errorf("admin password: %w", err)
		}
		note = "user admin created; its password is in " + path
	} else if err := checkPassword(password); err != nil {
		return "", fmt.Errorf("admin password: %s", err.Error())
	}
	hash, err := HashPassword(password)
	if err != nil {
		return "", err
	}
	if _, err := st.UserCreate(ctx, "admin", model.RoleAdmin, hash); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return "", nil // another API process bootstrapped it first
		}
		return "", err
	}
	if log != nil {
		log.Info(note)
	}
	return note, nil
}
