package worker

import (
	"errors"
	"fmt"
	"io/fs"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/worker/executor"
)

// Error codes of message.Error replies.
const (
	codeNotFound    = "not_found"
	codeBadRequest  = "bad_request"
	codeUnavailable = "unavailable"
	codeIO          = "io_error"
	codeUnsupported = "unsupported"
	codeForbidden   = "forbidden"
)

// handle serves every inbound message, on server connections (from masters
// and API servers) and on client connections (DB-ack pushes). It runs on the
// transport's per-connection goroutine and never blocks for long: executor
// calls are a channel round trip, log reads are capped at 8 MiB.
func (w *Worker) handle(p remote.Peer, reqID uint64, m message.Message) {
	ex := w.exec.Load()
	switch m.(type) {
	case message.Dispatch, message.Kill, message.DBAck, message.Query:
		if why := w.authorize(p, m); why != "" {
			w.refused(p, m, why)
			w.answerRefused(p, reqID, m, why)
			return
		}
	}
	var reply message.Message
	switch m := m.(type) {
	case message.Dispatch:
		if ex == nil {
			reply = message.DispatchReply{TaskInstanceID: m.TaskInstanceID, Reason: "worker is starting"}
		} else if why := w.refusal.Load(); why != nil {
			reply = message.DispatchReply{TaskInstanceID: m.TaskInstanceID, Reason: *why}
		} else {
			reply = ex.Dispatch(m)
		}
	case message.Kill:
		r := message.KillResult{TaskInstanceID: m.TaskInstanceID}
		if ex != nil {
			r = ex.Kill(m.TaskInstanceID)
		}
		reply = r
	case message.DBAck:
		if ex != nil {
			ex.DBAck(m)
		}
		return // a push: nothing to answer
	case message.Query:
		r := message.QueryReply{}
		if ex != nil {
			r.Held = ex.Query(m)
		}
		reply = r
	case message.LogRequest:
		reply = w.serveLog(ex, m)
	case message.Ping:
		reply = message.Pong{}
	default:
		reply = message.Error{Code: codeUnsupported, Message: fmt.Sprintf("worker does not serve message type %d", m.Type())}
	}
	if reqID == 0 {
		return // pushes get no reply
	}
	if err := p.Send(reqID, reply); err != nil {
		w.log.Debug("reply not sent", zap.String("peer", p.RemoteAddr()), zap.Error(err))
	}
}

// answerRefused answers a command that is not obeyed.
func (w *Worker) answerRefused(p remote.Peer, reqID uint64, m message.Message, why string) {
	if reqID == 0 {
		return
	}
	var reply message.Message = message.Error{Code: codeForbidden, Message: why}
	if d, ok := m.(message.Dispatch); ok {
		reply = message.DispatchReply{TaskInstanceID: d.TaskInstanceID, Reason: why}
	}
	if err := p.Send(reqID, reply); err != nil {
		w.log.Debug("reply not sent", zap.String("peer", p.RemoteAddr()), zap.Error(err))
	}
}

// serveLog answers a LogRequest from the task's known log or from LogPath,
// which must lie in this worker's log directory.
func (w *Worker) serveLog(ex *executor.Executor, m message.LogRequest) message.Message {
	path := m.LogPath
	if path == "" {
		var ok bool
		if ex != nil {
			path, ok = ex.LogPath(m.TaskInstanceID)
		}
		if !ok {
			return message.Error{Code: codeNotFound, Message: fmt.Sprintf("task %d is not known to this worker; give its log_path", m.TaskInstanceID)}
		}
	} else if err := ownLog(m.TaskInstanceID, path); err != nil {
		return message.Error{Code: codeBadRequest, Message: err.Error()}
	}
	data, eof, err := readLog(w.logDir, path, m.Offset, m.Limit)
	switch {
	case errors.Is(err, errBadRange), errors.Is(err, errNotLog):
		return message.Error{Code: codeBadRequest, Message: err.Error()}
	case errors.Is(err, fs.ErrNotExist):
		return message.Error{Code: codeNotFound, Message: fmt.Sprintf("log %s does not exist", path)}
	case err != nil:
		w.log.Warn("read task log", zap.String("path", path), zap.Error(err))
		return message.Error{Code: codeIO, Message: err.Error()}
	}
	return message.LogResponse{TaskInstanceID: m.TaskInstanceID, Data: data, EOF: eof}
}
