package gitsync

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

// TestMain registers the task types the specs use, and fails the
// package's tests when they leave goroutines running.
func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(leakcheck.Run(m))
}
