package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
)

// commandTypeAction is the command type of operator actions; every other
// type is a start of some kind, consumed by InstanceClaimCommands.
const commandTypeAction = "action"

// actionCommandRow is a command row with the action columns of
// 0003_actions.sql; start commands are written through commandRow.
type actionCommandRow struct {
	ID                 int64
	Type               string
	WorkflowInstanceID int64
	TaskInstanceID     *int64
	Action             string
	RequestedBy        string
	Version            int // a restart's version when it is not the instance's (0: its own)
	CreatedAt          time.Time
}

func (actionCommandRow) TableName() string { return "command" }

type historyRow struct {
	ID                 int64
	WorkflowInstanceID int64
	TaskInstanceID     *int64
	Action             string
	RequestedBy        string
	At                 time.Time
	Detail             string
}

func (historyRow) TableName() string { return "instance_history" }

func (r historyRow) entry() model.HistoryEntry {
	e := model.HistoryEntry{ID: r.ID, InstanceID: r.WorkflowInstanceID, Action: model.ActionKind(r.Action),
		By: r.RequestedBy, At: r.At.UTC(), Detail: r.Detail}
	if r.TaskInstanceID != nil {
		e.TaskInstanceID = *r.TaskInstanceID
	}
	return e
}

func nullID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// actionStates are the instance states each instance action starts from.
var actionStates = map[model.ActionKind][]model.WorkflowState{
	model.ActionStop:          {model.WorkflowRunning, model.WorkflowSubmitted},
	model.ActionPause:         {model.WorkflowRunning, model.WorkflowSubmitted},
	model.ActionResume:        {model.WorkflowPaused, model.WorkflowStopped},
	model.ActionRerun:         {model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped},
	model.ActionRecoverFailed: {model.WorkflowSucceeded, model.WorkflowFailed, model.WorkflowStopped, model.WorkflowPaused},
}

// actionTarget is the state stop and pause move an instance to at once, so
// a second request sees it.
var actionTarget = map[model.ActionKind]model.WorkflowState{
	model.ActionStop:  model.WorkflowReadyStop,
	model.ActionPause: model.WorkflowReadyPause,
}

// taskActionStates are the task states each task action starts from.
var taskActionStates = map[model.ActionKind][]model.TaskState{
	model.ActionKill:         {model.TaskSubmitted, model.TaskDispatched, model.TaskRunning, model.TaskDelayed},
	model.ActionForceSuccess: {model.TaskFailed, model.TaskKilled},
	model.ActionForceStart:   {model.TaskSubmitted},
}

// restartActions change a finished instance only when the master acts, so
// a second one while the first waits would run the instance twice.
var restartActions = []model.ActionKind{model.ActionResume, model.ActionRerun, model.ActionRecoverFailed}

// ActionRequest validates an operator action against the current state and
// queues it for the master: one transaction writes an action command and a
// history row, and for stop and pause moves the instance to ready_stop or
// ready_pause. A missing instance or task is ErrNotFound; an action the
// current state does not allow (or that duplicates one still waiting) is
// ErrConflict, with a message naming the state; either changes nothing.
func (s *Store) ActionRequest(ctx context.Context, req model.ActionRequest) (model.ActionResult, error) {
	if err := checkActionRequest(req); err != nil {
		return model.ActionResult{}, err
	}
	var res model.ActionResult
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		res, err = requestActionTx(tx, req)
		return err
	})
	if err != nil {
		return model.ActionResult{}, err
	}
	return res, nil
}

