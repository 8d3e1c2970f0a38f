// Package client is a small typed Go client for Beluga's REST API, used by
// the CLI and by end-to-end tests. It decodes into the api package's wire
// types; any non-2xx answer is an *APIError.
package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// The wire types, under the names callers of this package use.
type (
	Project         = api.Project
	ApplyResult     = api.ApplyResult
	Workflow        = api.Workflow
	Instance        = api.Instance
	InstanceDetail  = api.InstanceDetail
	InstanceList    = api.InstanceList
	TaskInstance    = api.TaskInstance
	RunOptions      = api.RunRequest
	ActionAccepted  = api.ActionAccepted
	HistoryEntry    = api.HistoryEntry
	TaskGroup       = api.TaskGroup
	Schedule        = api.Schedule
	ScheduleRequest = api.ScheduleRequest
	Backfill        = api.Backfill
	BackfillRequest = api.BackfillRequest
	Calendar        = api.Calendar
	CalendarRequest = api.CalendarRequest
	Datasource      = api.Datasource
	DatasourceSpec  = api.DatasourceRequest
	DatasourceTest  = api.DatasourceTest
	LoginResponse   = api.LoginResponse
	Me              = api.Me
	Token           = api.Token
	NewToken        = api.NewToken
	User            = api.User
	Grant           = api.Grant
	AuditEntry      = api.AuditEntry
)

// ErrUnreachable wraps transport failures: the server could not be reached
// or the connection broke before an answer.
var ErrUnreachable = errors.New("cannot reach the server")

// ErrInvalidSpec marks a spec the client could not even send (no name, not
// YAML or JSON); nothing was sent.
var ErrInvalidSpec = errors.New("invalid workflow spec")

// APIError is a non-2xx answer.
type APIError struct {
	Status    int    // HTTP status
	Code      string // api.Code* ("not_found"...), or "http_<status>" when the body was not an API error
	Message   string
	RequestID string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// Client talks to one API server.
type Client struct {
	base  string
	hc    *http.Client
	token string // sent as Authorization: Bearer; "" sends none
}

// DefaultTimeout bounds one request when NewClient is given no client.
const DefaultTimeout = 30 * time.Second

// NewClient returns a client for baseURL ("http://127.0.0.1:12345"). A nil
// httpClient means one with DefaultTimeout.
func NewClient(baseURL string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: httpClient}
}

// WithToken returns a copy of c that authenticates with token (a login's
// session token or a personal access token).
func (c *Client) WithToken(token string) *Client {
	cc := *c
	cc.token = token
	return &cc
}

// Token is the token c sends ("" for none).
func (c *Client) Token() string { return c.token }

// BaseURL is the server's URL.
func (c *Client) BaseURL() string { return c.base }

// do sends a request and returns the response of a 2xx answer; the caller
// closes its body.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, contentType string, body []byte, headers ...[2]string) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	for _, h := range headers {
		req.Header.Set(h[0], h[1])
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the method and URL only repeat what the message says
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, c.base, err)
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return res, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var eb api.ErrorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
		return nil, &APIError{Status: res.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message, RequestID: eb.Error.RequestID}
	}
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = http.StatusText(res.StatusCode)
	}
	return nil, &APIError{Status: res.StatusCode, Code: "http_" + strconv.Itoa(res.StatusCode), Message: msg,
		RequestID: res.Header.Get("X-Request-Id")}
}

// call sends a JSON request (in may be nil) and decodes a JSON answer into
// out (may be nil).
func (c *Client) call(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body []byte
	ct := ""
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		ct = "application/json"
	}
	res, err := c.do(ctx, method, path, q, ct, body)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("decode the answer to %s %s: %w", method, path, err)
	}
	return nil
}

func esc(s string) string { return url.PathEscape(s) }

func workflowPath(project, name string) string {
	return "/api/v1/projects/" + esc(project) + "/workflows/" + esc(name)
}

