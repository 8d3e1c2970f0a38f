package wftest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// mockWorker is a worker that runs nothing: it speaks the real wire
// protocol to the master (authenticated dispatch, ack, result, DB-ack), so
// the master's dispatcher, task event service and runner do what they do
// with a real worker, and answers each dispatch with the outcome the
// current case's mock declares for that task and attempt.
type mockWorker struct {
	log    *zap.Logger
	server *remote.Server
	client *remote.Client

	mu    sync.Mutex
	mocks map[string]Mock // the case running now, by task name
	sent  map[int64]message.Dispatch
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
}

func newMockWorker(secret clusterkey.Secret, log *zap.Logger) *mockWorker {
	w := &mockWorker{log: log.Named("mock-worker"), sent: map[int64]message.Dispatch{}}
	w.ctx, w.stop = context.WithCancel(context.Background())
	auth := func() *remote.Auth {
		return &remote.Auth{Key: secret.Key(clusterkey.PurposeHandshake), Role: remote.RoleWorker, ID: w.addr}
	}
	w.server = remote.NewServer("127.0.0.1:0", w.handle, remote.Options{Log: w.log, Auth: auth()})
	// DB-acks come back on the client's connections: nothing to do, a mock
	// never re-sends.
	w.client = remote.NewClient(func(remote.Peer, uint64, message.Message) {}, remote.Options{Log: w.log, Auth: auth()})
	return w
}

func (w *mockWorker) addr() string { return w.server.Addr() }

func (w *mockWorker) start(ctx context.Context) error {
	if err := w.server.Start(ctx); err != nil {
		return fmt.Errorf("mock worker: %w", err)
	}
	if err := w.client.Start(ctx); err != nil {
		return fmt.Errorf("mock worker: %w", err)
	}
	return nil
}

func (w *mockWorker) close() {
	w.stop()
	w.wg.Wait()
	w.client.Stop()
	w.server.Stop()
}

// use sets the mocks of the case about to run.
func (w *mockWorker) use(m map[string]Mock) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mocks = m
}

// dispatched is what the master sent for a task instance: its params as
// the task receives them (secret values masked).
func (w *mockWorker) dispatched(id int64) (message.Dispatch, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.sent[id]
	return d, ok
}

func (w *mockWorker) handle(p remote.Peer, reqID uint64, m message.Message) {
	switch m := m.(type) {
	case message.Dispatch:
		if id, ok := remote.PeerIdentity(p); !ok || id.Role != remote.RoleMaster {
			_ = p.Send(reqID, message.DispatchReply{TaskInstanceID: m.TaskInstanceID, Reason: "not from a master"})
			return
		}
		w.mu.Lock()
		env := maps.Clone(m.Env)
		for _, k := range m.SecretEnv {
			if _, ok := env[k]; ok {
				env[k] = "***"
			}
		}
		d := m
		d.Env = env
		w.sent[m.TaskInstanceID] = d
		mock := w.mocks[m.Name]
		w.mu.Unlock()
		_ = p.Send(reqID, message.DispatchReply{TaskInstanceID: m.TaskInstanceID, Accepted: true})
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.report(m, mock.Attempt(m.Attempt)) }()
	case message.Kill:
		// Reports are sent at once: there is never a task left to kill.
		_ = p.Send(reqID, message.KillResult{TaskInstanceID: m.TaskInstanceID})
	case message.Query:
		_ = p.Send(reqID, message.QueryReply{})
	case message.Ping:
		_ = p.Send(reqID, message.Pong{})
	}
}

// report sends the ack and the result of one attempt, as a worker whose
// task ended before its running report was due. The duration is virtual:
// past the kill timeout the attempt fails as the worker fails it.
func (w *mockWorker) report(d message.Dispatch, o Outcome) {
	start := time.Now().UTC()
	host := w.addr()
	send := func(m message.Message) {
		ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
		defer cancel()
		if err := w.client.Send(ctx, d.MasterAddr, m); err != nil {
			w.log.Warn("report not sent", zap.Int64("task", d.TaskInstanceID), zap.Error(err))
		}
	}
	send(message.Ack{TaskInstanceID: d.TaskInstanceID, WorkflowInstanceID: d.WorkflowInstanceID, Host: host,
		LogPath: "mock", Time: start})
	r := message.Result{TaskInstanceID: d.TaskInstanceID, WorkflowInstanceID: d.WorkflowInstanceID, Host: host,
		State: "succeeded", ExitCode: o.ExitCode, StartTime: start, Message: o.Message, Outputs: o.Outputs}
	limit := time.Duration(d.TimeoutMillis) * time.Millisecond
	switch {
	case limit > 0 && time.Duration(o.Duration) > limit:
		r.State, r.ExitCode, r.Outputs = "failed", -1, nil
		r.Message = fmt.Sprintf("timed out after %s (mocked duration %s)", limit, time.Duration(o.Duration))
	case o.ExitCode != 0:
		r.State, r.Outputs = "failed", nil
		if r.Message == "" {
			r.Message = fmt.Sprintf("exit code %d (mocked)", o.ExitCode)
		}
	}
	r.EndTime = time.Now().UTC()
	if !r.EndTime.After(start) {
		r.EndTime = start.Add(time.Microsecond) // a run that started: its end after its start
	}
	send(r)
}
