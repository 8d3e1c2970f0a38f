package params

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

// TestMain fails the package's tests when they leave goroutines running.
func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }
