package store_test

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/internal/leakcheck"
	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
	"github.com/beluga-scheduler/beluga/internal/pgtest"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
)

// TestMain stops the private database servers and removes their data when
// the tests are done.
func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(leakcheck.Run(m, mariadbtest.Cleanup, pgtest.Cleanup))
}
