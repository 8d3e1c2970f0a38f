package executor

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// sendLoop hands reports to the transport one at a time, so a task's reports
// leave in the order the owner produced them. It is the only goroutine that
// may block on a slow or dead master; the owner keeps queueing meanwhile.
func (e *Executor) sendLoop(ctx context.Context) {
	defer close(e.senderDone)
	failing := false // log the first failure and the recovery, not every retry
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-e.sendCh:
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := e.sender.Send(sctx, m.addr, m.msg)
			cancel()
			switch {
			case err != nil && !failing && ctx.Err() == nil:
				failing = true
				e.log.Warn("report not sent; retrying every resend interval",
					zap.String("master", m.addr), zap.Error(err))
			case err == nil && failing:
				failing = false
				e.log.Info("reports flowing again", zap.String("master", m.addr))
			}
		}
	}
}
