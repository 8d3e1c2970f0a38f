package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
)

// Master-run logic tasks (sub_workflow, dependent): the writes that link a
// parent task attempt to its child run, and the reads a dependent waits on.

// ChildRequest asks for the child run of a sub_workflow attempt.
type ChildRequest struct {
	ParentInstanceID int64
	ParentTaskID     int64
	Project          string
	Workflow         string
	Version          int       // 0: the latest created at or before AsOf
	AsOf             time.Time // the parent's start
	Params           map[string]string
	ScheduleTime     *time.Time // the parent's, so the child's dates match
	Timezone         string
	Priority         *model.Priority
	// Continue decides, from the state of a child an earlier attempt of the
	// same task started, the action that continues it ("": none).
	Continue func(child model.WorkflowState) model.ActionKind
	// Limits caps what a new child may add to its root run's tree (a
	// child attached or adopted adds nothing and is never refused).
	Limits ChildLimits
}

// ChildLimits caps a root run's tree of sub_workflow children (0: no cap).
type ChildLimits struct {
	Depth     int64 // levels below the root run
	Instances int64 // runs in the tree, the root included
}

// ErrLimit marks a new child run refused by ChildLimits.
var ErrLimit = errors.New("limit reached")

// checkChildLimits refuses a new child of parent past lim: its depth by the
// chain of parents, and the runs of its root's tree counted by parent.
func checkChildLimits(tx *gorm.DB, parent int64, lim ChildLimits) error {
	if lim.Depth <= 0 && lim.Instances <= 0 {
		return nil
	}
	root, depth := parent, int64(1)
	for {
		var up []sql.NullInt64
		if err := tx.Model(&workflowInstanceRow{}).Where("id = ?", root).Pluck("parent_instance_id", &up).Error; err != nil {
			return fmt.Errorf("read parent of run %d: %w", root, err)
		}
		if len(up) == 0 || !up[0].Valid {
			break
		}
		root, depth = up[0].Int64, depth+1
		if lim.Depth > 0 && depth > lim.Depth {
			break // deep enough to refuse; the root's id is not needed
		}
	}
	if lim.Depth > 0 && depth > lim.Depth {
		return fmt.Errorf("a new sub_workflow run would be %d or more levels below its root run, the limit is %d (setting %s): %w",
			depth, lim.Depth, model.SettingSubWorkflowDepth, ErrLimit)
	}
	if lim.Instances <= 0 {
		return nil
	}
	var n int64
	err := tx.Raw(`WITH RECURSIVE tree(id) AS (SELECT id FROM workflow_instance WHERE id = ?
		UNION ALL SELECT w.id FROM workflow_instance w JOIN tree t ON w.parent_instance_id = t.id)
		SELECT COUNT(*) FROM tree`, root).Scan(&n).Error
	if err != nil {
		return fmt.Errorf("count the runs of root run %d: %w", root, err)
	}
	if n >= lim.Instances {
		return fmt.Errorf("root run %d has made %d runs (itself included), the limit is %d (setting %s): %w",
			root, n, lim.Instances, model.SettingInstancesPerRun, ErrLimit)
	}
	return nil
}

// ChildStart is what StartChild did.
type ChildStart struct {
	Child    model.WorkflowInstance
	Created  bool             // a new child run (its start command written)
	Adopted  bool             // a child of an earlier attempt, now this attempt's
	Action   model.ActionKind // queued on an adopted child to continue it
	Attached bool             // the attempt already had its child (a rebuild)
}

