package master_test

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/worker"
)

// TestMain lets this test binary serve as its workers' task guard.
func TestMain(m *testing.M) {
	worker.MaybeRunGuard()
	os.Exit(m.Run())
}