// Health returns nil when the server answers /healthz with 200.
func (c *Client) Health(ctx context.Context) error {
	return c.call(ctx, "GET", "/healthz", nil, nil, nil)
}

// CreateProject creates a project.
func (c *Client) CreateProject(ctx context.Context, name, description string) (Project, error) {
	var p Project
	err := c.call(ctx, "POST", "/api/v1/projects", nil, api.CreateProjectRequest{Name: name, Description: description}, &p)
	return p, err
}

// ListProjects returns every project by name.
func (c *Client) ListProjects(ctx context.Context) ([]Project, error) {
	var l api.List[Project]
	err := c.call(ctx, "GET", "/api/v1/projects", nil, nil, &l)
	return l.Items, err
}

// GetProject returns one project.
func (c *Client) GetProject(ctx context.Context, name string) (Project, error) {
	var p Project
	err := c.call(ctx, "GET", "/api/v1/projects/"+esc(name), nil, nil, &p)
	return p, err
}

// ApplyWorkflow sends a spec (YAML or JSON) to project under the name the
// spec gives; the result says whether a new version was made.
func (c *Client) ApplyWorkflow(ctx context.Context, project string, specBytes []byte) (ApplyResult, error) {
	name, err := SpecName(specBytes)
	if err != nil {
		return ApplyResult{}, err
	}
	return c.ApplyWorkflowAs(ctx, project, name, specBytes)
}

// ApplyWorkflowAs sends a spec under name; the spec may leave its name out.
func (c *Client) ApplyWorkflowAs(ctx context.Context, project, name string, specBytes []byte) (ApplyResult, error) {
	return c.ApplyWorkflowMessage(ctx, project, name, specBytes, "")
}

// ApplyWorkflowMessage is ApplyWorkflowAs with the message of the commit a
// project in write_back mode makes of the save ("": the default); name ""
// is the spec's.
func (c *Client) ApplyWorkflowMessage(ctx context.Context, project, name string, specBytes []byte, message string) (ApplyResult, error) {
	if name == "" {
		var err error
		if name, err = SpecName(specBytes); err != nil {
			return ApplyResult{}, err
		}
	}
	ct := "application/yaml"
	if isJSON(specBytes) {
		ct = "application/json"
	}
	var q url.Values
	if message != "" {
		q = url.Values{"message": {message}}
	}
	res, err := c.do(ctx, "PUT", workflowPath(project, name), q, ct, specBytes)
	if err != nil {
		return ApplyResult{}, err
	}
	defer res.Body.Close()
	var out ApplyResult
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("decode the answer to PUT %s: %w", workflowPath(project, name), err)
	}
	return out, nil
}

func isJSON(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n\xef\xbb\xbf")
	return len(t) > 0 && t[0] == '{'
}

