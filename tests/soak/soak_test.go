package soak

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }

var (
	minutes = flag.Float64("minutes", 0, "soak for this many minutes of faults (0: TestSoak does not run; make soak sets it)")
	seed    = flag.Int64("seed", 1, "seed of the faults and the workload")
	keep    = flag.String("keep", "", "run in this directory and keep it (the processes' logs, the ledger, the data) to read after")
)

// TestSoak is the long soak, run by `make soak MINUTES=n SEED=s`: without
// -minutes it does not run, so that `go test ./...` stays short.
func TestSoak(t *testing.T) {
	if *minutes <= 0 {
		t.Skip("the soak runs with make soak MINUTES=n SEED=s")
	}
	dir := *keep
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Duration: time.Duration(*minutes * float64(time.Minute)), Seed: *seed, Dir: dir, Logf: t.Logf}
	res, err := Run(cfg)
	if err != nil {
		t.Fatalf("soak seed %d: %v", *seed, err)
	}
	t.Log("\n" + res.Summary())
	if len(res.Violations) > 0 {
		t.Fatalf("soak seed %d broke %d invariants; replay: %s", *seed, len(res.Violations), res.Replay())
	}
}
