package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/secret"
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
		} else if d, err := openFromLink(w.box, m); err != nil {
			w.log.Warn("dispatch refused", zap.Int64("task_id", m.TaskInstanceID), zap.String("remote", p.RemoteAddr()), zap.Error(err))
			reply = message.DispatchReply{TaskInstanceID: m.TaskInstanceID, Reason: err.Error()}
		} else {
			reply = ex.Dispatch(d)
		}
	case message.Kill:
		peer, _ := remote.PeerIdentity(p)
		from := []zap.Field{zap.Stringer("from", peer), zap.String("remote", p.RemoteAddr())}
		r := message.KillResult{TaskInstanceID: m.TaskInstanceID}
		if ex != nil {
			r = ex.Kill(m.TaskInstanceID, from...)
		} else {
			w.log.Info("kill of a task before the worker started", append(from, zap.Int64("unknown_task_id", m.TaskInstanceID))...)
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
	case message.LogSize:
		reply = w.logSize(m)
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
	r := message.LogResponse{TaskInstanceID: m.TaskInstanceID, Data: data, EOF: eof}
	if m.Streams {
		spans, end, err := readSpans(w.logDir, path, m.Offset, m.Offset+int64(len(data)))
		if err != nil {
			w.log.Warn("read stderr spans", zap.String("path", path), zap.Error(err))
			return message.Error{Code: codeIO, Message: err.Error()}
		}
		if n := end - m.Offset; n < int64(len(data)) {
			r.Data, r.EOF = data[:n], false // the rest's spans in the next window
		}
		r.Streams = true
		r.Stderr = make([][2]int64, len(spans))
		for i, s := range spans {
			r.Stderr[i] = [2]int64{s.Start, s.End}
		}
	}
	return r
}

// openFromLink opens the secret env values the master sealed for the link
// (master/secrets.go sealForLink). A value that does not open refuses the
// dispatch: it was not sealed by a master of this cluster for this attempt.
func openFromLink(box *secret.Box, d message.Dispatch) (message.Dispatch, error) {
	if box == nil || len(d.SecretEnv) == 0 {
		return d, nil
	}
	env := maps.Clone(d.Env)
	ctx := secret.LinkContext(d.TaskInstanceID, d.Attempt)
	for _, k := range d.SecretEnv {
		v, ok := env[k]
		if !ok || !secret.IsSealed(v) {
			continue // empty, or from a master that does not seal (older)
		}
		plain, err := box.OpenFor(v, ctx)
		if err != nil {
			return d, fmt.Errorf("secret param %s does not open with this cluster's secret for this attempt: %w", k, err)
		}
		env[k] = plain
	}
	d.Env = env
	return d, nil
}
