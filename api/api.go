// Package api is Beluga's REST API under /api/v1: projects, versioned
// workflow definitions, runs, cron schedules, instances, operator actions,
// task logs, task groups and the cluster view, described by the embedded
// OpenAPI document (openapi.yaml). Handlers only translate between HTTP and
// the store; the master picks up new runs and operator actions from the
// command table, and schedules from the schedule table.
package api

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/beluga-scheduler/beluga/api/ui"
	"github.com/beluga-scheduler/beluga/common/events"
	"github.com/beluga-scheduler/beluga/common/logspan"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
)

// LogReader fetches part of a task's log from the worker that ran it.
type LogReader interface {
	ReadLog(ctx context.Context, t model.TaskInstance, offset, limit int64) ([]byte, error)
}

// LogSizer is a LogReader that also measures what the task logs of runs
// take on the live workers (a retention plan's log_bytes): the bytes of
// the workers that answered and how many did not.
type LogSizer interface {
	LogBytes(ctx context.Context, instances []int64) (bytes int64, unreached int)
}

// StreamLogReader is a LogReader that also tells which bytes of a log came
// from the task's stderr (the log route's stream filter, its streams route).
type StreamLogReader interface {
	// ReadLogStreams reads up to limit bytes from offset, maybe fewer than
	// ReadLog would (a worker's window): the page says how many.
	ReadLogStreams(ctx context.Context, t model.TaskInstance, offset, limit int64) (LogPage, error)
}

// LogPage is part of a log with its streams.
type LogPage struct {
	Data []byte
	// Recorded says the worker records streams; without, all is stdout.
	Recorded bool
	// Stderr are the [start, end) byte ranges of the log, within the
	// page's, that came from stderr, in order.
	Stderr []logspan.Span
}

// Deps is what the handlers need. Only Store is required.
type Deps struct {
	Store Store
	// Notify is called after a run, an operator action or a schedule is
	// written, to wake the master (nil: the master finds the change on its
	// next poll).
	Notify func()
	// Logs reads task logs from workers (nil: log requests get 503).
	Logs LogReader
	// Cluster returns the body of GET /api/v1/cluster (nil: 501).
	Cluster func(ctx context.Context) (any, error)
	// Ready says whether /healthz answers 200 (nil: always ready).
	Ready func() bool
	// Isolation is how this process's worker isolates tasks, shown by
	// /healthz (nil: no worker here).
	Isolation func() TaskIsolation
	Log       *zap.Logger
	// Listen is the address the server listens on. On a loopback address
	// (or "") only loopback Host names are answered, against DNS
	// rebinding; on any other address every Host is, unless AllowedHosts
	// lists some.
	Listen string
	// Secrets seals and opens datasource passwords (nil: no key; storing
	// or testing a datasource with a password answers 503).
	Secrets *secret.Box
	// AllowedHosts are the further Host names answered (api.allowed_hosts;
	// "*": any). Loopback names are always answered.
	AllowedHosts []string
	// MetricsToken is the bearer token GET /metrics requires ("": /metrics
	// refuses every scrape).
	MetricsToken string
	// Events wakes event streams when the master in this process published
	// (standalone); nil: streams poll the outbox.
	Events *events.Hub
	// EndRecheck is how often a GET waiting for an instance's end re-reads
	// it, for ends this process is not told of (0: endRecheck).
	EndRecheck time.Duration
	// PurgeBatch and PurgePause bound a retention purge's transactions
	// (0: store.PurgeOptions' defaults, 200 rows and 10ms).
	PurgeBatch int
	PurgePause time.Duration
}

// The TaskSpec's type-dependent part of openapi.yaml and the UI's
// web/src/tasktypes.gen.ts come from the task-type registry.
//go:generate go run ./gentypes

//go:embed openapi.yaml
var openAPIDoc []byte

