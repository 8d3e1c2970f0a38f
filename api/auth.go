package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// SessionCookie is the UI's session cookie: the same secret a login
// answers as its token, HttpOnly, SameSite=Strict.
const SessionCookie = "beluga_session"

// SessionTTL is how long a login's session lasts.
const SessionTTL = 12 * time.Hour

// need is what a route requires of its caller (docs/architecture.md, "API",
// authentication and permissions).
type need struct {
	who   who
	level string // for the by* kinds: view, operate, edit, approve or owner
}

type who int

const (
	anyone     who = iota + 1 // no credentials: /healthz, the login itself
	exempt                    // not our authentication: /metrics has its own scrape token
	user                      // any authenticated user
	admin                     // admins only
	byProject                 // the caller's grant on the {project} of the path
	byInstance                // ... on the project of workflow instance {id}
	byTask                    // ... on the project of task instance {id}
	byBackfill                // ... on the project of backfill {id}
	ownSecret                 // no user: the handler checks a secret of its own (a Git webhook's)
)

// access says what each route of the route table needs, by "METHOD
// pattern". A route missing here is for admins only (and fails
// TestEveryRouteHasAccess).
var access = map[string]need{
	"GET /healthz":             {who: anyone},
	"GET /metrics":             {who: exempt}, // the observability scrape token guards it
	"POST /api/v1/login":       {who: anyone},
	"POST /api/v1/logout":      {who: user},
	"GET /api/v1/me":           {who: user},
	"POST /api/v1/me/password": {who: user},
	"GET /api/v1/openapi.yaml": {who: user},
	"GET /api/v1/task-types":   {who: user},

	"POST /api/v1/tokens":        {who: user},
	"GET /api/v1/tokens":         {who: user},
	"DELETE /api/v1/tokens/{id}": {who: user},

	"GET /api/v1/users":                               {who: admin},
	"POST /api/v1/users":                              {who: admin},
	"GET /api/v1/users/{name}":                        {who: admin},
	"PATCH /api/v1/users/{name}":                      {who: admin},
	"GET /api/v1/audit":                               {who: admin},
	"GET /api/v1/projects/{project}/grants":           {who: byProject, level: model.GrantOwner},
	"PUT /api/v1/projects/{project}/grants/{user}":    {who: byProject, level: model.GrantOwner},
	"DELETE /api/v1/projects/{project}/grants/{user}": {who: byProject, level: model.GrantOwner},

	"POST /api/v1/projects":          {who: user}, // the creator becomes its owner
	"GET /api/v1/projects":           {who: user}, // filtered
	"GET /api/v1/projects/{project}": {who: byProject, level: model.GrantView},
	// A project's Git binding: its owners set it (a local path: admins
	// only, in the handler); a sync applies workflows, as an apply does.
	"PUT /api/v1/projects/{project}/git":       {who: byProject, level: model.GrantOwner},
	"GET /api/v1/projects/{project}/git":       {who: byProject, level: model.GrantView},
	"DELETE /api/v1/projects/{project}/git":    {who: byProject, level: model.GrantOwner},
	"POST /api/v1/projects/{project}/git/sync": {who: byProject, level: model.GrantEdit},

	// Promotion: a request needs edit on its source too, a review approve
	// on the target and not to be its author (api/promotions.go).
	"GET /api/v1/projects/{project}/promotion":                {who: byProject, level: model.GrantView},
	"PUT /api/v1/projects/{project}/promotion":                {who: byProject, level: model.GrantOwner},
	"POST /api/v1/projects/{project}/promotions":              {who: byProject, level: model.GrantView},
	"GET /api/v1/projects/{project}/promotions":               {who: byProject, level: model.GrantView},
	"GET /api/v1/projects/{project}/promotions/{id}":          {who: byProject, level: model.GrantView},
	"POST /api/v1/projects/{project}/promotions/{id}/approve": {who: byProject, level: model.GrantApprove},
	"POST /api/v1/projects/{project}/promotions/{id}/reject":  {who: byProject, level: model.GrantApprove},
	// A push's webhook: the binding's hook secret guards it (gitHook), and
	// it syncs as the user who set the binding.
	"POST /api/v1/git-hooks/{project}": {who: ownSecret},

	"GET /api/v1/projects/{project}/workflows":                    {who: byProject, level: model.GrantView},
	"PUT /api/v1/projects/{project}/workflows/{name}":             {who: byProject, level: model.GrantEdit},
	"GET /api/v1/projects/{project}/workflows/{name}":             {who: byProject, level: model.GrantView},
	"DELETE /api/v1/projects/{project}/workflows/{name}":          {who: byProject, level: model.GrantEdit},
	"GET /api/v1/projects/{project}/workflows/{name}/versions":    {who: byProject, level: model.GrantView},
	"GET /api/v1/projects/{project}/workflows/{name}/diff":        {who: byProject, level: model.GrantView},
	"POST /api/v1/projects/{project}/workflows/{name}/runs":       {who: byProject, level: model.GrantOperate},
	"PUT /api/v1/projects/{project}/workflows/{name}/schedule":    {who: byProject, level: model.GrantEdit},
	"GET /api/v1/projects/{project}/workflows/{name}/schedule":    {who: byProject, level: model.GrantView},
	"DELETE /api/v1/projects/{project}/workflows/{name}/schedule": {who: byProject, level: model.GrantEdit},
	// Webhook triggers: editors manage them (a token starts runs), viewers
	// read them and their deliveries; a delivery is authenticated by the
	// trigger's own token in its handler, not a user's.
	"POST /api/v1/projects/{project}/workflows/{name}/triggers":                     {who: byProject, level: model.GrantEdit},
	"GET /api/v1/projects/{project}/workflows/{name}/triggers":                      {who: byProject, level: model.GrantView},
	"GET /api/v1/projects/{project}/workflows/{name}/triggers/{trigger}":            {who: byProject, level: model.GrantView},
	"PATCH /api/v1/projects/{project}/workflows/{name}/triggers/{trigger}":          {who: byProject, level: model.GrantEdit},
	"DELETE /api/v1/projects/{project}/workflows/{name}/triggers/{trigger}":         {who: byProject, level: model.GrantEdit},
	"POST /api/v1/projects/{project}/workflows/{name}/triggers/{trigger}/rotate":    {who: byProject, level: model.GrantEdit},
	"GET /api/v1/projects/{project}/workflows/{name}/triggers/{trigger}/deliveries": {who: byProject, level: model.GrantView},
	"POST /api/v1/hooks/{id}":                                   {who: exempt}, // the trigger's token
	"GET /api/v1/schedules":                                     {who: user},   // filtered
	"POST /api/v1/schedule-preview":                             {who: user},   // computes, stores nothing
	"POST /api/v1/projects/{project}/workflows/{name}/backfill": {who: byProject, level: model.GrantOperate},
	// The preview reads what a backfill would run: viewers may ask.
	"POST /api/v1/projects/{project}/workflows/{name}/backfill/preview": {who: byProject, level: model.GrantView},
	"GET /api/v1/backfills":               {who: user}, // filtered
	"GET /api/v1/backfills/{id}":          {who: byBackfill, level: model.GrantView},
	"POST /api/v1/backfills/{id}/actions": {who: byBackfill, level: model.GrantOperate},

	"GET /api/v1/projects/{project}/schedules/{id}/fires":             {who: byProject, level: model.GrantView},
	"POST /api/v1/projects/{project}/schedules/{id}/fires/compensate": {who: byProject, level: model.GrantOperate},

	"GET /api/v1/instances":                                          {who: user}, // filtered
	"GET /api/v1/instances/{id}":                                     {who: byInstance, level: model.GrantView},
	"GET /api/v1/instances/{id}/diff":                                {who: byInstance, level: model.GrantView},
	"POST /api/v1/instances/{id}/actions":                            {who: byInstance, level: model.GrantOperate},
	"POST /api/v1/instances/{id}/plan":                               {who: byInstance, level: model.GrantOperate},
	"POST /api/v1/projects/{project}/workflows/{name}/runs/plan":     {who: byProject, level: model.GrantOperate},
	"POST /api/v1/projects/{project}/workflows/{name}/backfill/plan": {who: byProject, level: model.GrantOperate},
	// A plan reaches many projects: the handler needs view on each to show
	// it (else 404) and operate on each to apply it (else 403).
	"GET /api/v1/plans/{id}":                      {who: user},
	"POST /api/v1/plans/{id}/apply":               {who: user},
	"GET /api/v1/task-instances":                  {who: user}, // filtered
	"GET /api/v1/task-instances/{id}":             {who: byTask, level: model.GrantView},
	"GET /api/v1/task-instances/{id}/log":         {who: byTask, level: model.GrantView},
	"GET /api/v1/task-instances/{id}/log/streams": {who: byTask, level: model.GrantView},
	"POST /api/v1/task-instances/{id}/actions":    {who: byTask, level: model.GrantOperate},

	// Datasets: viewers read them, a consumer's ledger and a run's
	// lineage; an event from outside starts runs, so it takes operate, as
	// a run request does.
	"GET /api/v1/projects/{project}/datasets":                        {who: byProject, level: model.GrantView},
	"GET /api/v1/projects/{project}/datasets/{dataset}":              {who: byProject, level: model.GrantView},
	"POST /api/v1/projects/{project}/datasets/{dataset}/events":      {who: byProject, level: model.GrantOperate},
	"POST /api/v1/projects/{project}/datasets/{dataset}/events/plan": {who: byProject, level: model.GrantOperate},
	"GET /api/v1/projects/{project}/workflows/{name}/dataset-fires":  {who: byProject, level: model.GrantView},
	"GET /api/v1/instances/{id}/datasets":                            {who: byInstance, level: model.GrantView},

	"POST /api/v1/task-groups":          {who: admin},
	"GET /api/v1/task-groups":           {who: user},
	"GET /api/v1/task-groups/{name}":    {who: user},
	"PATCH /api/v1/task-groups/{name}":  {who: admin},
	"DELETE /api/v1/task-groups/{name}": {who: admin},

	// Shared calendars: every user reads them, admins write them; a
	// project's: its viewers read them, its editors write them.
	"GET /api/v1/calendars":                              {who: user},
	"PUT /api/v1/calendars/{name}":                       {who: admin},
	"GET /api/v1/calendars/{name}":                       {who: user},
	"DELETE /api/v1/calendars/{name}":                    {who: admin},
	"GET /api/v1/projects/{project}/calendars":           {who: byProject, level: model.GrantView},
	"PUT /api/v1/projects/{project}/calendars/{name}":    {who: byProject, level: model.GrantEdit},
	"GET /api/v1/projects/{project}/calendars/{name}":    {who: byProject, level: model.GrantView},
	"DELETE /api/v1/projects/{project}/calendars/{name}": {who: byProject, level: model.GrantEdit},

	"GET /api/v1/datasources":              {who: user}, // filtered: those granted to a project the caller views
	"PUT /api/v1/datasources/{name}":       {who: admin},
	"GET /api/v1/datasources/{name}":       {who: user}, // the same filter; else 404
	"DELETE /api/v1/datasources/{name}":    {who: admin},
	"POST /api/v1/datasources/{name}/test": {who: admin},

	"GET /api/v1/cluster": {who: user},
	// The event stream: any user, filtered to the projects they may view.
	// Webhook subscriptions, alert channels and the alert history are
	// cluster-wide settings and their secrets: admins.
	"GET /api/v1/events":                          {who: user},
	"GET /api/v1/subscriptions":                   {who: admin},
	"PUT /api/v1/subscriptions/{name}":            {who: admin},
	"GET /api/v1/subscriptions/{name}":            {who: admin},
	"DELETE /api/v1/subscriptions/{name}":         {who: admin},
	"GET /api/v1/subscriptions/{name}/deliveries": {who: admin},
	"GET /api/v1/alert-channels":                  {who: admin},
	"PUT /api/v1/alert-channels/{name}":           {who: admin},
	"GET /api/v1/alert-channels/{name}":           {who: admin},
	"DELETE /api/v1/alert-channels/{name}":        {who: admin},
	"POST /api/v1/alert-channels/{name}/test":     {who: admin},
	"GET /api/v1/alerts":                          {who: admin},
	// The quotas: server-wide, admins.
	"GET /api/v1/settings":        {who: admin},
	"PUT /api/v1/settings/{name}": {who: admin},
	// Retention: the global default and the purge of every project and the
	// audit log are admins'; a project's own policy its editors set, its
	// viewers read and dry-run, its editors purge.
	"GET /api/v1/retention":                           {who: user},
	"PUT /api/v1/retention":                           {who: admin},
	"POST /api/v1/retention/plan":                     {who: admin},
	"POST /api/v1/retention/purge":                    {who: admin},
	"GET /api/v1/projects/{project}/retention":        {who: byProject, level: model.GrantView},
	"PUT /api/v1/projects/{project}/retention":        {who: byProject, level: model.GrantEdit},
	"POST /api/v1/projects/{project}/retention/plan":  {who: byProject, level: model.GrantView},
	"POST /api/v1/projects/{project}/retention/purge": {who: byProject, level: model.GrantEdit},
}

