package sql

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
)

// TestMain serves as the sql task's child process (runChild) too.
func TestMain(m *testing.M) {
	tasktype.Register(Type)
	tasktype.MaybeRunChild()
	code := m.Run()
	mariadbtest.Cleanup()
	pgtest.Cleanup()
	os.Exit(code)
}