type handlers struct {
	Deps
	log    *zap.Logger
	limits *loginLimiter
	defs   defCache     // parsed workflow versions (the waits' graphs)
	hists  historyCache // what forecasts learned of running instances' pasts
	outage outageLog

	settings *settingsCache      // the quotas (settings table)
	admits   *admissionCache     // the leader's admission state
	streams  *streamSet          // open event streams: one poll, one recheck
	uploads  byteBudget          // spec bodies being read and parsed
	logReads userSlots           // log reads in flight per user
	logPages *semaphore.Weighted // bytes of log pages being read on this server (logPageBudget)
	gitSyncs *semaphore.Weighted // Git syncs running on this server (gitSyncsAtOnce)
}

// route is one entry of the route table. The table is the only place routes
// are declared; the OpenAPI test reads it.
type route struct {
	method  string
	pattern string // net/http ServeMux pattern without the method
	handle  func(*handlers, http.ResponseWriter, *http.Request) error
}

var routes = []route{
	{"GET", "/healthz", (*handlers).healthz},
	{"GET", "/api/v1/openapi.yaml", (*handlers).openAPI},
	{"GET", "/api/v1/task-types", (*handlers).listTaskTypes},

	{"POST", "/api/v1/login", (*handlers).login},
	{"POST", "/api/v1/logout", (*handlers).logout},
	{"GET", "/api/v1/me", (*handlers).me},
	{"POST", "/api/v1/me/password", (*handlers).changeOwnPassword},
	{"POST", "/api/v1/tokens", (*handlers).createToken},
	{"GET", "/api/v1/tokens", (*handlers).listTokens},
	{"DELETE", "/api/v1/tokens/{id}", (*handlers).deleteToken},
	{"GET", "/api/v1/users", (*handlers).listUsers},
	{"POST", "/api/v1/users", (*handlers).createUser},
	{"GET", "/api/v1/users/{name}", (*handlers).getUser},
	{"PATCH", "/api/v1/users/{name}", (*handlers).updateUser},
	{"GET", "/api/v1/audit", (*handlers).listAudit},
	{"GET", "/api/v1/projects/{project}/grants", (*handlers).listGrants},
	{"PUT", "/api/v1/projects/{project}/grants/{user}", (*handlers).putGrant},
	{"DELETE", "/api/v1/projects/{project}/grants/{user}", (*handlers).deleteGrant},

	{"POST", "/api/v1/projects", (*handlers).createProject},
	{"GET", "/api/v1/projects", (*handlers).listProjects},
	{"GET", "/api/v1/projects/{project}", (*handlers).getProject},
	{"PUT", "/api/v1/projects/{project}/git", (*handlers).putGitBinding},
	{"GET", "/api/v1/projects/{project}/git", (*handlers).getGitBinding},
	{"DELETE", "/api/v1/projects/{project}/git", (*handlers).deleteGitBinding},
	{"POST", "/api/v1/projects/{project}/git/sync", (*handlers).syncGit},
	{"POST", "/api/v1/git-hooks/{project}", (*handlers).gitHook},
	{"GET", "/api/v1/projects/{project}/promotion", (*handlers).getPromotionGate},
	{"PUT", "/api/v1/projects/{project}/promotion", (*handlers).putPromotionGate},
	{"POST", "/api/v1/projects/{project}/promotions", (*handlers).createPromotion},
	{"GET", "/api/v1/projects/{project}/promotions", (*handlers).listPromotions},
	{"GET", "/api/v1/projects/{project}/promotions/{id}", (*handlers).getPromotion},
	{"POST", "/api/v1/projects/{project}/promotions/{id}/approve", (*handlers).approvePromotion},
	{"POST", "/api/v1/projects/{project}/promotions/{id}/reject", (*handlers).rejectPromotion},

	{"GET", "/api/v1/projects/{project}/workflows", (*handlers).listWorkflows},
	{"PUT", "/api/v1/projects/{project}/workflows/{name}", (*handlers).applyWorkflow},
	{"GET", "/api/v1/projects/{project}/workflows/{name}", (*handlers).getWorkflow},
	{"DELETE", "/api/v1/projects/{project}/workflows/{name}", (*handlers).deleteWorkflow},
	{"GET", "/api/v1/projects/{project}/workflows/{name}/versions", (*handlers).listVersions},
	{"GET", "/api/v1/projects/{project}/workflows/{name}/diff", (*handlers).diffVersions},
	{"POST", "/api/v1/projects/{project}/workflows/{name}/runs", (*handlers).runWorkflow},
	{"PUT", "/api/v1/projects/{project}/workflows/{name}/schedule", (*handlers).putSchedule},
	{"GET", "/api/v1/projects/{project}/workflows/{name}/schedule", (*handlers).getSchedule},
	{"DELETE", "/api/v1/projects/{project}/workflows/{name}/schedule", (*handlers).deleteSchedule},
	{"POST", "/api/v1/projects/{project}/workflows/{name}/triggers", (*handlers).createTrigger},
	{"GET", "/api/v1/projects/{project}/workflows/{name}/triggers", (*handlers).listTriggers},
	{"GET", "/api/v1/projects/{project}/workflows/{name}/triggers/{trigger}", (*handlers).getTrigger},
	{"PATCH", "/api/v1/projects/{project}/workflows/{name}/triggers/{trigger}", (*handlers).updateTrigger},
	{"DELETE", "/api/v1/projects/{project}/workflows/{name}/triggers/{trigger}", (*handlers).deleteTrigger},
	{"POST", "/api/v1/projects/{project}/workflows/{name}/triggers/{trigger}/rotate", (*handlers).rotateTrigger},
	{"GET", "/api/v1/projects/{project}/workflows/{name}/triggers/{trigger}/deliveries", (*handlers).listTriggerDeliveries},
	{"POST", "/api/v1/hooks/{id}", (*handlers).deliver},
	{"GET", "/api/v1/projects/{project}/datasets", (*handlers).listDatasets},
	{"GET", "/api/v1/projects/{project}/datasets/{dataset}", (*handlers).getDataset},
	{"POST", "/api/v1/projects/{project}/datasets/{dataset}/events", (*handlers).postDatasetEvent},
	{"POST", "/api/v1/projects/{project}/datasets/{dataset}/events/plan", (*handlers).planDatasetEvent},
	{"GET", "/api/v1/projects/{project}/workflows/{name}/dataset-fires", (*handlers).listDatasetFires},
	{"GET", "/api/v1/projects/{project}/schedules/{id}/fires", (*handlers).listFires},
	{"POST", "/api/v1/projects/{project}/schedules/{id}/fires/compensate", (*handlers).compensateFires},
	{"GET", "/api/v1/schedules", (*handlers).listSchedules},
	{"POST", "/api/v1/schedule-preview", (*handlers).schedulePreview},
	{"POST", "/api/v1/projects/{project}/workflows/{name}/backfill", (*handlers).startBackfill},
	{"POST", "/api/v1/projects/{project}/workflows/{name}/backfill/preview", (*handlers).previewBackfill},
	{"GET", "/api/v1/backfills", (*handlers).listBackfills},
	{"GET", "/api/v1/backfills/{id}", (*handlers).getBackfill},
	{"POST", "/api/v1/backfills/{id}/actions", (*handlers).backfillAction},

	{"GET", "/api/v1/instances", (*handlers).listInstances},
	{"GET", "/api/v1/instances/{id}", (*handlers).getInstance},
	{"GET", "/api/v1/instances/{id}/diff", (*handlers).diffInstance},
	{"GET", "/api/v1/instances/{id}/datasets", (*handlers).instanceDatasets},
	{"POST", "/api/v1/instances/{id}/actions", (*handlers).instanceAction},
	{"POST", "/api/v1/instances/{id}/plan", (*handlers).createPlan},
	{"POST", "/api/v1/projects/{project}/workflows/{name}/runs/plan", (*handlers).planRun},
	{"POST", "/api/v1/projects/{project}/workflows/{name}/backfill/plan", (*handlers).planBackfill},
	{"GET", "/api/v1/plans/{id}", (*handlers).getPlan},
	{"POST", "/api/v1/plans/{id}/apply", (*handlers).applyPlan},
	{"GET", "/api/v1/task-instances", (*handlers).listTaskInstances},
	{"GET", "/api/v1/task-instances/{id}", (*handlers).getTaskInstance},
	{"GET", "/api/v1/task-instances/{id}/log", (*handlers).taskLog},
	{"GET", "/api/v1/task-instances/{id}/log/streams", (*handlers).taskLogStreams},
	{"POST", "/api/v1/task-instances/{id}/actions", (*handlers).taskAction},

	{"POST", "/api/v1/task-groups", (*handlers).createTaskGroup},
	{"GET", "/api/v1/task-groups", (*handlers).listTaskGroups},
	{"GET", "/api/v1/task-groups/{name}", (*handlers).getTaskGroup},
	{"PATCH", "/api/v1/task-groups/{name}", (*handlers).resizeTaskGroup},
	{"DELETE", "/api/v1/task-groups/{name}", (*handlers).deleteTaskGroup},

	{"GET", "/api/v1/calendars", (*handlers).listCalendars},
	{"PUT", "/api/v1/calendars/{name}", (*handlers).putCalendar},
	{"GET", "/api/v1/calendars/{name}", (*handlers).getCalendar},
	{"DELETE", "/api/v1/calendars/{name}", (*handlers).deleteCalendar},
	{"GET", "/api/v1/projects/{project}/calendars", (*handlers).listCalendars},
	{"PUT", "/api/v1/projects/{project}/calendars/{name}", (*handlers).putCalendar},
	{"GET", "/api/v1/projects/{project}/calendars/{name}", (*handlers).getCalendar},
	{"DELETE", "/api/v1/projects/{project}/calendars/{name}", (*handlers).deleteCalendar},

	{"GET", "/api/v1/datasources", (*handlers).listDatasources},
	{"PUT", "/api/v1/datasources/{name}", (*handlers).putDatasource},
	{"GET", "/api/v1/datasources/{name}", (*handlers).getDatasource},
	{"DELETE", "/api/v1/datasources/{name}", (*handlers).deleteDatasource},
	{"POST", "/api/v1/datasources/{name}/test", (*handlers).testDatasource},

	{"GET", "/api/v1/cluster", (*handlers).cluster},

	{"GET", "/api/v1/events", (*handlers).events},
	{"GET", "/api/v1/subscriptions", (*handlers).listSubscriptions},
	{"PUT", "/api/v1/subscriptions/{name}", (*handlers).putSubscription},
	{"GET", "/api/v1/subscriptions/{name}", (*handlers).getSubscription},
	{"DELETE", "/api/v1/subscriptions/{name}", (*handlers).deleteSubscription},
	{"GET", "/api/v1/subscriptions/{name}/deliveries", (*handlers).listDeliveries},

	{"GET", "/api/v1/alert-channels", (*handlers).listAlertChannels},
	{"PUT", "/api/v1/alert-channels/{name}", (*handlers).putAlertChannel},
	{"GET", "/api/v1/alert-channels/{name}", (*handlers).getAlertChannel},
	{"DELETE", "/api/v1/alert-channels/{name}", (*handlers).deleteAlertChannel},
	{"POST", "/api/v1/alert-channels/{name}/test", (*handlers).testAlertChannel},
	{"GET", "/api/v1/alerts", (*handlers).listAlerts},
	{"GET", "/api/v1/settings", (*handlers).listSettings},
	{"PUT", "/api/v1/settings/{name}", (*handlers).putSetting},

	{"GET", "/api/v1/retention", (*handlers).getRetentionDefault},
	{"PUT", "/api/v1/retention", (*handlers).putRetentionDefault},
	{"POST", "/api/v1/retention/plan", (*handlers).planRetention},
	{"POST", "/api/v1/retention/purge", (*handlers).purgeRetention},
	{"GET", "/api/v1/projects/{project}/retention", (*handlers).getProjectRetention},
	{"PUT", "/api/v1/projects/{project}/retention", (*handlers).putProjectRetention},
	{"POST", "/api/v1/projects/{project}/retention/plan", (*handlers).planProjectRetention},
	{"POST", "/api/v1/projects/{project}/retention/purge", (*handlers).purgeProjectRetention},
}

