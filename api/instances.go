package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/logspan"
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

// projectWorkflowValid checks the project and workflow query parameters
// of a list (empty: not filtered).
func projectWorkflowValid(project, workflow string) error {
	for _, c := range [...][2]string{{"project", project}, {"workflow", workflow}} {
		if c[1] != "" && !validName(c[1]) {
			return badRequest("query parameter %s: %q is not a valid name: %s", c[0], c[1], nameRule)
		}
	}
	return nil
}

// pageParams are a list's limit (default 50, at most 1,000) and offset.
func pageParams(r *http.Request) (limit, offset int, err error) {
	l, err := queryInt(r, "limit", defaultInstanceLimit, 1, maxInstanceLimit)
	if err != nil {
		return 0, 0, err
	}
	o, err := queryInt(r, "offset", 0, 0, math.MaxInt32)
	if err != nil {
		return 0, 0, err
	}
	return int(l), int(o), nil
}

func (h *handlers) listInstances(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.InstanceFilter{Project: q.Get("project"), Workflow: q.Get("workflow"), State: model.WorkflowState(q.Get("state"))}
	if err := projectWorkflowValid(f.Project, f.Workflow); err != nil {
		return err
	}
	if f.State != "" && !f.State.Valid() {
		return badRequest("query parameter state: %q is not a workflow state; use %s", f.State, workflowStates)
	}
	limit, offset, err := pageParams(r)
	if err != nil {
		return err
	}
	backfill, err := queryInt(r, "backfill", 0, 0, math.MaxInt64)
	if err != nil {
		return err
	}
	f.Limit, f.Offset, f.Backfill = limit, offset, backfill
	// cursor (empty for the first page) pages by keyset: from the id
	// after the page before, nothing counted (total -1), so page 1,000
	// costs what page 1 does.
	if f.Keyset = q.Has("cursor"); f.Keyset {
		if q.Has("offset") {
			return badRequest("query parameters cursor and offset: use one (cursor pages from the next_cursor of the page before)")
		}
		key, err := cursorKey(q.Get("cursor"))
		if err != nil {
			return err
		}
		if f.Before, err = strconv.ParseInt(key, 10, 64); key != "" && (err != nil || f.Before <= 0) {
			return badRequest("query parameter cursor: %q is not a next_cursor of the instance list; start again with an empty cursor", q.Get("cursor"))
		}
	}
	if f.OnlyProjects, err = h.viewable(r.Context()); err != nil {
		return err
	}
	items, total, err := h.Store.InstanceList(r.Context(), f)
	if err != nil {
		return err
	}
	items, more := f.More(items)
	out := InstanceList{Items: make([]Instance, len(items)), Total: total, Limit: f.Limit, Offset: f.Offset}
	if more {
		out.NextCursor = nextCursor(strconv.FormatInt(items[len(items)-1].ID, 10))
	}
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
	// Read before the instance: an event published by now is of a change
	// committed before the reads below.
	seq, err := h.lastEventSeq(r.Context())
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
	hist, err := h.Store.InstanceHistory(r.Context(), id)
	if err != nil {
		return err
	}
	// Waits are per task: a call that asks for no tasks derives none; a
	// page derives its tasks' (pageWaits) and the pending tasks.
	ws, pend := map[int64]*Wait{}, []PendingTask(nil)
	if q.limit > 0 && !q.noWaits && !inst.State.Finished() {
		if ws, pend, err = h.pageWaits(r.Context(), inst, page.Tasks, true); err != nil {
			return err
		}
	}
	var fc *Forecast
	if q.forecast {
		if fc, err = h.instanceForecast(r.Context(), inst); err != nil {
			return err
		}
	}
	pendTotal := len(pend)
	if len(pend) > q.pending {
		pend = pend[:q.pending]
	}
	out := InstanceDetail{Instance: fromInstance(inst), Tasks: make([]TaskInstance, len(page.Tasks)),
		History: make([]HistoryEntry, len(hist)), Outputs: outputsOf(withOutputs), Pending: nonNilSlice(pend),
		TasksTotal: page.Total, TaskCounts: map[string]int{}, EventSeq: seq,
		PendingTotal: pendTotal, Forecast: fc}
	if err := h.versionsOfInstance(r, inst, &out); err != nil {
		return err
	}
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
	t, err := h.Store.TaskGet(r.Context(), id)
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

// logRequest is what both log routes take: the task, offset and limit.
func (h *handlers) logRequest(r *http.Request) (id int64, t model.TaskInstance, offset, limit int64, err error) {
	if id, err = pathID(r, "id"); err != nil {
		return
	}
	if offset, err = queryInt(r, "offset", 0, 0, math.MaxInt64); err != nil {
		return
	}
	if limit, err = queryInt(r, "limit", defaultLogLimit, 1, maxLogLimit); err != nil {
		return
	}
	if h.Logs == nil {
		err = &httpError{http.StatusServiceUnavailable, CodeUnavailable, "this server cannot read task logs"}
		return
	}
	if t, err = h.Store.TaskGet(r.Context(), id); err != nil {
		err = storeError(err)
		return
	}
	if t.Host == "" {
		err = &httpError{http.StatusConflict, CodeConflict,
			fmt.Sprintf("task instance %d has no log yet: it is %s and has not reached a worker", id, t.State)}
	}
	return
}

// taskLog answers one page of a task's log as text. X-Next-Offset is the
// offset to ask for next; fewer bytes than the limit means the end for now.
// With stream=stdout or stderr, only that stream's bytes of the page.
func (h *handlers) taskLog(w http.ResponseWriter, r *http.Request) error {
	stream, err := logStream(r)
	if err != nil {
		return err
	}
	_, t, offset, limit, err := h.logRequest(r)
	if err != nil {
		return err
	}
	release, err := h.holdLogRead(r, limit)
	if err != nil {
		return err
	}
	defer release()
	if stream != streamAll {
		page, err := h.readLogStreams(r, t, offset, limit)
		if err != nil {
			return err
		}
		// X-Next-Offset is in the whole log: it pages as without a filter,
		// but a page may hold fewer bytes than the limit before the end;
		// the end (for now) is a page that does not advance.
		data := logspan.Filter(nil, page.Data, offset, page.Stderr, stream == streamStderr)
		w.Header().Set("X-Log-Streams", recordedWord(page.Recorded))
		writeLogBody(w, offset+int64(len(page.Data)), data)
		return nil
	}
	data, err := h.Logs.ReadLog(r.Context(), t, offset, limit)
	if err != nil {
		return h.logReadFailed(r, t, err)
	}
	if int64(len(data)) > limit {
		data = data[:limit] // a reader that ignores limit must not break paging
	}
	writeLogBody(w, offset+int64(len(data)), data)
	return nil
}

func writeLogBody(w http.ResponseWriter, next int64, data []byte) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Next-Offset", strconv.FormatInt(next, 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

func (h *handlers) logReadFailed(r *http.Request, t model.TaskInstance, err error) error {
	h.log.Warn("read task log failed", zap.String("request_id", requestID(r.Context())),
		zap.Int64("task_instance", t.ID), zap.String("worker", t.Host), zap.Error(err))
	return &httpError{http.StatusBadGateway, CodeBadGateway,
		fmt.Sprintf("read the log of task instance %d from worker %s: %v", t.ID, t.Host, err)}
}

// The log route's stream filter.
const (
	streamAll    = "all"
	streamStdout = "stdout"
	streamStderr = "stderr"
)

// logStream is the stream query parameter: all (the default), stdout or stderr.
func logStream(r *http.Request) (string, error) {
	switch s := r.URL.Query().Get("stream"); s {
	case "", streamAll:
		return streamAll, nil
	case streamStdout, streamStderr:
		return s, nil
	default:
		return "", badRequest("query parameter stream must be all, stdout or stderr, got %q", s)
	}
}

func recordedWord(ok bool) string {
	if ok {
		return "recorded"
	}
	return "unrecorded" // a worker that does not record them: all reads as stdout
}

// readLogStreams reads a page of t's log with its stderr spans, clipped
// to limit.
func (h *handlers) readLogStreams(r *http.Request, t model.TaskInstance, offset, limit int64) (LogPage, error) {
	sr, ok := h.Logs.(StreamLogReader)
	if !ok {
		return LogPage{}, &httpError{http.StatusServiceUnavailable, CodeUnavailable, "this server cannot tell a log's streams apart"}
	}
	page, err := sr.ReadLogStreams(r.Context(), t, offset, limit)
	if err != nil {
		return LogPage{}, h.logReadFailed(r, t, err)
	}
	if int64(len(page.Data)) > limit {
		page.Data = page.Data[:limit]
	}
	end := offset + int64(len(page.Data))
	kept := page.Stderr[:0:0]
	for _, s := range page.Stderr {
		s.Start, s.End = max(s.Start, offset), min(s.End, end)
		if s.Start < s.End {
			kept = append(kept, s)
		}
	}
	page.Stderr = kept
	return page, nil
}

// LogStreams is the body of GET /api/v1/task-instances/{id}/log/streams.
type LogStreams struct {
	Offset     int64 `json:"offset"`
	NextOffset int64 `json:"next_offset"`
	// Recorded is false when the worker does not record streams: all of
	// the log reads as stdout then.
	Recorded bool       `json:"recorded"`
	Stderr   [][2]int64 `json:"stderr"`
}

// taskLogStreams answers which bytes of a window of a task's log came
// from stderr: [start, end) offsets in the whole log, as the log route
// pages it.
func (h *handlers) taskLogStreams(w http.ResponseWriter, r *http.Request) error {
	_, t, offset, limit, err := h.logRequest(r)
	if err != nil {
		return err
	}
	release, err := h.holdLogRead(r, limit)
	if err != nil {
		return err
	}
	defer release()
	page, err := h.readLogStreams(r, t, offset, limit)
	if err != nil {
		return err
	}
	out := LogStreams{Offset: offset, NextOffset: offset + int64(len(page.Data)), Recorded: page.Recorded,
		Stderr: make([][2]int64, len(page.Stderr))}
	for i, s := range page.Stderr {
		out.Stderr[i] = [2]int64{s.Start, s.End}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
