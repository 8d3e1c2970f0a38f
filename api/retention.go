package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Retention (README "Retention", docs/architecture.md "Retention"): the
// global default is three settings admins set; a project's own policy
// overrides keep_days and keep_runs for its runs. A plan (dry run) lists
// what a purge would delete; a purge deletes the same, in bounded
// transactions, when an operator (or a scheduled `beluga retention purge`)
// asks: no purge runs by itself.

// retentionStore is retention's.
type retentionStore interface {
	RetentionGet(ctx context.Context, project string) (model.ProjectRetention, error)
	RetentionPut(ctx context.Context, project string, pr model.ProjectRetention, by string) (model.ProjectRetention, error)
	RetentionPlan(ctx context.Context, project string, p model.RetentionPolicy, now time.Time) (store.RetentionPlan, error)
	RetentionPurge(ctx context.Context, project string, p model.RetentionPolicy, now time.Time, opt store.PurgeOptions) (store.RetentionPlan, error)
	AuditRetentionPlan(ctx context.Context, days int, now time.Time) (store.AuditRetention, error)
	AuditRetentionPurge(ctx context.Context, days int, now time.Time, opt store.PurgeOptions) (store.AuditRetention, error)
}

// RetentionDefault is the global policy (GET/PUT /api/v1/retention).
type RetentionDefault struct {
	KeepDays  int `json:"keep_days"`
	KeepRuns  int `json:"keep_runs"`
	AuditDays int `json:"audit_days"`
}

// RetentionDefaultRequest is the body of PUT /api/v1/retention: a field
// left out keeps its value.
type RetentionDefaultRequest struct {
	KeepDays  *int `json:"keep_days"`
	KeepRuns  *int `json:"keep_runs"`
	AuditDays *int `json:"audit_days"`
}

// ProjectRetention is a project's policy: its own fields (null: the
// default) and the policy in force.
type ProjectRetention struct {
	Project   string                `json:"project"`
	KeepDays  *int                  `json:"keep_days"`
	KeepRuns  *int                  `json:"keep_runs"`
	Effective model.RetentionPolicy `json:"effective"`
	UpdatedBy string                `json:"updated_by,omitempty"`
	UpdatedAt *time.Time            `json:"updated_at,omitempty"`
}

// ProjectRetentionRequest is the body of PUT
// /api/v1/projects/{project}/retention: null or absent takes the default.
type ProjectRetentionRequest struct {
	KeepDays *int `json:"keep_days"`
	KeepRuns *int `json:"keep_runs"`
}

// RetentionPlan is a dry run's list of what a purge deletes, or what one
// deleted.
type RetentionPlan struct {
	Project     string                `json:"project"`
	Policy      model.RetentionPolicy `json:"policy"`
	At          time.Time             `json:"at"`
	Roots       []int64               `json:"roots"`
	Instances   []int64               `json:"instances"`
	Kept        map[string]int        `json:"kept"`
	TaskRows    int64                 `json:"task_rows"`
	HistoryRows int64                 `json:"history_rows"`
	EventRows   int64                 `json:"event_rows"`
	CommandRows int64                 `json:"command_rows"`
	LedgerRows  int64                 `json:"ledger_rows"`
	// DatasetEventRows: produced dataset partitions older than keep_days
	// that no decision needs any more.
	DatasetEventRows int64 `json:"dataset_event_rows"`
	LogFiles         int64 `json:"log_files"`
	// LogBytes (a plan's) is what the runs' log files take on the live
	// workers that answered; LogWorkersUnreached counts those that did not.
	LogBytes            int64   `json:"log_bytes,omitempty"`
	LogWorkersUnreached int     `json:"log_workers_unreached,omitempty"`
	Bytes               int64   `json:"bytes"`
	Skipped             []int64 `json:"skipped"`
	Unfinished          []int64 `json:"unfinished"`
}

// AuditRetention is the audit rows a plan or purge counts.
type AuditRetention struct {
	Days   int        `json:"days"`
	Before *time.Time `json:"before,omitempty"`
	Rows   int64      `json:"rows"`
	Bytes  int64      `json:"bytes"`
}

// RetentionRunRequest is the optional body of the global plan and purge:
// the projects to cover (empty: every project) and whether to cover the
// audit log (default true).
type RetentionRunRequest struct {
	Projects []string `json:"projects"`
	Audit    *bool    `json:"audit"`
}

