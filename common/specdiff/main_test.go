package specdiff

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

// TestMain registers the task types the specs name; the package's tests
// fail when they leave goroutines running.
func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(leakcheck.Run(m))
}
