package store_test

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/internal/leakcheck"
	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
)

// TestMain removes the private MariaDB's data when the tests are done.
func TestMain(m *testing.M) {
	os.Exit(leakcheck.Run(m, mariadbtest.Cleanup))
}
