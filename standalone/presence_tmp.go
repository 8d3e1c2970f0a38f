package standalone

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/worker"
)

// TEMPORARY: replaced by worker.Presence when it lands.
type presence interface {
	Start(context.Context) error
	Stop()
}

type tmpPresence struct {
	w   *worker.Worker
	reg registry.Registry
	el  registry.Elector
}

func newPresence(w *worker.Worker, reg registry.Registry, el registry.Elector, _ registry.StateWatcher, _ time.Duration, _ *zap.Logger) presence {
	return &tmpPresence{w: w, reg: reg, el: el}
}

func (p *tmpPresence) Start(ctx context.Context) error {
	return p.reg.Register(ctx, registry.Node{Role: registry.RoleWorker, Addr: p.w.Host(), Groups: p.w.Groups(),
		Heartbeat: registry.Heartbeat{StartTime: time.Now().UTC(), Time: time.Now().UTC()}})
}

func (p *tmpPresence) Stop() {}