// RetentionRun is the global plan's or purge's answer.
type RetentionRun struct {
	Projects []RetentionPlan `json:"projects"`
	Audit    *AuditRetention `json:"audit,omitempty"`
	Bytes    int64           `json:"bytes"`
}

// purgeOptions bound a purge's transactions (PurgeBatch and PurgePause in
// Deps override them, for tests and benchmarks).
func (h *handlers) purgeOptions() store.PurgeOptions {
	return store.PurgeOptions{Batch: h.PurgeBatch, Pause: h.PurgePause}
}

func fromPlan(p store.RetentionPlan) RetentionPlan {
	return RetentionPlan{Project: p.Project, Policy: p.Policy, At: p.At, Roots: orEmpty(p.Roots), Instances: orEmpty(p.Instances),
		Kept: p.Kept, TaskRows: p.TaskRows, HistoryRows: p.HistoryRows, EventRows: p.EventRows, CommandRows: p.CommandRows,
		LedgerRows: p.LedgerRows, DatasetEventRows: p.DatasetEventRows, LogFiles: p.LogFiles, Bytes: p.Bytes, Skipped: orEmpty(p.Skipped), Unfinished: orEmpty(p.Unfinished)}
}

func fromAudit(a store.AuditRetention) *AuditRetention {
	out := &AuditRetention{Days: a.Days, Rows: a.Rows, Bytes: a.Bytes}
	if !a.Before.IsZero() {
		b := a.Before
		out.Before = &b
	}
	return out
}

func orEmpty(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}

// retentionDefault reads the global policy from the settings table.
func (h *handlers) retentionDefault(ctx context.Context) RetentionDefault {
	h.settings.forget() // a PUT on another API server shows at once
	return RetentionDefault{
		KeepDays:  int(h.settings.get(ctx, model.SettingRetentionKeepDays)),
		KeepRuns:  int(h.settings.get(ctx, model.SettingRetentionKeepRuns)),
		AuditDays: int(h.settings.get(ctx, model.SettingRetentionAuditDays)),
	}
}

func (h *handlers) getRetentionDefault(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, h.retentionDefault(r.Context()))
	return nil
}

func (h *handlers) putRetentionDefault(w http.ResponseWriter, r *http.Request) error {
	var req RetentionDefaultRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	type change struct {
		name, field string
		v           *int
		most        int
	}
	changes := []change{
		{model.SettingRetentionKeepDays, "keep_days", req.KeepDays, model.MaxRetentionDays},
		{model.SettingRetentionKeepRuns, "keep_runs", req.KeepRuns, model.MaxRetentionRuns},
		{model.SettingRetentionAuditDays, "audit_days", req.AuditDays, model.MaxRetentionDays},
	}
	// Every field is checked before any is stored: bad input changes nothing.
	for _, c := range changes {
		if c.v != nil {
			if err := model.CheckRetentionValue(c.field, *c.v, c.most); err != nil {
				return badRequest("%v", err)
			}
		}
	}
	for _, c := range changes {
		if c.v != nil {
			if _, err := h.Store.SettingPut(r.Context(), c.name, strconv.Itoa(*c.v)); err != nil {
				return err
			}
		}
	}
	writeJSON(w, http.StatusOK, h.retentionDefault(r.Context()))
	return nil
}

// projectPolicy is project's own policy and the one in force.
func (h *handlers) projectPolicy(ctx context.Context, project string) (model.ProjectRetention, model.RetentionPolicy, error) {
	own, err := h.Store.RetentionGet(ctx, project)
	if err != nil {
		return own, model.RetentionPolicy{}, storeError(err)
	}
	def := h.retentionDefault(ctx)
	return own, own.Over(model.RetentionPolicy{KeepDays: def.KeepDays, KeepRuns: def.KeepRuns}), nil
}

func toProjectRetention(project string, own model.ProjectRetention, eff model.RetentionPolicy) ProjectRetention {
	out := ProjectRetention{Project: project, KeepDays: own.KeepDays, KeepRuns: own.KeepRuns, Effective: eff, UpdatedBy: own.UpdatedBy}
	if !own.UpdatedAt.IsZero() {
		t := own.UpdatedAt
		out.UpdatedAt = &t
	}
	return out
}

func (h *handlers) getProjectRetention(w http.ResponseWriter, r *http.Request) error {
	project := r.PathValue("project")
	own, eff, err := h.projectPolicy(r.Context(), project)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProjectRetention(project, own, eff))
	return nil
}