func newHandlers(d Deps) *handlers {
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("api")
	return &handlers{Deps: d, log: log, limits: newLoginLimiter(),
		settings: &settingsCache{store: d.Store, log: log}, admits: &admissionCache{store: d.Store, log: log}, streams: newStreamSet(d.Store, d.Events, log),
		logPages: semaphore.NewWeighted(logPageBudget), gitSyncs: semaphore.NewWeighted(gitSyncsAtOnce)}
}

// NewHandler returns the API with its middleware, and the web UI at "/".
// Unknown paths get a JSON 404 and known paths with the wrong method a JSON
// 405 with Allow.
func NewHandler(d Deps) http.Handler {
	h := newHandlers(d)
	log := h.log
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	var patterns []string
	for _, rt := range routes {
		route := rt.method + " " + rt.pattern
		mux.Handle(route, instrument(route, compressed(route, h.guard(rt, h.bind(rt.handle)))))
		if _, ok := allowed[rt.pattern]; !ok {
			patterns = append(patterns, rt.pattern)
		}
		allowed[rt.pattern] = append(allowed[rt.pattern], rt.method)
		if rt.method == http.MethodGet {
			allowed[rt.pattern] = append(allowed[rt.pattern], http.MethodHead)
		}
	}
	// A pattern without a method is less specific than the same pattern
	// with one, so these catch only the methods not routed above.
	for _, p := range patterns {
		methods := slices.Clone(allowed[p])
		slices.Sort(methods)
		allow := strings.Join(methods, ", ")
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
				"method "+r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+allow)
		})
	}
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusNotFound, CodeNotFound, "no such route: "+r.Method+" "+r.URL.Path)
	})
	// The web UI is not part of the REST API, so it stays out of the route
	// table (and openapi.yaml); /api/... never reaches it.
	app := ui.Handler(notFound)
	mux.Handle("GET /{$}", app)
	mux.Handle("GET "+ui.AssetPrefix, app)
	mux.Handle("/", notFound)
	return withMetrics(chain(mux, log, newHostPolicy(d.Listen, d.AllowedHosts)), d.MetricsToken)
}

