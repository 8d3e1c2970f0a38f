package api

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
)

// TestMain fails the package's tests when they leave goroutines running,
// and removes the private MariaDB's data (login tests on MariaDB).
func TestMain(m *testing.M) {
	builtin.Register()
	tasktype.MaybeRunChild() // sql tasks re-execute this binary
	os.Exit(leakcheck.Run(m, mariadbtest.Cleanup))
}