// InstanceStartChild gives a sub_workflow attempt its child, in one fenced
// transaction that also records the link both ways and moves the attempt to
// running: the child the attempt already has (after a failover), else the
// child of the task's earlier attempt (continued with req.Continue's action,
// queued as an operator action), else a new run with its start command. A
// crash at any point leaves either nothing or all of it, so an attempt
// never gets two children; the unique parent_task_instance_id index holds
// it even against a stale writer.
func (s *Store) InstanceStartChild(ctx context.Context, req ChildRequest) (ChildStart, error) {
	var out ChildStart
	err := s.tx(ctx, func(tx *gorm.DB) error {
		out = ChildStart{}
		var task taskInstanceRow
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&task, req.ParentTaskID).Error; err != nil {
			return notFound(err, fmt.Sprintf("task instance %d", req.ParentTaskID))
		}
		now := time.Now().UTC()
		running := func(childID int64) error {
			return tx.Model(&taskInstanceRow{}).Where("id = ? AND state IN ?", task.ID,
				[]string{string(model.TaskSubmitted), string(model.TaskRunning)}).Updates(map[string]any{
				"child_instance_id": childID, "state": string(model.TaskRunning),
				"start_time": gorm.Expr("COALESCE(start_time, ?)", now)}).Error
		}
		if task.ChildInstanceID != nil {
			var c workflowInstanceRow
			if err := tx.Take(&c, *task.ChildInstanceID).Error; err != nil {
				return notFound(err, fmt.Sprintf("child workflow instance %d", *task.ChildInstanceID))
			}
			out.Child, out.Attached = c.model(), true
			return running(c.ID) // a resumed attempt (paused -> submitted) runs again
		}
		var prev taskInstanceRow
		err := tx.Where("workflow_instance_id = ? AND name = ? AND child_instance_id IS NOT NULL AND id <> ?",
			task.WorkflowInstanceID, task.Name, task.ID).Order("attempt DESC").Take(&prev).Error
		switch {
		case err == nil:
			var c workflowInstanceRow
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&c, *prev.ChildInstanceID).Error; err != nil {
				return notFound(err, fmt.Sprintf("child workflow instance %d", *prev.ChildInstanceID))
			}
			// The child now answers to this attempt.
			if err := tx.Model(&workflowInstanceRow{}).Where("id = ?", c.ID).Update("parent_task_instance_id", task.ID).Error; err != nil {
				return fmt.Errorf("relink child %d: %w", c.ID, err)
			}
			c.ParentTaskInstanceID = &task.ID
			if err := running(c.ID); err != nil {
				return fmt.Errorf("link child %d: %w", c.ID, err)
			}
			out.Child, out.Adopted = c.model(), true
			if req.Continue == nil {
				return nil
			}
			if out.Action = req.Continue(model.WorkflowState(c.State)); out.Action == "" {
				return nil
			}
			cmd := actionCommandRow{Type: commandTypeAction, WorkflowInstanceID: c.ID, Action: string(out.Action), RequestedBy: "master", CreatedAt: now}
			if err := tx.Create(&cmd).Error; err != nil {
				return fmt.Errorf("insert %s command: %w", out.Action, err)
			}
			h := historyRow{WorkflowInstanceID: c.ID, Action: string(out.Action), RequestedBy: "master", At: now,
				Detail: clip(fmt.Sprintf("parent task instance %d continues its child (%s)", task.ID, c.State), model.MaxActionDetail)}
			return tx.Create(&h).Error
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return fmt.Errorf("read earlier attempts: %w", err)
		}
		if err := checkChildLimits(tx, req.ParentInstanceID, req.Limits); err != nil {
			return err
		}
		p, err := getProject(tx, req.Project)
		if err != nil {
			return err
		}
		var def workflowDefinitionRow
		q := lockingRead(tx).Omit("spec_json").Where("project_id = ? AND name = ?", p.ID, req.Workflow)
		if req.Version > 0 {
			q = q.Where("version = ?", req.Version)
		} else if !req.AsOf.IsZero() {
			q = q.Where("created_at <= ?", req.AsOf)
		}
		if err := q.Order("version DESC").Take(&def).Error; err != nil {
			return notFound(err, fmt.Sprintf("workflow %q in project %q", req.Workflow, req.Project))
		}
		c, err := insertRun(tx, s.box, p, def, RunRequest{Project: req.Project, Workflow: req.Workflow, Params: req.Params,
			Priority: req.Priority, ScheduleTime: req.ScheduleTime, Timezone: req.Timezone}, now)
		if err != nil {
			return err
		}
		if err := tx.Model(&workflowInstanceRow{}).Where("id = ?", c.ID).Updates(map[string]any{
			"parent_instance_id": req.ParentInstanceID, "parent_task_instance_id": task.ID}).Error; err != nil {
			return fmt.Errorf("link child %d: %w", c.ID, err)
		}
		if err := running(c.ID); err != nil {
			return fmt.Errorf("link child %d: %w", c.ID, err)
		}
		c.Parent = &model.ParentRef{InstanceID: req.ParentInstanceID, TaskInstanceID: task.ID}
		out.Child, out.Created = c, true
		return nil
	})
	if err != nil {
		return ChildStart{}, fmt.Errorf("start child of task instance %d: %w", req.ParentTaskID, err)
	}
	return out, nil
}

// InstanceOutputs are a run's outputs: those of its succeeded latest
// attempts, a later task's value winning.
func (s *Store) InstanceOutputs(ctx context.Context, id int64) (map[string]string, error) {
	var rows []taskInstanceRow
	if err := s.db.WithContext(ctx).Select("id, outputs_json").Where("workflow_instance_id = ? AND superseded = ? AND state IN ?", id, false,
		[]string{string(model.TaskSucceeded), string(model.TaskForcedSuccess)}).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("outputs of instance %d: %w", id, err)
	}
	var out map[string]string
	for _, r := range rows {
		for k, v := range stringMap(r.OutputsJSON) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out, nil
}

