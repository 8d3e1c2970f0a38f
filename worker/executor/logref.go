package executor

import (
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// taskRef is the log field naming a dispatched task: instance, task,
// workflow and project (common/logging), the names from its built-in params.
func taskRef(d message.Dispatch) zap.Field {
	return logging.Task(d.WorkflowInstanceID, d.TaskInstanceID, d.Env[params.Project], d.Env[params.Workflow])
}
