package api

import (
	"net/http"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// TaskType is a registered task type as GET /api/v1/task-types serves it:
// what the registry says (common/tasktype.Info), so a client, the UI or a
// generated one, learns each type's fields from the server it talks to.
type TaskType = tasktype.Info

// listTaskTypes serves the task-type registry, in registration order.
func (h *handlers) listTaskTypes(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, List[TaskType]{Items: tasktype.Describe()})
	return nil
}
