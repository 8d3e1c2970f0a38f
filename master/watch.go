package master

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// workerWatch turns a worker's disappearance from the registry (or its
// restart, seen as a new start time) into need_fault_tolerance for the
// tasks it held, after a grace period in which the worker, if only cut off,
// has killed them itself.
type workerWatch struct {
	log   *zap.Logger
	reg   registry.Registry
	store watchStore
	ended func(workflowID int64, ev taskEvent) // term.taskEnded
	grace time.Duration
	life  startstop.Base
}

// watchStore is what the worker watch reads and writes of the term's
// fenced store view.
type watchStore interface {
	TaskInFlight(ctx context.Context) ([]model.TaskInstance, error)
	TaskOnHost(ctx context.Context, host string) ([]model.TaskInstance, error)
	TaskNeedFaultTolerance(ctx context.Context, ids []int64, host string) ([]int64, error)
}

func newWorkerWatch(log *zap.Logger, reg registry.Registry, st watchStore, ended func(int64, taskEvent), grace time.Duration) *workerWatch {
	w := &workerWatch{log: log, reg: reg, store: st, ended: ended, grace: grace}
	w.life.Name, w.life.Log = "worker watch", log
	return w
}

func (w *workerWatch) Start(ctx context.Context) error {
	if _, err := w.life.Begin(ctx); err != nil {
		return err
	}
	w.life.Go(w.run)
	return nil
}

func (w *workerWatch) Stop() { _ = w.life.Stop(nil) }

func (w *workerWatch) run(ctx context.Context) {
	changes, unsubscribe := w.reg.Changes()
	defer unsubscribe()
	type loss struct {
		addr string
		at   time.Time
	}
	var pending []loss
	// The baseline is what the DB says workers hold, not only who is live:
	// a worker that died before or during recovery (registered when its
	// tasks were looked at, gone now) is lost as well.
	var inFlight []model.TaskInstance
	if !retry(ctx, w.log, "read the hosts of tasks in flight", func() error {
		var err error
		inFlight, err = w.store.TaskInFlight(ctx)
		return err
	}) {
		return
	}
	known := w.snapshot()
	start := time.Now()
	for _, addr := range goneHolders(inFlight, known) {
		w.log.Warn("a worker holding tasks is gone; its tasks run elsewhere after the grace period",
			zap.String("worker", addr), zap.Duration("grace", w.grace))
		pending = append(pending, loss{addr, start})
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	if len(pending) > 0 {
		timer.Reset(w.grace)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-timer.C:
		}
		now := time.Now()
		cur := w.snapshot()
		for addr, started := range known {
			if s, ok := cur[addr]; !ok || !s.Equal(started) {
				w.log.Warn("worker left or restarted; its tasks run elsewhere after the grace period",
					zap.String("worker", addr), zap.Duration("grace", w.grace))
				pending = append(pending, loss{addr, now})
			}
		}
		known = cur
		var wait time.Duration
		rest := pending[:0]
		for _, l := range pending {
			if left := l.at.Add(w.grace).Sub(now); left > 0 {
				rest = append(rest, l)
				if wait == 0 || left < wait {
					wait = left
				}
				continue
			}
			// Even if it is back: it left because its session ended, and a
			// worker that loses its session kills its tasks. Only what was
			// dispatched before the loss was seen is lost.
			w.failOver(ctx, l.addr, l.at)
		}
		pending = rest
		if wait > 0 {
			timer.Reset(wait)
		}
	}
}

// goneHolders returns, sorted, the hosts that hold tasks in flight by the
// DB but are not among the live workers.
func goneHolders(inFlight []model.TaskInstance, live map[string]time.Time) []string {
	var out []string
	for _, tk := range inFlight {
		if _, ok := live[tk.Host]; ok || tk.Host == "" || slices.Contains(out, tk.Host) {
			continue
		}
		out = append(out, tk.Host)
	}
	slices.Sort(out)
	return out
}

func (w *workerWatch) snapshot() map[string]time.Time {
	out := map[string]time.Time{}
	for _, n := range w.reg.Nodes(registry.RoleWorker) {
		out[n.Addr] = n.Heartbeat.StartTime
	}
	return out
}

// failOver marks the tasks held by a lost worker need_fault_tolerance and
// tells their runners, which start new attempts.
func (w *workerWatch) failOver(ctx context.Context, addr string, lostAt time.Time) {
	var tasks []model.TaskInstance
	var changed []int64
	if leaderWrite(ctx, w.log, "fail over tasks of a lost worker", func() error {
		var err error
		if tasks, err = w.store.TaskOnHost(ctx, addr); err != nil {
			return err
		}
		var ids []int64
		for _, tk := range tasks {
			if tk.DispatchTime == nil || tk.DispatchTime.Before(lostAt) {
				ids = append(ids, tk.ID)
			}
		}
		changed, err = w.store.TaskNeedFaultTolerance(ctx, ids, addr)
		return err
	}) != written {
		return
	}
	byID := map[int64]model.TaskInstance{}
	for _, tk := range tasks {
		byID[tk.ID] = tk
	}
	for _, id := range changed {
		w.ended(byID[id].WorkflowInstanceID, taskEvent{TaskInstanceID: id, State: model.TaskNeedFaultTolerance})
	}
	w.log.Warn("failed over tasks of a lost worker", zap.String("worker", addr), zap.Int("tasks", len(changed)))
}
