package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote/message"
)

// The task logs of a run live in <log dir>/<workflow instance id>/. A
// retention purge deletes runs from the database; their logs go by this
// sweep: every LogSweep the worker lists its run directories and asks a
// master which of those runs are gone (LogGone), then deletes their
// directories, and their work directories (<data dir>/work/<id>/). The worker asks rather than being told, so a worker that was
// down or unreachable during a purge loses the logs at its next sweep, and
// the purge needs no journal of what each worker still has to delete; a
// run the database still holds is never touched, whatever its age, so
// pinned and running runs keep their logs.

// DefaultLogSweep is LogSweep's default.
const DefaultLogSweep = 10 * time.Minute

// logSweepAsk is how many runs one LogGone asks about.
const logSweepAsk = 1000

// logSweepTimeout bounds one question to the master.
const logSweepTimeout = 30 * time.Second

// sweepLogs runs the sweep until ctx ends: the first a minute after the
// start (sooner with a shorter period), then every period.
func (w *Worker) sweepLogs(ctx context.Context) {
	every := w.cfg.LogSweep
	if every == 0 {
		every = DefaultLogSweep
	}
	t := time.NewTimer(min(every, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		runs, err := w.sweepLogsOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Info("task log sweep: will try again", zap.Duration("in", every), zap.Error(err))
		case runs > 0:
			w.log.Info("task logs of purged runs removed", zap.Int("runs", runs))
		}
		t.Reset(every)
	}
}

// sweepLogsOnce deletes the log directories of runs the master says are
// gone and returns how many. The log dir is read logSweepAsk entries at a
// time, each batch asked about and swept before the next is read, so a
// worker with a million run directories holds a thousand at once.
func (w *Worker) sweepLogsOnce(ctx context.Context) (int, error) {
	w.mu.Lock()
	master := w.master
	w.mu.Unlock()
	ex := w.exec.Load()
	if master == "" || ex == nil {
		return 0, errors.New("no master known yet")
	}
	d, err := os.Open(w.logDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open the task log dir: %w", err)
	}
	defer d.Close()
	removed := 0
	for {
		entries, err := d.ReadDir(logSweepAsk)
		if err != nil && !errors.Is(err, io.EOF) {
			return removed, fmt.Errorf("list the task log dir: %w", err)
		}
		if len(entries) == 0 {
			return removed, nil
		}
		held := ex.Instances()
		ids := slices.DeleteFunc(runDirs(entries), func(id int64) bool { return held[id] })
		if len(ids) == 0 {
			continue
		}
		gone, err := w.askGone(ctx, master, ids)
		if err != nil {
			return removed, err
		}
		held = ex.Instances() // a task may have come meanwhile
		for _, id := range gone {
			if _, asked := slices.BinarySearch(ids, id); held[id] || !asked {
				continue // never more than asked about
			}
			name := strconv.FormatInt(id, 10)
			// The run's work dirs (outputs, kept for debugging) go too;
			// then its logs, whose directory is what the next sweep
			// would find again if this one stopped half way.
			err := os.RemoveAll(filepath.Join(w.workDir, name))
			if err == nil {
				err = os.RemoveAll(filepath.Join(w.logDir, name))
			}
			if err != nil {
				w.log.Warn("remove the task logs of a purged run", zap.Int64("workflow_instance_id", id), zap.Error(err))
				continue
			}
			removed++
		}
	}
}

// askGone asks master which of ids are gone.
func (w *Worker) askGone(ctx context.Context, master string, ids []int64) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, logSweepTimeout)
	defer cancel()
	reply, err := w.client.Request(ctx, master, message.LogGone{InstanceIDs: ids})
	if err != nil {
		return nil, fmt.Errorf("ask %s which runs are gone: %w", master, err)
	}
	switch r := reply.(type) {
	case message.LogGoneReply:
		return r.Gone, nil
	case message.Error:
		return nil, fmt.Errorf("ask %s which runs are gone: %s: %s", master, r.Code, r.Message)
	default:
		return nil, fmt.Errorf("ask %s which runs are gone: unexpected reply %T", master, reply)
	}
}

// runDirs picks the run directories among entries of the log dir: those
// named by a workflow instance id (canonical decimal) that are directories,
// not links (a task can plant entries there). Ascending.
func runDirs(entries []os.DirEntry) []int64 {
	var ids []int64
	for _, e := range entries {
		if id, ok := runID(e.Name()); ok && e.Type().IsDir() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// runID parses a run directory's name: a positive id in canonical decimal.
func runID(name string) (int64, bool) {
	id, err := strconv.ParseInt(name, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != name {
		return 0, false
	}
	return id, true
}

// logSize answers LogSize: the regular files (logs, stderr span files) in
// the listed runs' directories and their bytes, what a sweep would free.
// Links are not followed.
func (w *Worker) logSize(m message.LogSize) message.Message {
	if err := message.CheckRunIDs(m.InstanceIDs); err != nil {
		return message.Error{Code: codeBadRequest, Message: "log size: " + err.Error()}
	}
	var r message.LogSizeReply
	for _, id := range m.InstanceIDs {
		entries, err := os.ReadDir(filepath.Join(w.logDir, strconv.FormatInt(id, 10)))
		if err != nil {
			continue // no logs of that run here
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			r.Files++
			r.Bytes += fi.Size()
		}
	}
	return r
}
