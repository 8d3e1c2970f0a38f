package wftest

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

func TestMain(m *testing.M) {
	builtin.Register()
	os.Exit(leakcheck.Run(m))
}
