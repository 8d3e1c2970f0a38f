package store_test

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
)

// TestMain stops the private database servers and removes their data when
// the tests are done.
func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(leakcheck.Run(m, mariadbtest.Cleanup, pgtest.Cleanup))
}
