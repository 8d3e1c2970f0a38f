// Package builtin registers the task types Beluga ships. Importing it (the
// spec parser does) makes them known; a new type adds one line here.
package builtin

import (
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/conditions"
	"github.com/beluga-scheduler/beluga/tasks/dependent"
	"github.com/beluga-scheduler/beluga/tasks/http"
	"github.com/beluga-scheduler/beluga/tasks/python"
	"github.com/beluga-scheduler/beluga/tasks/shell"
	"github.com/beluga-scheduler/beluga/tasks/sql"
	"github.com/beluga-scheduler/beluga/tasks/subworkflow"
	switchtask "github.com/beluga-scheduler/beluga/tasks/switch"
)

func init() {
	tasktype.Register(shell.Type)
	tasktype.Register(python.Type)
	tasktype.Register(http.Type)
	tasktype.Register(sql.Type)
	tasktype.Register(conditions.Type)
	tasktype.Register(switchtask.Type)
	tasktype.Register(subworkflow.Type)
	tasktype.Register(dependent.Type)
}