// requestActionTx is ActionRequest inside tx (a plan's apply writes many).
func requestActionTx(tx *gorm.DB, req model.ActionRequest) (model.ActionResult, error) {
	res := model.ActionResult{InstanceID: req.InstanceID, TaskInstanceID: req.TaskInstanceID, Action: req.Action}
	err := func() error {
		// Locking reads on MySQL (SQLite transactions are serialized
		// anyway): every action on one instance queues behind the instance
		// row, so the checks below see the outcome of the previous one.
		// Order: task row, then instance row; no other transaction locks
		// them the other way round.
		lock := func() *gorm.DB { return tx.Clauses(clause.Locking{Strength: "UPDATE"}) }
		var task taskInstanceRow
		if req.TaskInstanceID != 0 {
			if err := lock().Take(&task, req.TaskInstanceID).Error; err != nil {
				return notFound(err, fmt.Sprintf("task instance %d", req.TaskInstanceID))
			}
			if req.InstanceID != 0 && req.InstanceID != task.WorkflowInstanceID {
				return fmt.Errorf("task instance %d of workflow instance %d: %w", req.TaskInstanceID, req.InstanceID, ErrNotFound)
			}
			res.InstanceID = task.WorkflowInstanceID
			res.TaskState = model.TaskState(task.State)
		}
		var inst workflowInstanceRow
		if err := lock().Take(&inst, res.InstanceID).Error; err != nil {
			return notFound(err, fmt.Sprintf("workflow instance %d", res.InstanceID))
		}
		state := model.WorkflowState(inst.State)
		res.State = state
		detail, err := checkAction(tx, req, inst, task)
		if err != nil {
			return err
		}
		version := 0
		if req.Version != 0 {
			if version, err = resolveVersion(tx, inst.ProjectID, inst.WorkflowName, req.Version); err != nil {
				return err
			}
			if version == inst.Version {
				version = 0 // its own
			}
			detail += fmt.Sprintf("; version %d", inst.Version)
			if version != 0 {
				detail += fmt.Sprintf(" -> %d", version)
			}
		}
		if to, ok := actionTarget[req.Action]; ok {
			up := tx.Model(&workflowInstanceRow{}).Where("id = ? AND state IN ?", inst.ID, wfStates(actionStates[req.Action])).
				Update("state", string(to))
			if up.Error != nil {
				return fmt.Errorf("%s instance %d: %w", req.Action, inst.ID, up.Error)
			}
			if up.RowsAffected == 0 { // lost a race (only possible without the row lock)
				var cur workflowInstanceRow
				if err := tx.Select("state").Take(&cur, inst.ID).Error; err != nil {
					return fmt.Errorf("read instance %d: %w", inst.ID, err)
				}
				return fmt.Errorf("cannot %s workflow instance %d: it is now %s: %w", req.Action, inst.ID, cur.State, ErrConflict)
			}
			res.State = to
			detail += " -> " + string(to)
			if err := appendEvents(tx, instanceChanges(inst.ID)); err != nil {
				return err
			}
		}
		now := time.Now().UTC()
		cmd := actionCommandRow{Type: commandTypeAction, WorkflowInstanceID: inst.ID, TaskInstanceID: nullID(req.TaskInstanceID),
			Action: string(req.Action), RequestedBy: req.By, Version: version, CreatedAt: now}
		if err := tx.Create(&cmd).Error; err != nil {
			return fmt.Errorf("insert %s command: %w", req.Action, err)
		}
		h := historyRow{WorkflowInstanceID: inst.ID, TaskInstanceID: nullID(req.TaskInstanceID), Action: string(req.Action),
			RequestedBy: req.By, At: now, Detail: clip(detail, model.MaxActionDetail)}
		if err := tx.Create(&h).Error; err != nil {
			return fmt.Errorf("insert history: %w", err)
		}
		res.CommandID = cmd.ID
		return nil
	}()
	return res, err
}

// checkActionRequest refuses requests no state could allow; the API checks
// the same first and answers 400.
func checkActionRequest(req model.ActionRequest) error {
	switch {
	case req.Action.OnInstance():
		if req.InstanceID <= 0 || req.TaskInstanceID != 0 {
			return fmt.Errorf("action %s needs a workflow instance id and no task instance id", req.Action)
		}
	case req.Action.OnTask():
		if req.TaskInstanceID <= 0 || req.InstanceID < 0 {
			return fmt.Errorf("action %s needs a task instance id", req.Action)
		}
	default:
		return fmt.Errorf("unknown action %q: use one of %s", req.Action, joinActions(append(model.InstanceActions(), model.TaskActions()...)))
	}
	if req.Version != 0 && req.Action != model.ActionRerun && req.Action != model.ActionRecoverFailed {
		return fmt.Errorf("action %s runs no version: only rerun and recover_failed take one", req.Action)
	}
	if req.Version < model.VersionLatest {
		return fmt.Errorf("version %d: want a version number or latest", req.Version)
	}
	if !utf8.ValidString(req.By) || utf8.RuneCountInString(req.By) > model.MaxActionBy {
		return fmt.Errorf("requested by: must be valid UTF-8 of at most %d characters", model.MaxActionBy)
	}
	return nil
}