func accessOf(rt route) need {
	if n, ok := access[rt.method+" "+rt.pattern]; ok {
		return n
	}
	return need{who: admin}
}

// caller is the authenticated user of a request.
type caller struct {
	id      int64
	name    string
	role    string
	tokenID int64
	kind    string    // model.TokenSession or model.TokenPersonal
	expires time.Time // the token's: a token it makes expires no later
	levels  map[int64]string
}

func (c *caller) admin() bool { return c.role == model.RoleAdmin }

type callerKey struct{}

func callerOf(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// HashToken is how a token's secret is stored (store.HashToken).
func HashToken(secret string) string { return store.HashToken(secret) }

// credential is the token a request carries: the Authorization header, else
// the UI's session cookie.
func credential(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		if t, ok := strings.CutPrefix(a, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return "\x00malformed"
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		return c.Value
	}
	return ""
}

func unauthorized(msg string) *httpError {
	return &httpError{http.StatusUnauthorized, CodeUnauthorized, msg}
}

func forbidden(format string, args ...any) *httpError {
	return &httpError{http.StatusForbidden, CodeForbidden, fmt.Sprintf(format, args...)}
}

// guard authenticates the caller of rt, checks its permission and writes
// the audit entry of a change. Everything but anyone/exempt routes needs a
// live token.
func (h *handlers) guard(rt route, next http.Handler) http.Handler {
	n := accessOf(rt)
	action := rt.method + " " + rt.pattern
	changes := rt.method != http.MethodGet && rt.method != http.MethodHead
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.who == anyone || n.who == exempt || n.who == ownSecret {
			next.ServeHTTP(w, r)
			return
		}
		c, err := h.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="beluga"`)
			h.fail(w, r, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
		if !changes {
			if err := h.permit(r, c, n); err != nil {
				h.fail(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		rec := &auditRecorder{ResponseWriter: w}
		ctx, pending := store.WithAudit(r.Context(), h.auditEntry(r, c.name, action))
		r = r.WithContext(ctx)
		if err := h.permit(r, c, n); err != nil {
			h.fail(rec, r, err)
		} else {
			next.ServeHTTP(rec, r)
		}
		h.finishAudit(r, pending, rec)
	})
}

func (h *handlers) authenticate(r *http.Request) (*caller, error) {
	tok := credential(r)
	if tok == "" {
		return nil, unauthorized("authentication required: log in with POST /api/v1/login (or `beluga login`) " +
			"and send the token as Authorization: Bearer <token>")
	}
	u, t, err := h.Store.TokenAuthenticate(r.Context(), HashToken(tok), time.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, unauthorized("the token is invalid, expired or revoked; log in again")
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return &caller{id: u.ID, name: u.Name, role: u.Role, tokenID: t.ID, kind: t.Kind, expires: t.ExpiresAt}, nil
}

// level is the caller's grant on project id ("" for none); admins hold
// every project as owners.
func (h *handlers) level(ctx context.Context, c *caller, projectID int64) (string, error) {
	if c.admin() {
		return model.GrantOwner, nil
	}
	if c.levels == nil {
		l, err := h.Store.GrantLevels(ctx, c.id)
		if err != nil {
			return "", err
		}
		c.levels = l
	}
	return c.levels[projectID], nil
}

// canView says whether the caller may see project id (for filtering lists).
func (h *handlers) canView(ctx context.Context, projectID int64) (bool, error) {
	c := callerOf(ctx)
	if c == nil {
		return true, nil
	}
	l, err := h.level(ctx, c, projectID)
	return model.GrantRank(l) >= model.GrantRank(model.GrantView), err
}

// viewable is the ids of the projects the caller may view, nil for all.
func (h *handlers) viewable(ctx context.Context) ([]int64, error) {
	c := callerOf(ctx)
	if c == nil || c.admin() {
		return nil, nil
	}
	ids := []int64{}
	if _, err := h.level(ctx, c, 0); err != nil {
		return nil, err
	}
	for id, l := range c.levels {
		if model.GrantRank(l) >= model.GrantRank(model.GrantView) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// viewableNames is viewable by project name (nil: every project), for
// what is keyed by name, as events are.
func (h *handlers) viewableNames(ctx context.Context) ([]string, error) {
	ids, err := h.viewable(ctx)
	if err != nil || ids == nil {
		return nil, err
	}
	all, err := h.Store.ProjectList(ctx)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, p := range all {
		if slices.Contains(ids, p.ID) {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// permit checks n for c. A resource of a project the caller cannot view is
// answered as the store answers a missing one (404, same message), so
// names and ids cannot be probed.
func (h *handlers) permit(r *http.Request, c *caller, n need) error {
	if n.who == user || c.admin() {
		return nil
	}
	if n.who == admin {
		return forbidden("%s %s is for admins; user %q is not one", r.Method, r.URL.Path, c.name)
	}
	ctx := r.Context()
	var projectID int64
	var project, missing string
	switch n.who {
	case byProject:
		name, err := pathName(r, "project")
		if err != nil {
			return err
		}
		p, err := h.Store.ProjectGet(ctx, name)
		if err != nil {
			return storeError(err)
		}
		projectID, project, missing = p.ID, p.Name, fmt.Sprintf("project %q", name)
	case byInstance, byTask, byBackfill:
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		switch n.who {
		case byInstance:
			wi, err := h.Store.InstanceGet(ctx, id)
			if err != nil {
				return storeError(err)
			}
			projectID, project, missing = wi.ProjectID, wi.Project, fmt.Sprintf("workflow instance %d", id)
		case byTask:
			t, err := h.Store.TaskGet(ctx, id)
			if err != nil {
				return storeError(err)
			}
			wi, err := h.Store.InstanceGet(ctx, t.WorkflowInstanceID)
			if err != nil {
				return storeError(err)
			}
			projectID, project, missing = wi.ProjectID, wi.Project, fmt.Sprintf("task instance %d", id)
		default:
			b, err := h.Store.BackfillGet(ctx, id)
			if err != nil {
				return storeError(err)
			}
			projectID, project, missing = b.ProjectID, b.Project, fmt.Sprintf("backfill %d", id)
		}
	}
	l, err := h.level(ctx, c, projectID)
	if err != nil {
		return err
	}
	if model.GrantRank(l) < model.GrantRank(model.GrantView) {
		return errNotFound(missing + ": " + store.ErrNotFound.Error())
	}
	if model.GrantRank(l) < model.GrantRank(n.level) {
		return forbidden("%s %s needs %s on project %q; user %q has %s", r.Method, r.URL.Path, n.level, project, c.name, l)
	}
	return nil
}

// auditRecorder keeps the status and, for a refusal, the error message of
// a change, for its audit entry.
type auditRecorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (a *auditRecorder) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *auditRecorder) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.status >= 400 && len(a.body) < 2048 {
		a.body = append(a.body, b[:min(len(b), 2048-len(a.body))]...)
	}
	return a.ResponseWriter.Write(b)
}

func (a *auditRecorder) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (h *handlers) auditEntry(r *http.Request, who, action string) store.AuditEntry {
	return store.AuditEntry{User: truncate(who, 64), Action: action, Resource: truncate(r.URL.Path, 1024), Address: clientAddr(r)}
}

// audit records one change with no transaction of its own (a login).
func (h *handlers) audit(r *http.Request, who, action string, rec *auditRecorder) {
	ctx, pending := store.WithAudit(r.Context(), h.auditEntry(r, who, action))
	h.finishAudit(r.WithContext(ctx), pending, rec)
}

// finishAudit completes one change's audit entry: who, what, on which
// path, from where (written with the change, in its transaction, when it
// has one: store.WithAudit), and how it ended. A failed write is logged;
// the change stands.
func (h *handlers) finishAudit(r *http.Request, pending *store.PendingAudit, rec *auditRecorder) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	outcome := "ok"
	if status >= 400 {
		outcome = http.StatusText(status)
		if m := errorMessage(rec.body); m != "" {
			outcome = m
		}
	}
	// The request may have been cancelled by now; the entry is still owed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	if err := h.Store.AuditFinish(ctx, pending, status, truncate(outcome, 1024)); err != nil {
		h.log.Error("audit entry lost", zap.String("request_id", requestID(r.Context())),
			zap.String("path", r.URL.Path), zap.Int("status", status), zap.Error(err))
	}
}

func errorMessage(body []byte) string {
	var e ErrorBody
	if jsonUnmarshal(body, &e) != nil {
		return ""
	}
	return e.Error.Message
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