// TaskEndOnMaster ends a master-run attempt that is still running (or
// submitted) with state, outputs and message; false when it had moved on
// (a stop, or the other of two racing endings).
func (s *Store) TaskEndOnMaster(ctx context.Context, id int64, state model.TaskState, outputs map[string]string, message string, end time.Time) (bool, error) {
	var ok bool
	err := s.tx(ctx, func(tx *gorm.DB) error {
		fields := map[string]any{"state": string(state), "end_time": end, "message": clip(message, 1024),
			"start_time": gorm.Expr("COALESCE(start_time, ?)", end)}
		if state == model.TaskPaused {
			delete(fields, "end_time")
		}
		if outputs != nil {
			fields["outputs_json"] = jsonText(outputs, len(outputs))
		}
		res := tx.Model(&taskInstanceRow{}).Where("id = ? AND state IN ?", id,
			[]string{string(model.TaskRunning), string(model.TaskSubmitted)}).Updates(fields)
		if ok = res.RowsAffected == 1; !ok || res.Error != nil {
			return res.Error
		}
		return appendEvents(tx, changed{tasks: []int64{id}})
	})
	if err != nil {
		return false, fmt.Errorf("end task instance %d: %w", id, err)
	}
	return ok, nil
}

// TaskStartOnMaster moves a master-run attempt from submitted to running
// with message (again when running: a new leader resumes it); false when
// it is neither.
func (s *Store) TaskStartOnMaster(ctx context.Context, id int64, message string, at time.Time) (bool, error) {
	var ok bool
	err := s.tx(ctx, func(tx *gorm.DB) error {
		set := map[string]any{"state": string(model.TaskRunning), "message": clip(message, 1024),
			"start_time": gorm.Expr("COALESCE(start_time, ?)", at)}
		res := tx.Model(&taskInstanceRow{}).Where("id = ? AND state = ?", id, string(model.TaskSubmitted)).Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if ok = res.RowsAffected == 1; ok {
			return appendEvents(tx, changed{tasks: []int64{id}}) // it started: an event, as a worker's task's
		}
		// Resumed by a new leader: running already, no new state, no event.
		res = tx.Model(&taskInstanceRow{}).Where("id = ? AND state = ?", id, string(model.TaskRunning)).Updates(set)
		ok = res.RowsAffected == 1
		return res.Error
	})
	if err != nil {
		return false, fmt.Errorf("start task instance %d: %w", id, err)
	}
	return ok, nil
}

// TaskSetMessage records what a waiting master-run task saw.
func (s *Store) TaskSetMessage(ctx context.Context, id int64, message string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		return tx.Model(&taskInstanceRow{}).Where("id = ?", id).Update("message", clip(message, 1024)).Error
	})
}

// RunSeen is one run a dependent looked at.
type RunSeen struct {
	ID    int64
	State model.WorkflowState
	Task  model.TaskState // the named task's latest attempt ("" none yet)
}

// InstanceRunsIn returns the runs of project/workflow that count in [from, to): by
// schedule time, a manual run by its start. With task set, the state of
// that task's latest attempt in each.
func (s *Store) InstanceRunsIn(ctx context.Context, project, workflow, task string, from, to time.Time) ([]RunSeen, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return nil, err
	}
	var rows []workflowInstanceRow
	if err := db.Select("id, state").Where("project_id = ? AND workflow_name = ? AND ((schedule_time IS NOT NULL AND schedule_time >= ? AND schedule_time < ?) OR (schedule_time IS NULL AND start_time >= ? AND start_time < ?))",
		p.ID, workflow, from.UTC(), to.UTC(), from.UTC(), to.UTC()).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("runs of %s/%s: %w", project, workflow, err)
	}
	out := make([]RunSeen, len(rows))
	ids := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = RunSeen{ID: r.ID, State: model.WorkflowState(r.State)}
		ids[i] = r.ID
	}
	if task == "" || len(ids) == 0 {
		return out, nil
	}
	var ts []taskInstanceRow
	if err := db.Select("workflow_instance_id, state, attempt").Where("workflow_instance_id IN ? AND name = ?", ids, task).
		Order("attempt").Find(&ts).Error; err != nil {
		return nil, fmt.Errorf("task %s of %s/%s: %w", task, project, workflow, err)
	}
	latest := map[int64]model.TaskState{}
	for _, t := range ts {
		latest[t.WorkflowInstanceID] = model.TaskState(t.State)
	}
	for i := range out {
		out[i].Task = latest[out[i].ID]
	}
	return out, nil
}
