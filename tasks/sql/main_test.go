package sql

import (
	"os"
	"testing"

	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
	"github.com/beluga-scheduler/beluga/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	mariadbtest.Cleanup()
	pgtest.Cleanup()
	os.Exit(code)
}
