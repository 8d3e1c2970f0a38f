package master

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

const maxReportBatch = 1000

// persistTimeout bounds one batch's write: Stop waits for the batch in hand,
// and a hung DB must not make it wait for ever (unacked reports are re-sent).
const persistTimeout = 5 * time.Second

// report is one worker report waiting to be persisted.
type report struct {
	peer       remote.Peer
	workflowID int64
	rep        model.Report
	why        string    // a failure the master made itself: why
	at         time.Time // when it arrived (report-to-DB-ack latency)
}

// taskEvent tells a runner that one of its task instances changed state.
type taskEvent struct {
	TaskInstanceID int64
	State          model.TaskState
	StartTime      time.Time         // running and results
	EndTime        time.Time         // results
	Why            string            // a failed result: why
	Outputs        map[string]string // a success: what the task exported
}

// eventService persists worker reports in batches, one transaction per
// batch, answers each with a DB-ack, and feeds results to their runners
// (docs/architecture.md, "Lifecycle of a run", steps 7-8). Batching is what keeps the DB from being the limit on
// a wide fan-out. A failed batch is dropped: workers re-send until DB-acked.
type eventService struct {
	log     *zap.Logger
	store   reportStore
	deliver func(workflowID int64, ev taskEvent)
	ended   func(workflowID int64, ev taskEvent) // a result: places freed, then delivered (term.taskEnded)
	inbox   *mailbox[report]
	about   func(workflowID, taskID int64) zap.Field // the log fields naming a task (term.taskRef)
	life    startstop.Base
}

func newEventService(log *zap.Logger, st reportStore, deliver, ended func(int64, taskEvent)) *eventService {
	e := &eventService{log: log.Named("task-events"), store: st, deliver: deliver, ended: ended, inbox: newMailbox[report](),
		// The task's id until a term names it fuller (term.taskRef): a
		// service built without one logged a foreign report through nil.
		about: func(_, taskID int64) zap.Field { return zap.Int64("task", taskID) }}
	e.life.Name, e.life.Log = "task events", e.log
	return e
}

// Handle takes a report from the transport; it never blocks.
func (e *eventService) Handle(p remote.Peer, m message.Message) {
	switch v := m.(type) {
	case message.Ack:
		e.inbox.Put(report{peer: p, workflowID: v.WorkflowInstanceID, rep: model.Report{ID: v.TaskInstanceID, Kind: model.ReportAck,
			Host: v.Host, LogPath: v.LogPath}, at: time.Now()})
	case message.Running:
		e.inbox.Put(report{peer: p, workflowID: v.WorkflowInstanceID, rep: model.Report{ID: v.TaskInstanceID, Kind: model.ReportRunning,
			Host: v.Host, PID: v.PID, StartTime: v.StartTime}, at: time.Now()})
	case message.Result:
		e.inbox.Put(report{peer: p, workflowID: v.WorkflowInstanceID, rep: model.Report{ID: v.TaskInstanceID, Kind: model.ReportResult,
			Host: v.Host, State: resultState(v.State), ExitCode: v.ExitCode, PID: v.PID, StartTime: v.StartTime, EndTime: v.EndTime,
			Outputs: v.Outputs}, why: failedWhy(v), at: time.Now()})
	}
}

// Failed feeds the failure of a task that never started on host (its
// dispatch was refused as invalid) into the batch, as the worker's result
// would be: persisted if host still holds it, then delivered to its runner.
func (e *eventService) Failed(workflowID, taskInstanceID int64, host, why string) {
	e.inbox.Put(report{noPeer{}, workflowID, model.Report{ID: taskInstanceID, Kind: model.ReportResult,
		Host: host, State: model.TaskFailed, ExitCode: -1, EndTime: time.Now()}, why, time.Now()})
}

// noPeer takes the DB-ack of a report the master made itself.
type noPeer struct{}

func (noPeer) Send(uint64, message.Message) error { return nil }
func (noPeer) RemoteAddr() string                 { return "" }

// failedWhy is a failed result's message (a bad output, an http status),
// which the instance's reason shows.
func failedWhy(r message.Result) string {
	if resultState(r.State) == model.TaskFailed {
		return r.Message
	}
	return ""
}

func resultState(s string) model.TaskState {
	switch model.TaskState(s) {
	case model.TaskSucceeded, model.TaskKilled:
		return model.TaskState(s)
	}
	return model.TaskFailed
}

func (e *eventService) Start(ctx context.Context) error {
	if _, err := e.life.Begin(ctx); err != nil {
		return err
	}
	e.life.Go(e.run)
	return nil
}

// Stop ends the loop after the batch in hand is persisted and acked, or its
// write timed out (persistTimeout: a hung DB cannot hold Stop).
func (e *eventService) Stop() { _ = e.life.Stop(nil) }

func (e *eventService) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.inbox.Ready():
		}
		pending := e.inbox.Drain()
		for len(pending) > 0 {
			n := min(len(pending), maxReportBatch)
			e.apply(pending[:n])
			pending = pending[n:]
		}
	}
}

func (e *eventService) apply(batch []report) {
	reps := make([]model.Report, len(batch))
	acks, results := false, false
	for i, r := range batch {
		reps[i] = r.rep
		acks = acks || r.rep.Kind == model.ReportAck
		results = results || r.rep.Kind == model.ReportResult
	}
	if acks {
		failpoint.Hit(failpoint.BeforePersistAck)
	}
	if results {
		failpoint.Hit(failpoint.BeforePersistResult)
	}
	// Not cancelled by Stop: a batch that was read is finished and acked,
	// or given up after persistTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	outcomes, err := e.store.TaskApplyReports(ctx, reps)
	cancel()
	if errors.Is(err, store.ErrFenced) {
		// Not acked: the workers re-send to the current leader (the term
		// heard of the fence from its store view).
		return
	}
	if err != nil {
		e.log.Error("persist worker reports; workers will re-send", zap.Int("reports", len(batch)), zap.Error(err))
		return
	}
	if results {
		failpoint.Hit(failpoint.BeforeDBAckResult)
	}
	for i, r := range batch {
		kind := message.AckKind(r.rep.Kind)
		foreign := outcomes[i] == model.ReportForeign
		if foreign {
			e.log.Warn("report from a worker that does not own the task; telling it to drop the task",
				e.about(r.workflowID, r.rep.ID), zap.String("worker", r.rep.Host), zap.String("kind", string(kind)))
		}
		if err := r.peer.Send(0, message.DBAck{TaskInstanceID: r.rep.ID, Kind: kind, Kill: foreign}); err != nil {
			e.log.Debug("db-ack not sent; the worker will re-send", e.about(r.workflowID, r.rep.ID), zap.Error(err))
		}
		observeAck(r.at)
		if outcomes[i] != model.ReportApplied {
			continue
		}
		switch r.rep.Kind {
		case model.ReportResult:
			e.ended(r.workflowID, taskEvent{TaskInstanceID: r.rep.ID, State: r.rep.State, StartTime: r.rep.StartTime, EndTime: r.rep.EndTime, Why: r.why, Outputs: r.rep.Outputs})
		case model.ReportRunning:
			e.deliver(r.workflowID, taskEvent{TaskInstanceID: r.rep.ID, State: model.TaskRunning, StartTime: r.rep.StartTime})
		}
	}
}
