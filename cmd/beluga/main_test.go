package main

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
	"github.com/beluga-scheduler/beluga/worker/executor"
)

// TestMain fails the package's tests when they leave goroutines running.
func TestMain(m *testing.M) {
	builtin.Register()
	tasktype.MaybeRunChild() // sql tasks re-execute this binary
	// Tests' tasks share gate and marker files with the test.
	os.Setenv(executor.TaskIsolationEnv, "off")
	os.Exit(leakcheck.Run(m))
}
