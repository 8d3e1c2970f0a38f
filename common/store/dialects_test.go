package store_test

import (
	"path/filepath"
	"testing"

	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
)

// testDialect is one database the conformance suite (each) and the
// benchmarks run on: a new dialect runs them all by adding one line to
// testDialects.
type testDialect struct {
	name string
	url  func(t testing.TB) string // a fresh, empty database
	// serverPid is the tests' private server process, for its CPU time
	// (nil or 0: none, or one that is not the tests').
	serverPid func() int
}

var testDialects = []testDialect{
	{"sqlite", func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "b.db") }, nil},
	{"mysql", mariadbtest.URL, mariadbtest.SharedPid},
	{"postgres", pgtest.URL, pgtest.SharedPid},
}

// testDialectNamed is the entry of testDialects named name.
func testDialectNamed(t testing.TB, name string) testDialect {
	for _, d := range testDialects {
		if d.name == name {
			return d
		}
	}
	t.Fatalf("no test dialect %q", name)
	return testDialect{}
}