func (h *handlers) bind(f func(*handlers, http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(h, w, r); err != nil {
			h.fail(w, r, err)
		}
	})
}

func (h *handlers) healthz(w http.ResponseWriter, r *http.Request) error {
	if h.Ready != nil && !h.Ready() {
		writeError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "not ready")
		return nil
	}
	hl := Health{Status: "ok", Admission: fromAdmission(h.admits.get(r.Context()))}
	if h.Isolation != nil {
		ti := h.Isolation()
		if ti.RunsAsServer {
			ti.UsersCode = "non-admins' shell and python tasks are refused (setting " + settingUnsandboxedCode + " is 0)"
			if h.settings.get(r.Context(), settingUnsandboxedCode) != 0 {
				ti.UsersCode = "non-admins may run shell and python tasks as the server's user (setting " + settingUnsandboxedCode + " is 1)"
			}
		}
		hl.Tasks = &ti
	}
	writeJSON(w, http.StatusOK, hl)
	return nil
}

func (h *handlers) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(openAPIDoc)
	return nil
}

func (h *handlers) cluster(w http.ResponseWriter, r *http.Request) error {
	if h.Cluster == nil {
		return &httpError{http.StatusNotImplemented, CodeNotImplemented, "this server has no cluster view"}
	}
	v, err := h.Cluster(r.Context())
	if err != nil {
		h.log.Warn("cluster view failed", zap.String("request_id", requestID(r.Context())), zap.Error(err))
		return &httpError{http.StatusServiceUnavailable, CodeUnavailable, "cluster view unavailable: " + err.Error()}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode cluster view: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
	return nil
}
