package clustertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
)

const mainPackage = "github.com/beluga-scheduler/beluga/cmd/beluga"

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Build compiles `beluga` once per test binary (a plain build: the
// processes under test need no race detector to show a double dispatch)
// and returns its path. Main removes it when the tests end.
func Build() (string, error) {
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "beluga-clustertest-")
		if build.err != nil {
			return
		}
		bin := filepath.Join(build.dir, "beluga")
		// go test and go run put their toolchain first on PATH.
		cmd := exec.Command("go", "build", "-o", bin, mainPackage)
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build %s: %v\n%s", mainPackage, err, out)
			return
		}
		build.bin = bin
	})
	return build.bin, build.err
}

// Main runs the tests of a package that uses the harness and removes the
// binary Build made. Use it from TestMain: os.Exit(clustertest.Main(m)).
func Main(m *testing.M) int {
	builtin.Register()
	return leakcheck.Run(m, func() {
		if build.dir != "" {
			os.RemoveAll(build.dir)
		}
		mariadbtest.Cleanup()
		pgtest.Cleanup()
	})
}
