package executor

import (
	"context"
	"time"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// runInProcess is the waiter of an in-process task type (http): it
// prepares the work dir and log as for a process, runs the type's Run in
// this goroutine and reports like a process would: started (pid 0), then
// exited with code 0 or 1. A kill or the timeout cancels ctx.
func (e *Executor) runInProcess(ctx context.Context, l launch, def *tasktype.Def, j tasktype.Job) {
	defer e.waiters.Done()
	e.fsMu.Lock()
	f, err := e.prepareFS(l, true)
	e.fsMu.Unlock()
	if err != nil {
		e.procCh <- procEvent{id: l.id, kind: evStartFailed, at: time.Now(), err: err}
		return
	}
	e.procCh <- procEvent{id: l.id, kind: evStarted, at: time.Now()}
	w := &cappedLog{f: f, limit: e.cfg.MaxLogBytes}
	j.Log = w
	out := def.Run(ctx, j)
	f.Close()
	ev := procEvent{id: l.id, kind: evExited, at: time.Now()}
	switch {
	case out.Err != nil:
		ev.code, ev.msg = 1, out.Err.Error()
	case ctx.Err() != nil:
		ev.code, ev.msg = 1, "cancelled"
	default:
		if err := checkOutputs(out.Outputs); err != nil {
			ev.code, ev.msg = 1, err.Error()
		} else {
			ev.outputs = out.Outputs
		}
	}
	e.procCh <- ev
}
