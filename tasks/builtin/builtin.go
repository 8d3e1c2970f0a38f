// Package builtin is the task types Beluga ships. The binaries register
// them at start (Register, from cmd/...); tests that parse specs or run
// tasks do the same in their TestMain. A new type adds one line to Types.
package builtin

import (
	"sync"

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

// Types are the shipped types, in the palette's order.
func Types() []*tasktype.Def {
	return []*tasktype.Def{shell.Type, python.Type, http.Type, sql.Type,
		subworkflow.Type, dependent.Type, conditions.Type, switchtask.Type}
}

var once sync.Once

// Register registers the shipped types, once however often it is called
// (a binary, and the tests of several packages in one process).
func Register() {
	once.Do(func() {
		for _, d := range Types() {
			tasktype.Register(d)
		}
	})
}