func (h *handlers) putProjectRetention(w http.ResponseWriter, r *http.Request) error {
	project := r.PathValue("project")
	var req ProjectRetentionRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	pr := model.ProjectRetention{KeepDays: req.KeepDays, KeepRuns: req.KeepRuns}
	if err := pr.Check(); err != nil {
		return badRequest("retention of project %q: %v", project, err)
	}
	by, err := requestedBy(r, "")
	if err != nil {
		return err
	}
	if _, err := h.Store.RetentionPut(r.Context(), project, pr, by); err != nil {
		return storeError(err)
	}
	own, eff, err := h.projectPolicy(r.Context(), project)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProjectRetention(project, own, eff))
	return nil
}

func (h *handlers) planProjectRetention(w http.ResponseWriter, r *http.Request) error {
	return h.runProjectRetention(w, r, false)
}

func (h *handlers) purgeProjectRetention(w http.ResponseWriter, r *http.Request) error {
	return h.runProjectRetention(w, r, true)
}

func (h *handlers) runProjectRetention(w http.ResponseWriter, r *http.Request, purge bool) error {
	project := r.PathValue("project")
	p, err := h.retainProject(r.Context(), project, time.Now().UTC(), purge)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// retainProject plans, or purges, one project under its policy in force.
func (h *handlers) retainProject(ctx context.Context, project string, now time.Time, purge bool) (RetentionPlan, error) {
	_, eff, err := h.projectPolicy(ctx, project)
	if err != nil {
		return RetentionPlan{}, err
	}
	var p store.RetentionPlan
	if purge {
		start := time.Now()
		p, err = h.Store.RetentionPurge(ctx, project, eff, now, h.purgeOptions())
		if err == nil {
			h.log.Info("retention purge", zap.String("project", project), zap.Int("runs", len(p.Instances)),
				zap.Int64("task_rows", p.TaskRows), zap.Int64("event_rows", p.EventRows), zap.Int("skipped", len(p.Skipped)),
				zap.Duration("took", time.Since(start)))
		}
	} else {
		p, err = h.Store.RetentionPlan(ctx, project, eff, now)
	}
	if err != nil {
		return RetentionPlan{}, storeError(err)
	}
	out := fromPlan(p)
	if sz, ok := h.Logs.(LogSizer); ok && !purge && p.LogFiles > 0 {
		// The log files are measured where they are: the database records
		// no sizes. A purge does not ask: its files go at the workers'
		// next sweeps (worker/logsweep.go).
		out.LogBytes, out.LogWorkersUnreached = sz.LogBytes(ctx, slices.Concat(p.Instances, p.Unfinished))
		out.Bytes += out.LogBytes
	}
	return out, nil
}

func (h *handlers) planRetention(w http.ResponseWriter, r *http.Request) error {
	return h.runRetention(w, r, false)
}

func (h *handlers) purgeRetention(w http.ResponseWriter, r *http.Request) error {
	return h.runRetention(w, r, true)
}

// runRetention plans or purges every project named (all when none) and
// the audit log, for admins.
func (h *handlers) runRetention(w http.ResponseWriter, r *http.Request, purge bool) error {
	var req RetentionRunRequest
	if err := decodeJSON(r, &req, true); err != nil {
		return err
	}
	ctx := r.Context()
	all, err := h.Store.ProjectList(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(all))
	for _, p := range all {
		names = append(names, p.Name)
	}
	if len(req.Projects) > 0 {
		for _, n := range req.Projects {
			if !slices.Contains(names, n) {
				return badRequest("projects: project %q does not exist", truncate(n, 128))
			}
		}
		names = req.Projects
	}
	now := time.Now().UTC()
	out := RetentionRun{Projects: []RetentionPlan{}}
	for _, n := range names {
		p, err := h.retainProject(ctx, n, now, purge)
		var he *httpError
		if errors.As(err, &he) && he.status == http.StatusNotFound {
			continue // deleted since the list
		}
		if err != nil {
			return fmt.Errorf("retention of project %q: %w", n, err)
		}
		out.Projects = append(out.Projects, p)
		out.Bytes += p.Bytes
	}
	if req.Audit == nil || *req.Audit {
		days := h.retentionDefault(ctx).AuditDays
		var a store.AuditRetention
		if purge {
			a, err = h.Store.AuditRetentionPurge(ctx, days, now, h.purgeOptions())
		} else {
			a, err = h.Store.AuditRetentionPlan(ctx, days, now)
		}
		if err != nil {
			return err
		}
		out.Audit = fromAudit(a)
		out.Bytes += a.Bytes
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
