package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Log paging: a request reads at most maxLogLimit bytes so one call cannot
// pull a huge file through the API in one response; clients page with
// offset until a short read.
const (
	defaultLogLimit = 1 << 20
	maxLogLimit     = 8 << 20
)

const (
	defaultInstanceLimit = 50
	maxInstanceLimit     = 1000
)

var workflowStates = "submitted, running, ready_pause, paused, ready_stop, stopped, failed or succeeded"

func (h *handlers) listInstances(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.InstanceFilter{Project: q.Get("project"), Workflow: q.Get("workflow"), State: model.WorkflowState(q.Get("state"))}
	for param, v := range map[string]string{"project": f.Project, "workflow": f.Workflow} {
		if v != "" && !validName(v) {
			return badRequest("query parameter %s: %q is not a valid name: %s", param, v, nameRule)
		}
	}
	if f.State != "" && !f.State.Valid() {
		return badRequest("query parameter state: %q is not a workflow state; use %s", f.State, workflowStates)
	}
	limit, err := queryInt(r, "limit", defaultInstanceLimit, 1, maxInstanceLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	backfill, err := queryInt(r, "backfill", 0, 0, math.MaxInt64)
	if err != nil {
		return err
	}
	f.Limit, f.Offset, f.Backfill = int(limit), int(offset), backfill
	if f.OnlyProjects, err = h.viewable(r.Context()); err != nil {
		return err
	}
	items, total, err := h.Store.ListWorkflowInstances(r.Context(), f)
	if err != nil {
		return err
	}
	out := InstanceList{Items: make([]Instance, len(items)), Total: total, Limit: f.Limit, Offset: f.Offset}
	for i, it := range items {
		out.Items[i] = fromInstance(it)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getInstance(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := instanceQuery(r)
	if err != nil {
		return err
	}
	inst, err := h.waitInstance(r.Context(), id, q.wait)
	if err != nil {
		return storeError(err)
	}
	page, err := h.Store.InstanceTasks(r.Context(), id, q.limit, q.offset)
	if err != nil {
		return err
	}
	withOutputs, err := h.Store.InstanceOutputTasks(r.Context(), id)
	if err != nil {
		return err
	}
	hist, err := h.Store.History(r.Context(), id)
	if err != nil {
		return err
	}
	// Waits are per task: a call that asks for no tasks derives none; a
	// page derives them over the whole instance (a pending task's upstreams
	// and a task's rank in its queue need it), reading its unsettled rows.
	ws, pend := map[int64]*Wait{}, []PendingTask(nil)
	if q.limit > 0 && !inst.State.Finished() {
		want := make(map[int64]bool, len(page.Tasks))
		for _, t := range page.Tasks {
			want[t.ID] = true
		}
		if ws, pend, err = h.instanceWaits(r.Context(), inst, want); err != nil {
			return err
		}
	}
	out := InstanceDetail{Instance: fromInstance(inst), Tasks: make([]TaskInstance, len(page.Tasks)),
		History: make([]HistoryEntry, len(hist)), Outputs: outputsOf(withOutputs), Pending: nonNilSlice(pend),
		TasksTotal: page.Total, TaskCounts: map[string]int{}}
	for st, n := range page.Counts {
		out.TaskCounts[string(st)] = n
	}
	for i, t := range page.Tasks {
		out.Tasks[i] = fromTask(t)
		out.Tasks[i].Wait = ws[t.ID]
	}
	for i, e := range hist {
		out.History[i] = fromHistory(e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handlers) getTaskInstance(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	t, err := h.Store.GetTaskInstance(r.Context(), id)
	if err != nil {
		return storeError(err)
	}
	out := fromTask(t)
	if out.Wait, err = h.taskWait(r.Context(), t); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// taskLog answers one page of a task's log as text. X-Next-Offset is the
// offset to ask for next; fewer bytes than the limit means the end for now.
func (h *handlers) taskLog(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, math.MaxInt64)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", defaultLogLimit, 1, maxLogLimit)
	if err != nil {
		return err
	}
	if h.Logs == nil {
		return &httpError{http.StatusServiceUnavailable, CodeUnavailable, "this server cannot read task logs"}
	}
	t, err := h.Store.GetTaskInstance(r.Context(), id)
	if err != nil {
		return storeError(err)
	}
	if t.Host == "" {
		return &httpError{http.StatusConflict, CodeConflict,
			fmt.Sprintf("task instance %d has no log yet: it is %s and has not reached a worker", id, t.State)}
	}
	data, err := h.Logs.ReadLog(r.Context(), t, offset, limit)
	if err != nil {
		h.log.Warn("read task log failed", zap.String("request_id", requestID(r.Context())),
			zap.Int64("task_instance", id), zap.String("worker", t.Host), zap.Error(err))
		return &httpError{http.StatusBadGateway, CodeBadGateway,
			fmt.Sprintf("read the log of task instance %d from worker %s: %v", id, t.Host, err)}
	}
	if int64(len(data)) > limit {
		data = data[:limit] // a reader that ignores limit must not break paging
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Next-Offset", strconv.FormatInt(offset+int64(len(data)), 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
	return nil
}
