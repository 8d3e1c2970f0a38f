package standalone_test

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/internal/leakcheck"
	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
	"github.com/beluga-scheduler/beluga/worker"
)

// TestMain lets this test binary serve as its workers' task guard, and
// removes the private MariaDB's data at the end.
func TestMain(m *testing.M) {
	worker.MaybeRunGuard()
	os.Exit(leakcheck.Run(m, mariadbtest.Cleanup))
}