// SpecName reads the name a spec gives itself. A spec that cannot be read
// at all gets spec.Parse's message (the one the server would give); the
// error wraps ErrInvalidSpec.
func SpecName(b []byte) (string, error) {
	var top struct {
		Name string `json:"name" yaml:"name"`
	}
	var err error
	if isJSON(b) {
		err = json.Unmarshal(b, &top)
	} else {
		err = yaml.Unmarshal(b, &top)
	}
	if err != nil {
		if _, perr := spec.Parse(b); perr != nil {
			err = perr
		}
		return "", fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if top.Name == "" {
		return "", fmt.Errorf("%w: the spec has no name", ErrInvalidSpec)
	}
	return top.Name, nil
}

// GetWorkflow returns a version (0: the latest) with its spec.
func (c *Client) GetWorkflow(ctx context.Context, project, name string, version int) (Workflow, error) {
	var q url.Values
	if version > 0 {
		q = url.Values{"version": {strconv.Itoa(version)}}
	}
	var w Workflow
	err := c.call(ctx, "GET", workflowPath(project, name), q, nil, &w)
	return w, err
}

// ListWorkflows returns the latest version of each workflow of a project.
func (c *Client) ListWorkflows(ctx context.Context, project string) ([]Workflow, error) {
	var l api.List[Workflow]
	err := c.call(ctx, "GET", "/api/v1/projects/"+esc(project)+"/workflows", nil, nil, &l)
	return l.Items, err
}

// Versions returns every version of a workflow, newest first.
func (c *Client) Versions(ctx context.Context, project, name string) ([]Workflow, error) {
	var l api.List[Workflow]
	err := c.call(ctx, "GET", workflowPath(project, name)+"/versions", nil, nil, &l)
	return l.Items, err
}

// DeleteWorkflow deletes every version of a workflow.
func (c *Client) DeleteWorkflow(ctx context.Context, project, name string) error {
	return c.call(ctx, "DELETE", workflowPath(project, name), nil, nil, nil)
}

// Run starts a run and returns the new instance (state submitted).
func (c *Client) Run(ctx context.Context, project, name string, o RunOptions) (Instance, error) {
	var inst Instance
	err := c.call(ctx, "POST", workflowPath(project, name)+"/runs", nil, o, &inst)
	return inst, err
}

// GetInstance returns an instance with all its task instances.
func (c *Client) GetInstance(ctx context.Context, id int64) (InstanceDetail, error) {
	var d InstanceDetail
	err := c.call(ctx, "GET", "/api/v1/instances/"+strconv.FormatInt(id, 10), nil, nil, &d)
	return d, err
}

// InstanceQuery shapes GetInstancePage: a page of tasks (Limit 0: the
// server's default page; NoTasks: none) and Wait, a long poll that
// answers when the instance ends or after Wait (keep it under
// DefaultTimeout).
type InstanceQuery struct {
	TasksLimit, TasksOffset int
	NoTasks                 bool
	Wait                    time.Duration
	Forecast                bool // a running instance's projected end
}

// GetInstancePage returns an instance with one page of its tasks, the
// per-state task counts, and waits for its end as q says.
func (c *Client) GetInstancePage(ctx context.Context, id int64, q InstanceQuery) (InstanceDetail, error) {
	v := url.Values{}
	switch {
	case q.NoTasks:
		v.Set("tasks_limit", "0")
	case q.TasksLimit > 0:
		v.Set("tasks_limit", strconv.Itoa(q.TasksLimit))
	}
	if q.TasksOffset > 0 {
		v.Set("tasks_offset", strconv.Itoa(q.TasksOffset))
	}
	if q.Wait > 0 {
		v.Set("wait", q.Wait.String())
	}
	if q.Forecast {
		v.Set("forecast", "true")
	}
	var d InstanceDetail
	err := c.call(ctx, "GET", "/api/v1/instances/"+strconv.FormatInt(id, 10), v, nil, &d)
	return d, err
}

// InstanceFilter selects instances; zero fields match all (Limit 0: the
// server's default).
type InstanceFilter struct {
	Project  string
	Workflow string
	State    string
	Backfill int64 // runs of this backfill
	Limit    int
	Offset   int
}

// ListInstances returns one page of instances, newest first.
func (c *Client) ListInstances(ctx context.Context, f InstanceFilter) (InstanceList, error) {
	q := url.Values{}
	for k, v := range map[string]string{"project": f.Project, "workflow": f.Workflow, "state": f.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Offset != 0 {
		q.Set("offset", strconv.Itoa(f.Offset))
	}
	if f.Backfill != 0 {
		q.Set("backfill", strconv.FormatInt(f.Backfill, 10))
	}
	var l InstanceList
	err := c.call(ctx, "GET", "/api/v1/instances", q, nil, &l)
	return l, err
}

// GetTaskInstance returns one task instance.
func (c *Client) GetTaskInstance(ctx context.Context, id int64) (TaskInstance, error) {
	var t TaskInstance
	err := c.call(ctx, "GET", "/api/v1/task-instances/"+strconv.FormatInt(id, 10), nil, nil, &t)
	return t, err
}

// TaskLogPage reads up to limit bytes (0: the server's default) of a task's
// log from offset, and returns them with the offset to read next.
func (c *Client) TaskLogPage(ctx context.Context, id, offset, limit int64) (data []byte, next int64, err error) {
	data, next, _, err = c.taskLogPage(ctx, id, offset, limit, "")
	return data, next, err
}

// TaskLogStream copies one stream, "stdout" or "stderr", of a task's log
// (as it is now), from offset, to w, and returns the offset after the last
// byte of the whole log. recorded is false when the worker does not record
// the streams apart: all of the log is stdout then.
func (c *Client) TaskLogStream(ctx context.Context, id, offset int64, stream string, w io.Writer) (next int64, recorded bool, err error) {
	recorded = true
	for {
		data, next, h, err := c.taskLogPage(ctx, id, offset, logPage, stream)
		if err != nil {
			return offset, recorded, err
		}
		recorded = recorded && h.Get("X-Log-Streams") != "unrecorded"
		if _, err := w.Write(data); err != nil {
			return offset, recorded, err
		}
		// A filtered page may hold fewer bytes than the limit before the
		// end: the end is a page that does not advance.
		if next <= offset {
			return next, recorded, nil
		}
		offset = next
	}
}

func (c *Client) taskLogPage(ctx context.Context, id, offset, limit int64, stream string) (data []byte, next int64, h http.Header, err error) {
	q := url.Values{}
	if stream != "" {
		q.Set("stream", stream)
	}
	if offset > 0 {
		q.Set("offset", strconv.FormatInt(offset, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.FormatInt(limit, 10))
	}
	path := "/api/v1/task-instances/" + strconv.FormatInt(id, 10) + "/log"
	res, err := c.do(ctx, "GET", path, q, "", nil)
	if err != nil {
		return nil, offset, nil, err
	}
	defer res.Body.Close()
	data, err = io.ReadAll(res.Body)
	if err != nil {
		return nil, offset, nil, fmt.Errorf("%w at %s: read log: %w", ErrUnreachable, c.base, err)
	}
	next = offset + int64(len(data))
	if h := res.Header.Get("X-Next-Offset"); h != "" {
		if n, perr := strconv.ParseInt(h, 10, 64); perr == nil {
			next = n
		}
	}
	return data, next, res.Header, nil
}

// logPage is what TaskLog asks for at a time.
const logPage = 1 << 20

// TaskLog copies a task's whole log (as it is now), from offset, to w, page
// by page, and returns the offset after the last byte.
func (c *Client) TaskLog(ctx context.Context, id, offset int64, w io.Writer) (int64, error) {
	for {
		data, next, err := c.TaskLogPage(ctx, id, offset, logPage)
		if err != nil {
			return offset, err
		}
		if _, err := w.Write(data); err != nil {
			return offset, err
		}
		if len(data) < logPage || next <= offset {
			return next, nil
		}
		offset = next
	}
}

// Cluster returns the cluster view as the server sent it.
func (c *Client) Cluster(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.call(ctx, "GET", "/api/v1/cluster", nil, nil, &raw)
	return raw, err
}

// InstanceAction asks the master to act on an instance: stop, pause,
// resume, rerun or recover_failed. by names the operator ("" lets the
// server choose). A state that does not allow it is an *APIError with
// Status 409.
func (c *Client) InstanceAction(ctx context.Context, id int64, action, by string) (ActionAccepted, error) {
	var out ActionAccepted
	err := c.call(ctx, "POST", "/api/v1/instances/"+strconv.FormatInt(id, 10)+"/actions", nil,
		api.ActionRequest{Action: action, By: by}, &out)
	return out, err
}

// TaskAction asks the master to act on a task instance: kill or
// force_success.
func (c *Client) TaskAction(ctx context.Context, id int64, action, by string) (ActionAccepted, error) {
	var out ActionAccepted
	err := c.call(ctx, "POST", "/api/v1/task-instances/"+strconv.FormatInt(id, 10)+"/actions", nil,
		api.ActionRequest{Action: action, By: by}, &out)
	return out, err
}

// CreateTaskGroup creates a task group.
func (c *Client) CreateTaskGroup(ctx context.Context, name string, capacity int, description string) (TaskGroup, error) {
	var g TaskGroup
	err := c.call(ctx, "POST", "/api/v1/task-groups", nil,
		api.CreateTaskGroupRequest{Name: name, Capacity: capacity, Description: description}, &g)
	return g, err
}

// ListTaskGroups returns every task group by name, with its use.
func (c *Client) ListTaskGroups(ctx context.Context) ([]TaskGroup, error) {
	var l api.List[TaskGroup]
	err := c.call(ctx, "GET", "/api/v1/task-groups", nil, nil, &l)
	return l.Items, err
}

// GetTaskGroup returns one task group.
func (c *Client) GetTaskGroup(ctx context.Context, name string) (TaskGroup, error) {
	var g TaskGroup
	err := c.call(ctx, "GET", "/api/v1/task-groups/"+esc(name), nil, nil, &g)
	return g, err
}

// ResizeTaskGroup sets a task group's capacity.
func (c *Client) ResizeTaskGroup(ctx context.Context, name string, capacity int) (TaskGroup, error) {
	var g TaskGroup
	err := c.call(ctx, "PATCH", "/api/v1/task-groups/"+esc(name), nil, api.ResizeTaskGroupRequest{Capacity: &capacity}, &g)
	return g, err
}

// DeleteTaskGroup deletes a task group.
func (c *Client) DeleteTaskGroup(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", "/api/v1/task-groups/"+esc(name), nil, nil, nil)
}

func schedulePath(project, workflow string) string {
	return workflowPath(project, workflow) + "/schedule"
}

// PutSchedule creates or replaces a workflow's schedule with req (Enabled
// nil: enabled); created says which. A bad request is an *APIError with
// Status 400 naming the problem. Schedule.Request gives the request that
// puts a schedule back as it is, to change one field.
func (c *Client) PutSchedule(ctx context.Context, project, workflow string, req ScheduleRequest) (s Schedule, created bool, err error) {
	body, err := json.Marshal(req)
	if err != nil {
		return s, false, fmt.Errorf("encode schedule: %w", err)
	}
	path := schedulePath(project, workflow)
	res, err := c.do(ctx, "PUT", path, nil, "application/json", body)
	if err != nil {
		return s, false, err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return s, false, fmt.Errorf("decode the answer to PUT %s: %w", path, err)
	}
	return s, res.StatusCode == http.StatusCreated, nil
}

// GetSchedule returns a workflow's schedule with its next fire times.
func (c *Client) GetSchedule(ctx context.Context, project, workflow string) (Schedule, error) {
	var s Schedule
	err := c.call(ctx, "GET", schedulePath(project, workflow), nil, nil, &s)
	return s, err
}

// DeleteSchedule deletes a workflow's schedule; the runs it fired stay.
func (c *Client) DeleteSchedule(ctx context.Context, project, workflow string) error {
	return c.call(ctx, "DELETE", schedulePath(project, workflow), nil, nil, nil)
}

// ListSchedules returns the schedules of a project ("": of all), by id.
func (c *Client) ListSchedules(ctx context.Context, project string) ([]Schedule, error) {
	var q url.Values
	if project != "" {
		q = url.Values{"project": {project}}
	}
	var l api.List[Schedule]
	err := c.call(ctx, "GET", "/api/v1/schedules", q, nil, &l)
	return l.Items, err
}

// StartBackfill asks for a backfill of a workflow: one run per schedule
// time of req's range, submitted by the master. A bad request is an
// *APIError with Status 400 naming every problem.
func (c *Client) StartBackfill(ctx context.Context, project, workflow string, req BackfillRequest) (Backfill, error) {
	var b Backfill
	err := c.call(ctx, "POST", workflowPath(project, workflow)+"/backfill", nil, req, &b)
	return b, err
}

// GetBackfill returns a backfill with its progress and times.
func (c *Client) GetBackfill(ctx context.Context, id int64) (Backfill, error) {
	var b Backfill
	err := c.call(ctx, "GET", "/api/v1/backfills/"+strconv.FormatInt(id, 10), nil, nil, &b)
	return b, err
}

// BackfillFilter selects backfills; empty fields match all.
type BackfillFilter struct {
	Project  string
	Workflow string
	State    string // running, done, failed or stopped
}

// ListBackfills returns backfills, newest first.
func (c *Client) ListBackfills(ctx context.Context, f BackfillFilter) ([]Backfill, error) {
	q := url.Values{}
	for k, v := range map[string]string{"project": f.Project, "workflow": f.Workflow, "state": f.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var l api.List[Backfill]
	err := c.call(ctx, "GET", "/api/v1/backfills", q, nil, &l)
	return l.Items, err
}

// StopBackfill stops a running backfill: no more of its times are
// submitted; its runs go on. by names the operator ("" lets the server
// choose). One that is not running is an *APIError with Status 409.
func (c *Client) StopBackfill(ctx context.Context, id int64, by string) (Backfill, error) {
	var b Backfill
	err := c.call(ctx, "POST", "/api/v1/backfills/"+strconv.FormatInt(id, 10)+"/actions", nil,
		api.ActionRequest{Action: "stop", By: by}, &b)
	return b, err
}

// calendarPath is a calendar's URL: a project's, or shared for project "".
func calendarPath(project, name string) string {
	p := "/api/v1/calendars"
	if project != "" {
		p = "/api/v1/projects/" + esc(project) + "/calendars"
	}
	if name != "" {
		p += "/" + esc(name)
	}
	return p
}

// PutCalendar creates or replaces a business calendar of project ("":
// shared).
func (c *Client) PutCalendar(ctx context.Context, project, name string, req CalendarRequest) (cal Calendar, err error) {
	err = c.call(ctx, "PUT", calendarPath(project, name), nil, req, &cal)
	return cal, err
}

// ImportCalendar sends an ICS or CSV file (format "ics" or "csv") as the
// holidays of a calendar, or its extra working days when workdays is set;
// weekend, when not nil, sets the weekend days (mon..sun).
func (c *Client) ImportCalendar(ctx context.Context, project, name, format string, file []byte, workdays bool, weekend *[]string) (Calendar, error) {
	q := url.Values{"format": {format}}
	if workdays {
		q.Set("days", "workdays")
	}
	if weekend != nil {
		q.Set("weekend", strings.Join(*weekend, ","))
	}
	ct := map[string]string{"ics": "text/calendar", "csv": "text/csv"}[format]
	if ct == "" {
		ct = "application/octet-stream"
	}
	var cal Calendar
	res, err := c.do(ctx, "PUT", calendarPath(project, name), q, ct, file)
	if err != nil {
		return cal, err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&cal); err != nil {
		return cal, fmt.Errorf("decode the answer to PUT %s: %w", calendarPath(project, name), err)
	}
	return cal, nil
}

// GetCalendar returns a calendar of project ("": shared).
func (c *Client) GetCalendar(ctx context.Context, project, name string) (Calendar, error) {
	var cal Calendar
	err := c.call(ctx, "GET", calendarPath(project, name), nil, nil, &cal)
	return cal, err
}

// ListCalendars returns the calendars of project ("": the shared ones).
func (c *Client) ListCalendars(ctx context.Context, project string) ([]Calendar, error) {
	var l api.List[Calendar]
	err := c.call(ctx, "GET", calendarPath(project, ""), nil, nil, &l)
	return l.Items, err
}

// DeleteCalendar deletes a calendar; one in use is an *APIError with
// Status 409 naming the schedules.
func (c *Client) DeleteCalendar(ctx context.Context, project, name string) error {
	return c.call(ctx, "DELETE", calendarPath(project, name), nil, nil, nil)
}

// PutDatasource creates or replaces a datasource; created says which. A nil
// Password keeps the stored one.
func (c *Client) PutDatasource(ctx context.Context, name string, spec DatasourceSpec) (d Datasource, err error) {
	err = c.call(ctx, "PUT", "/api/v1/datasources/"+esc(name), nil, spec, &d)
	return d, err
}

// ListDatasources returns every datasource by name.
func (c *Client) ListDatasources(ctx context.Context) ([]Datasource, error) {
	var l api.List[Datasource]
	err := c.call(ctx, "GET", "/api/v1/datasources", nil, nil, &l)
	return l.Items, err
}

// GetDatasource returns one datasource (never its password).
func (c *Client) GetDatasource(ctx context.Context, name string) (Datasource, error) {
	var d Datasource
	err := c.call(ctx, "GET", "/api/v1/datasources/"+esc(name), nil, nil, &d)
	return d, err
}

// TestDatasource asks the API server to connect to a datasource.
func (c *Client) TestDatasource(ctx context.Context, name string) (DatasourceTest, error) {
	var r DatasourceTest
	err := c.call(ctx, "POST", "/api/v1/datasources/"+esc(name)+"/test", nil, nil, &r)
	return r, err
}

// DeleteDatasource deletes a datasource.
func (c *Client) DeleteDatasource(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", "/api/v1/datasources/"+esc(name), nil, nil, nil)
}

// Page asks a list for one page: at most Limit items (0: the server's
// default) after Cursor (the NextCursor of the page before; "": the
// first) whose names start with Prefix.
type Page struct {
	Limit  int
	Cursor string
	Prefix string
}

func (p Page) query(q url.Values) url.Values {
	if q == nil {
		q = url.Values{}
	}
	q.Set("limit", strconv.Itoa(cmp.Or(p.Limit, 50)))
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	if p.Prefix != "" {
		q.Set("prefix", p.Prefix)
	}
	return q
}

// WorkflowsPage returns one page of a project's workflows by name (latest
// versions); its NextCursor is "" on the last.
func (c *Client) WorkflowsPage(ctx context.Context, project string, p Page) (api.List[Workflow], error) {
	var l api.List[Workflow]
	err := c.call(ctx, "GET", "/api/v1/projects/"+esc(project)+"/workflows", p.query(nil), nil, &l)
	return l, err
}

// SchedulesPage returns one page of the schedules of a project ("": of
// all) by project and workflow name; its NextCursor is "" on the last.
func (c *Client) SchedulesPage(ctx context.Context, project string, p Page) (api.List[Schedule], error) {
	q := url.Values{}
	if project != "" {
		q.Set("project", project)
	}
	var l api.List[Schedule]
	err := c.call(ctx, "GET", "/api/v1/schedules", p.query(q), nil, &l)
	return l, err
}

// PutGitBinding binds project to a Git repository or changes its binding
// (a nil Password keeps the stored one).
func (c *Client) PutGitBinding(ctx context.Context, project string, req api.GitBindingRequest) (b api.GitBinding, err error) {
	err = c.call(ctx, "PUT", "/api/v1/projects/"+esc(project)+"/git", nil, req, &b)
	return b, err
}

// GetGitBinding returns project's Git binding and its last sync.
func (c *Client) GetGitBinding(ctx context.Context, project string) (b api.GitBinding, err error) {
	err = c.call(ctx, "GET", "/api/v1/projects/"+esc(project)+"/git", nil, nil, &b)
	return b, err
}

// DeleteGitBinding unbinds project from its repository.
func (c *Client) DeleteGitBinding(ctx context.Context, project string) error {
	return c.call(ctx, "DELETE", "/api/v1/projects/"+esc(project)+"/git", nil, nil, nil)
}

// SyncGit applies the head of project's branch; a refused commit is an
// error naming the file and the reason, and changes nothing.
func (c *Client) SyncGit(ctx context.Context, project string) (r api.GitSyncResult, err error) {
	err = c.call(ctx, "POST", "/api/v1/projects/"+esc(project)+"/git/sync", nil, nil, &r)
	return r, err
}
