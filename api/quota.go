package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
)

// The quotas an admin sets in the settings table (GET/PUT
// /api/v1/settings). Each keeps one user from taking what every user
// shares; going over answers 429 naming the setting.
const (
	settingStreamsPerUser  = "quota.event_streams_per_user"
	settingLogReadsPerUser = "quota.log_reads_per_user"
	settingUploadBytes     = "quota.spec_upload_bytes"
)

// settingDef is one setting: its default (the same as sql/*/0030 seeds)
// and its bounds.
type settingDef struct {
	def, min, max int64
	doc           string
}

var settingDefs = map[string]settingDef{
	settingStreamsPerUser:  {8, 1, 10000, "open event streams (GET /api/v1/events) per user on one API server"},
	settingLogReadsPerUser: {4, 1, 1000, "task log reads in flight per user on one API server"},
	settingUploadBytes: {32 << 20, 1 << 20, 1 << 34,
		"bytes of workflow spec bodies being read at once on one API server (a body counts its declared or maximum size)"},
	// Read by the master at each new child run (common/store.SettingInt).
	model.SettingSubWorkflowDepth: {model.DefaultSubWorkflowDepth, 1, 100, "levels of sub_workflow runs below a root run"},
	model.SettingInstancesPerRun:  {model.DefaultInstancesPerRun, 1, 100000, "runs one root run may make through sub_workflow, itself included"},
	model.SettingVersionsPerWorkflow: {model.DefaultVersionsPerWorkflow, 1, 1000000,
		"versions one workflow keeps: an apply that would make one more is refused (400)"},
	model.SettingRetentionKeepDays:   {0, 0, model.MaxRetentionDays, "days a finished run is kept after its end, unless a project sets its own (0: no limit; see retention)"},
	model.SettingRetentionKeepRuns:   {0, 0, model.MaxRetentionRuns, "newest runs of each workflow kept, unless a project sets its own (0: no limit; see retention)"},
	model.SettingRetentionAuditDays:  {0, 0, model.MaxRetentionDays, "days audit log rows are kept by a retention purge (0: forever)"},
	model.SettingRetentionPurgeEvery: {24, 0, 8760, "hours between the leader master's retention sweeps of every project and the audit log (0: only when asked)"},
	// Read by the leader's command consumer at most every second (docs/architecture.md, Admission).
	model.SettingMaxRunningInstances: {model.DefaultMaxRunningInstances, 1, 10000000,
		"workflow instances the leading master runs at once; past it new runs wait in the database, submitted with a reason"},
	model.SettingMaxPendingEvents: {model.DefaultMaxPendingEvents, 1, 1000000000,
		"events written but not yet published past which the leading master starts no new runs (they wait, submitted with a reason)"},
	model.SettingClaimBatch: {model.DefaultClaimBatch, 1, 10000, "start commands the leading master claims in one pass (one transaction)"},
	settingUnsandboxedCode: {0, 0, 1, "1 lets non-admins apply and run shell and python tasks on a server that is not root " +
		"(its tasks run as its own OS user, unsandboxed); 0 refuses them"},
}

// settingsTTL is how long a read of the settings table serves: a change
// takes effect on every API server within it, and requests do not query it.
const settingsTTL = 5 * time.Second

// settingsCache serves the settings from one read per settingsTTL.
type settingsCache struct {
	store settingsStore
	log   *zap.Logger

	mu   sync.Mutex
	at   time.Time
	vals map[string]int64
}

// get returns the value of setting name: the stored one when it reads and
// is in bounds, else its default (a read that fails is logged and tried
// again at the next TTL; quotas never fail a request).
func (c *settingsCache) get(ctx context.Context, name string) int64 {
	d := settingDefs[name]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vals == nil || time.Since(c.at) > settingsTTL {
		c.at = time.Now()
		if vals, err := c.read(ctx); err != nil {
			c.log.Warn("read settings failed; keeping the last ones", zap.Error(err))
		} else {
			c.vals = vals
		}
	}
	if v, ok := c.vals[name]; ok {
		return v
	}
	return d.def
}

