package standalone_test

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
	"github.com/beluga-scheduler/beluga/worker"
	"github.com/beluga-scheduler/beluga/worker/executor"
)

// TestMain lets this test binary serve as its workers' task guard, and
// removes the private MariaDB's data at the end.
func TestMain(m *testing.M) {
	builtin.Register()
	tasktype.MaybeRunChild() // sql tasks re-execute this binary
	worker.MaybeRunGuard()
	// Tests' tasks share gate and marker files with the test (often in
	// the data dir): they run as the server's user, as before isolation;
	// tests of isolation turn it on (sandbox_test.go).
	os.Setenv(executor.TaskIsolationEnv, "off")
	os.Exit(leakcheck.Run(m, mariadbtest.Cleanup, pgtest.Cleanup))
}