// checkAction checks req against the locked rows and returns the history
// detail of an accepted request.
func checkAction(tx *gorm.DB, req model.ActionRequest, inst workflowInstanceRow, task taskInstanceRow) (string, error) {
	state := model.WorkflowState(inst.State)
	if req.Action.OnInstance() {
		from := actionStates[req.Action]
		if !slices.Contains(from, state) {
			return "", fmt.Errorf("cannot %s workflow instance %d: it is %s; %s needs a %s instance: %w",
				req.Action, inst.ID, state, req.Action, orList(wfStates(from)), ErrConflict)
		}
		if slices.Contains(restartActions, req.Action) {
			var waiting actionCommandRow
			err := tx.Where("type = ? AND workflow_instance_id = ? AND task_instance_id IS NULL AND action IN ?",
				commandTypeAction, inst.ID, actionNames(restartActions)).Order("id").Take(&waiting).Error
			switch {
			case err == nil:
				return "", fmt.Errorf("cannot %s workflow instance %d: a %s request (command %d) is still waiting for the master: %w",
					req.Action, inst.ID, waiting.Action, waiting.ID, ErrConflict)
			case !errors.Is(err, gorm.ErrRecordNotFound):
				return "", fmt.Errorf("read waiting commands of instance %d: %w", inst.ID, err)
			}
		}
		return "requested; instance " + string(state), nil
	}

	ts := model.TaskState(task.State)
	what := fmt.Sprintf("task instance %d (%s, attempt %d)", task.ID, task.Name, task.Attempt)
	if task.Superseded {
		return "", fmt.Errorf("cannot %s %s: a later attempt replaced it: %w", req.Action, what, ErrConflict)
	}
	from := taskActionStates[req.Action]
	if !slices.Contains(from, ts) {
		var want []string
		for _, f := range from {
			want = append(want, string(f))
		}
		return "", fmt.Errorf("cannot %s %s: it is %s; %s needs a %s task: %w",
			req.Action, what, ts, req.Action, orList(want), ErrConflict)
	}
	if req.Action == model.ActionForceStart && task.TaskGroup == "" {
		return "", fmt.Errorf("cannot force_start %s: it has no task group to wait for: %w", what, ErrConflict)
	}
	if req.Action == model.ActionForceSuccess && !state.Finished() && state != model.WorkflowRunning {
		return "", fmt.Errorf("cannot force_success %s: its workflow instance %d is %s; force_success needs a running or finished instance: %w",
			what, inst.ID, state, ErrConflict)
	}
	var waiting actionCommandRow
	err := tx.Where("type = ? AND task_instance_id = ? AND action = ?", commandTypeAction, task.ID, string(req.Action)).
		Order("id").Take(&waiting).Error
	switch {
	case err == nil:
		return "", fmt.Errorf("cannot %s %s: a %s request (command %d) is still waiting for the master: %w",
			req.Action, what, req.Action, waiting.ID, ErrConflict)
	case !errors.Is(err, gorm.ErrRecordNotFound):
		return "", fmt.Errorf("read waiting commands of task %d: %w", task.ID, err)
	}
	return fmt.Sprintf("requested; task %s attempt %d %s, instance %s", task.Name, task.Attempt, ts, state), nil
}