func (c *settingsCache) read(ctx context.Context) (map[string]int64, error) {
	rows, err := c.store.SettingList(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range rows {
		if d, ok := settingDefs[r.Name]; ok {
			if v, err := checkSetting(r.Name, d, r.Value); err == nil {
				out[r.Name] = v
			}
		}
	}
	return out, nil
}

// forget drops the cached values (after a PUT on this server).
func (c *settingsCache) forget() {
	c.mu.Lock()
	c.vals = nil
	c.mu.Unlock()
}

func checkSetting(name string, d settingDef, value string) (int64, error) {
	v, err := strconv.ParseInt(value, 10, 64)
	if err != nil || v < d.min || v > d.max {
		return 0, fmt.Errorf("setting %s must be an integer from %d to %d, got %q", name, d.min, d.max, value)
	}
	return v, nil
}

// tooMany is the 429 of a quota.
func tooMany(format string, args ...any) *httpError {
	return &httpError{http.StatusTooManyRequests, CodeTooManyRequests, fmt.Sprintf(format, args...)}
}

// SettingValue is one setting as GET /api/v1/settings shows it.
type SettingValue struct {
	Name    string `json:"name"`
	Value   int64  `json:"value"`
	Default int64  `json:"default"`
	Min     int64  `json:"min"`
	Max     int64  `json:"max"`
	Doc     string `json:"doc"`
}

// SettingRequest is the body of PUT /api/v1/settings/{name}.
type SettingRequest struct {
	Value int64 `json:"value"`
}

func (h *handlers) settingValue(ctx context.Context, name string) SettingValue {
	d := settingDefs[name]
	return SettingValue{Name: name, Value: h.settings.get(ctx, name), Default: d.def, Min: d.min, Max: d.max, Doc: d.doc}
}

func (h *handlers) listSettings(w http.ResponseWriter, r *http.Request) error {
	h.settings.forget()
	out := List[SettingValue]{Items: []SettingValue{}}
	for _, name := range []string{settingStreamsPerUser, settingLogReadsPerUser, settingUploadBytes,
		model.SettingSubWorkflowDepth, model.SettingInstancesPerRun, model.SettingVersionsPerWorkflow, settingUnsandboxedCode,
		model.SettingRetentionKeepDays, model.SettingRetentionKeepRuns, model.SettingRetentionAuditDays, model.SettingRetentionPurgeEvery,
		model.SettingMaxRunningInstances, model.SettingMaxPendingEvents, model.SettingClaimBatch} {
		out.Items = append(out.Items, h.settingValue(r.Context(), name))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) putSetting(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	d, ok := settingDefs[name]
	if !ok {
		return errNotFound(fmt.Sprintf("setting %q: no such setting", truncate(name, 128)))
	}
	var req SettingRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	v := strconv.FormatInt(req.Value, 10)
	if _, err := checkSetting(name, d, v); err != nil {
		return badRequest("%v", err)
	}
	if _, err := h.Store.SettingPut(r.Context(), name, v); err != nil {
		return err
	}
	h.settings.forget()
	writeJSON(w, http.StatusOK, h.settingValue(r.Context(), name))
	return nil
}

// holdLogRead admits one log read of a page of limit bytes: the caller's
// while she holds fewer than quota.log_reads_per_user (each read holds a
// worker connection and a page buffer until it ends, so one user's parallel
// reads of a large log must not take what other users' reads need), and its
// page within logPageBudget.
func (h *handlers) holdLogRead(r *http.Request, limit int64) (release func(), err error) {
	giveSlot := func() {}
	if c := callerOf(r.Context()); c != nil {
		most := h.settings.get(r.Context(), settingLogReadsPerUser)
		if held, ok := h.logReads.take(c.id, most); !ok {
			return nil, tooMany("too many log reads: user %q has %d in flight, the limit is %d (setting %s); wait for one to end",
				c.name, held, most, settingLogReadsPerUser)
		}
		giveSlot = func() { h.logReads.give(c.id) }
	}
	givePage, err := h.holdLogPage(r, limit)
	if err != nil {
		giveSlot()
		return nil, err
	}
	return func() { givePage(); giveSlot() }, nil
}

// A log read holds its page (up to its limit, 8 MiB at most) several times
// over while it crosses from the worker: read from the file, framed, and
// received. logPageBudget bounds the pages in flight on one API server, so
// that many users' reads of a large log (40 reads of a 100 MB one took
// 832 MB before) cost a bounded amount; a read past it waits for one to
// end, first come first served, and after logPageWait gives up with 429.
const (
	logPageBudget = 32 << 20
	logPageWait   = 30 * time.Second
)

// holdLogPage reserves a page of limit bytes from logPageBudget.
func (h *handlers) holdLogPage(r *http.Request, limit int64) (release func(), err error) {
	n := min(limit, logPageBudget)
	ctx, cancel := context.WithTimeout(r.Context(), logPageWait)
	defer cancel()
	if err := h.logPages.Acquire(ctx, n); err != nil {
		if r.Context().Err() != nil {
			return nil, r.Context().Err()
		}
		return nil, tooMany("the log reads in flight on this server hold its %d MiB budget for pages and none ended "+
			"within %s; try again shortly, or ask for a smaller page (limit)", logPageBudget>>20, logPageWait)
	}
	return func() { h.logPages.Release(n) }, nil
}

// holdUpload admits a spec body by its size (its Content-Length, else the
// most a body may be) while the bodies being read and parsed on this server
// stay within quota.spec_upload_bytes: parsing a spec takes many times its
// size, and six 8 MiB specs at once took 1.2 GB.
func (h *handlers) holdUpload(r *http.Request) (release func(), err error) {
	n := r.ContentLength
	if n < 0 || n > MaxBodyBytes {
		n = MaxBodyBytes
	}
	limit := h.settings.get(r.Context(), settingUploadBytes)
	if inFlight, ok := h.uploads.take(n, limit); !ok {
		return nil, tooMany("too many workflow specs being uploaded: %d bytes are in flight on this server and this body "+
			"of %d bytes would pass the limit of %d (setting %s); try again shortly", inFlight, n, limit, settingUploadBytes)
	}
	return func() { h.uploads.give(n) }, nil
}
