package standalone

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/logspan"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// LogFetcher reads task logs over c from the worker that serves the task's
// log file now: a live worker in reg on the task's host whose log directory
// holds the file (the same data dir, after any restart on any port), else
// the worker address recorded on the task.
func LogFetcher(c *remote.Client, reg registry.Registry) api.LogReader { return logFetcher{c, reg} }

type logFetcher struct {
	c   *remote.Client
	reg registry.Registry
}

func (f logFetcher) ReadLog(ctx context.Context, t model.TaskInstance, offset, limit int64) ([]byte, error) {
	if t.Host == "" {
		return nil, fmt.Errorf("task instance %d has not reached a worker yet", t.ID)
	}
	var errs []error
	for _, addr := range logServers(t, f.reg.Nodes(registry.RoleWorker)) {
		data, err := f.readFrom(ctx, addr, t, offset, limit)
		if err == nil {
			return data, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// ReadLogStreams reads one window of t's log (at most the worker's) with
// its stderr spans.
func (f logFetcher) ReadLogStreams(ctx context.Context, t model.TaskInstance, offset, limit int64) (api.LogPage, error) {
	if t.Host == "" {
		return api.LogPage{}, fmt.Errorf("task instance %d has not reached a worker yet", t.ID)
	}
	var errs []error
	for _, addr := range logServers(t, f.reg.Nodes(registry.RoleWorker)) {
		r, err := f.request(ctx, addr, t, message.LogRequest{TaskInstanceID: t.ID, LogPath: t.LogPath,
			Offset: offset, Limit: limit, Streams: true})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := api.LogPage{Data: r.Data, Recorded: r.Streams, Stderr: make([]logspan.Span, len(r.Stderr))}
		for i, s := range r.Stderr {
			p.Stderr[i] = logspan.Span{Start: s[0], End: s[1]}
		}
		return p, nil
	}
	return api.LogPage{}, errors.Join(errs...)
}

// request sends one LogRequest to addr.
func (f logFetcher) request(ctx context.Context, addr string, t model.TaskInstance, req message.LogRequest) (message.LogResponse, error) {
	reply, err := f.c.Request(ctx, addr, req)
	if err != nil {
		return message.LogResponse{}, fmt.Errorf("read log of task instance %d from %s: %w", t.ID, addr, err)
	}
	switch m := reply.(type) {
	case message.LogResponse:
		return m, nil
	case message.Error:
		return message.LogResponse{}, fmt.Errorf("read log of task instance %d from %s: %s: %s", t.ID, addr, m.Code, m.Message)
	default:
		return message.LogResponse{}, fmt.Errorf("read log of task instance %d from %s: unexpected reply %T", t.ID, addr, reply)
	}
}

func (f logFetcher) readFrom(ctx context.Context, addr string, t model.TaskInstance, offset, limit int64) ([]byte, error) {
	// A worker answers at most its window (worker.MaxLogChunk) per request:
	// read windows until limit or the end of the log.
	var out []byte
	for {
		r, err := f.request(ctx, addr, t, message.LogRequest{TaskInstanceID: t.ID, LogPath: t.LogPath,
			Offset: offset + int64(len(out)), Limit: limit - int64(len(out))})
		if err != nil {
			return nil, err
		}
		if out == nil && (r.EOF || int64(len(r.Data)) >= limit) {
			return r.Data, nil // one window: no copy
		}
		out = append(out, r.Data...)
		if r.EOF || len(r.Data) == 0 || int64(len(out)) >= limit {
			return out, nil
		}
	}
}

// logServers lists the workers to ask for t's log, best first: the live
// workers on the host that ran t whose log directory holds t's log file,
// then the address recorded on t (a worker that does not announce its log
// directory, or a log path not recorded).
func logServers(t model.TaskInstance, workers []registry.Node) []string {
	host := hostOf(t.Host)
	var out []string
	for _, w := range workers {
		if t.LogPath != "" && w.LogDir != "" && hostOf(w.Addr) == host && inside(w.LogDir, t.LogPath) {
			out = append(out, w.Addr)
		}
	}
	for _, a := range out {
		if a == t.Host {
			return out
		}
	}
	return append(out, t.Host)
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// logSizeTimeout bounds a worker's answer to LogSize.
const logSizeTimeout = 10 * time.Second

// LogBytes asks every live worker what the task logs of instances take
// there: the workers announcing the same log directory on the same host
// serve the same files (a restart on another port), so one answer counts
// for them all. A log directory none of whose workers answers is counted
// in unreached, its bytes not in the sum.
func (f logFetcher) LogBytes(ctx context.Context, instances []int64) (bytes int64, unreached int) {
	var keys []string
	servers := map[string][]string{}
	for _, w := range f.reg.Nodes(registry.RoleWorker) {
		key := w.Addr // a worker that does not announce its log dir stands alone
		if w.LogDir != "" {
			key = hostOf(w.Addr) + "\x00" + w.LogDir
		}
		if _, ok := servers[key]; !ok {
			keys = append(keys, key)
		}
		servers[key] = append(servers[key], w.Addr)
	}
	for _, key := range keys {
		answered := false
		for _, addr := range servers[key] {
			if n, err := f.logSize(ctx, addr, instances); err == nil {
				bytes, answered = bytes+n, true
				break
			}
		}
		if !answered {
			unreached++
		}
	}
	return bytes, unreached
}

// logSize asks one worker, in requests of at most message.MaxLogRuns runs.
func (f logFetcher) logSize(ctx context.Context, addr string, instances []int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, logSizeTimeout)
	defer cancel()
	var n int64
	for c := range slices.Chunk(instances, message.MaxLogRuns) {
		reply, err := f.c.Request(ctx, addr, message.LogSize{InstanceIDs: c})
		if err != nil {
			return 0, err
		}
		r, ok := reply.(message.LogSizeReply)
		if !ok {
			return 0, fmt.Errorf("log size from %s: unexpected reply %T", addr, reply)
		}
		n += r.Bytes
	}
	return n, nil
}