// ActionClaim consumes up to limit action commands, oldest first; each is
// deleted in its own transaction (fenced when this view has an epoch) and
// returned only when this call deleted it, so an action is handed out once
// even when two masters race.
func (s *Store) ActionClaim(ctx context.Context, limit int) ([]model.Action, error) {
	if limit <= 0 {
		limit = 100
	}
	var cmds []actionCommandRow
	if err := s.db.WithContext(ctx).Where("type = ?", commandTypeAction).Order("id").Limit(limit).Find(&cmds).Error; err != nil {
		return nil, fmt.Errorf("read action commands: %w", err)
	}
	var out []model.Action
	for _, c := range cmds {
		took := false
		err := s.tx(ctx, func(tx *gorm.DB) error {
			del := tx.Where("id = ? AND type = ?", c.ID, commandTypeAction).Delete(&actionCommandRow{})
			if del.Error != nil {
				return fmt.Errorf("delete action command %d: %w", c.ID, del.Error)
			}
			took = del.RowsAffected == 1
			return nil
		})
		if err != nil {
			return out, err
		}
		if took {
			a := model.Action{ID: c.ID, InstanceID: c.WorkflowInstanceID, Action: model.ActionKind(c.Action), By: c.RequestedBy,
				Version: c.Version, CreatedAt: c.CreatedAt.UTC()}
			if c.TaskInstanceID != nil {
				a.TaskInstanceID = *c.TaskInstanceID
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// InstanceHistory returns an instance's history, oldest first (empty for an
// unknown instance).
func (s *Store) InstanceHistory(ctx context.Context, instanceID int64) ([]model.HistoryEntry, error) {
	var rows []historyRow
	if err := s.db.WithContext(ctx).Where("workflow_instance_id = ?", instanceID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read history of instance %d: %w", instanceID, err)
	}
	out := make([]model.HistoryEntry, len(rows))
	for i, r := range rows {
		out[i] = r.entry()
	}
	return out, nil
}

// InstanceHistoryAdd records e (the master's outcome of an action, say) and returns
// it with its id. A zero At means now; By and Detail longer than their
// columns are cut. Fenced when this view has an epoch.
func (s *Store) InstanceHistoryAdd(ctx context.Context, e model.HistoryEntry) (model.HistoryEntry, error) {
	if e.InstanceID <= 0 {
		return e, fmt.Errorf("add history: instance id %d is not valid", e.InstanceID)
	}
	if e.Action == "" || len(e.Action) > model.MaxActionName {
		return e, fmt.Errorf("add history: action %q must be 1 to %d bytes", e.Action, model.MaxActionName)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.At = e.At.UTC()
	e.By, e.Detail = clip(e.By, model.MaxActionBy), clip(e.Detail, model.MaxActionDetail)
	r := historyRow{WorkflowInstanceID: e.InstanceID, TaskInstanceID: nullID(e.TaskInstanceID), Action: string(e.Action),
		RequestedBy: e.By, At: e.At, Detail: e.Detail}
	if err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&r).Error; err != nil {
			return err
		}
		return appendEvents(tx, historyChanges(e))
	}); err != nil {
		return e, fmt.Errorf("add history of instance %d: %w", e.InstanceID, err)
	}
	e.ID = r.ID
	return e, nil
}

// clip cuts s to at most n characters, keeping UTF-8 valid.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

func wfStates(ss []model.WorkflowState) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func actionNames(ks []model.ActionKind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

func joinActions(ks []model.ActionKind) string { return strings.Join(actionNames(ks), ", ") }

// orList writes "a, b or c".
func orList(ss []string) string {
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " or " + ss[len(ss)-1]
}

// InstanceEndUnstarted ends a run on its way to a stop or a pause that no runner
// holds: it was asked before any master started it (queued, or its start
// command not claimed). ready_stop becomes stopped, ready_pause paused, in
// one fenced transaction. It returns the instance as ended, and false
// when it was in neither state (or is gone): nothing changed.
func (s *Store) InstanceEndUnstarted(ctx context.Context, id int64, at time.Time) (model.WorkflowInstance, bool, error) {
	end := map[model.WorkflowState]model.WorkflowState{model.WorkflowReadyStop: model.WorkflowStopped, model.WorkflowReadyPause: model.WorkflowPaused}
	var out model.WorkflowInstance
	ended := false
	err := s.tx(ctx, func(tx *gorm.DB) error {
		ended = false
		var r workflowInstanceRow
		err := tx.Take(&r, id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read instance %d: %w", id, err)
		}
		to, ok := end[model.WorkflowState(r.State)]
		if !ok {
			return nil
		}
		reason := string(to) + " before it started"
		res := tx.Model(&workflowInstanceRow{}).Where("id = ? AND state = ?", id, r.State).
			UpdateColumns(map[string]any{"state": string(to), "queued": false, "end_time": at.UTC(), "reason": reason})
		if res.Error != nil {
			return fmt.Errorf("end instance %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		r.State, r.Queued, r.Reason = string(to), false, reason
		out, ended = r.model(), true
		return appendEvents(tx, instanceChanges(id))
	})
	return out, ended, err
}
