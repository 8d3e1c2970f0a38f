package master

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/remote/message"
)

const queryTimeout = 3 * time.Second

// workerClient is the RPC the master has with its workers (remote.Client).
type workerClient interface {
	Request(ctx context.Context, addr string, m message.Message) (message.Message, error)
	Forget(addr string)
}

// workers is the one component of a term that talks to workers: the
// dispatcher's sends, the runners' kills and a rebuild's queries all go
// through it, so the term's requests carry its address and epoch in one
// place, and the kills it starts are waited for in one place (wait).
type workers struct {
	log    *zap.Logger
	client workerClient
	reg    registry.Registry
	self   string // this master's address, for the workers' reports
	epoch  int64
	ctx    context.Context // the term's: kills in flight end with it
	kills  sync.WaitGroup
}

func newWorkers(ctx context.Context, log *zap.Logger, client workerClient, reg registry.Registry, self string, epoch int64) *workers {
	return &workers{log: log.Named("workers"), client: client, reg: reg, self: self, epoch: epoch, ctx: ctx}
}

// dispatch sends one dispatch frame (sealed by the caller) stamped with
// this term, and reports whether the worker accepted it.
func (w *workers) dispatch(ctx context.Context, addr string, msg message.Dispatch) error {
	msg.MasterAddr, msg.Epoch = w.self, w.epoch
	reply, err := w.client.Request(ctx, addr, msg)
	if err != nil {
		return err
	}
	if r, ok := reply.(message.DispatchReply); !ok || !r.Accepted {
		return refusedError(reply)
	}
	return nil
}

// forget drops the connection to addr (a send timed out: it may be hung),
// so the next request redials.
func (w *workers) forget(addr string) { w.client.Forget(addr) }

// live reports whether host is a registered worker now.
func (w *workers) live(host string) bool {
	for _, n := range w.reg.Nodes(registry.RoleWorker) {
		if n.Addr == host {
			return true
		}
	}
	return false
}

// held asks host which of ids it holds; ok is false when it could not be
// asked (no answer within queryTimeout).
func (w *workers) held(ctx context.Context, host string, ids []int64) (held map[int64]bool, ok bool) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	reply, err := w.client.Request(qctx, host, message.Query{TaskInstanceIDs: ids, MasterAddr: w.self, Epoch: w.epoch})
	qr, isReply := reply.(message.QueryReply)
	if err != nil || !isReply {
		w.log.Warn("cannot ask a live worker about its tasks; waiting for its reports", zap.String("worker", host), zap.Error(err))
		return nil, false
	}
	held = make(map[int64]bool, len(qr.Held))
	for _, id := range qr.Held {
		held[id] = true
	}
	return held, true
}

// kill asks host to kill task id, without waiting: the worker reports it
// killed through the result path. When the worker answers that it does not
// hold the task (the dispatch never arrived), notHeld runs, on the kill's
// goroutine, with the kill's context: the caller ends the task itself.
func (w *workers) kill(host string, id int64, notHeld func(ctx context.Context)) {
	w.kills.Add(1)
	go func() {
		defer w.kills.Done()
		kctx, cancel := context.WithTimeout(w.ctx, queryTimeout)
		defer cancel()
		reply, err := w.client.Request(kctx, host, message.Kill{TaskInstanceID: id})
		if kr, ok := reply.(message.KillResult); err == nil && ok && !kr.Found {
			notHeld(kctx)
		} else if err != nil {
			w.log.Warn("kill not delivered; the task ends with its worker or is failed over", logging.TaskID(id),
				zap.String("worker", host), zap.Error(err))
		}
	}()
}

// wait returns once every kill started has ended (each bounded by
// queryTimeout on the term's context).
func (w *workers) wait() { w.kills.Wait() }
