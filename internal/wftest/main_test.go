package wftest

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/internal/leakcheck"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
)

func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(leakcheck.Run(m))
}
