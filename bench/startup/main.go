// Command startup measures what a beluga process costs before it does its
// work and prints figures: `beluga --help` and `beluga version` (wall time
// and the process's own CPU, p50 and p90; target: under 15 ms), and a
// one-task `beluga workflow run --wait` against a real standalone (SQLite)
// from the command's start to its exit. Run by `make bench`; it prints, it
// does not judge.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/beluga-scheduler/beluga/bench/benchkit"
)

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	n := flag.Int("runs", 30, "samples of each figure")
	flag.Parse()
	if err := bench(*bin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "bench startup:", err)
		os.Exit(1)
	}
}

func bench(bin string, n int) error {
	fmt.Println("== start-up (a new beluga process each run)")
	for _, args := range [][]string{{"--help"}, {"version"}} {
		wall, cpu, err := runs(n, func() *exec.Cmd { return exec.Command(bin, args...) })
		if err != nil {
			return err
		}
		fmt.Printf("beluga %s, %d runs: %s\n", args[0], n, line(wall, cpu))
	}
	sa, err := benchkit.LaunchStandalone(bin, "beluga-bench-startup-")
	if err != nil {
		return err
	}
	defer sa.Close()
	if err := sa.Apply(benchkit.OneTaskSpec("one")); err != nil {
		return err
	}
	// Warm-up: the worker's first exec of the shell.
	if _, err := sa.RunAndWait("one"); err != nil {
		return err
	}
	wall, cpu, err := runs(n, func() *exec.Cmd {
		cmd := exec.Command(bin, "workflow", "run", "-p", sa.Project, "one", "--wait", "--server", sa.Proc.Base)
		cmd.Env = append(os.Environ(), "BELUGA_TOKEN="+sa.API.Token())
		return cmd
	})
	if err != nil {
		return err
	}
	fmt.Printf("beluga workflow run --wait (one task, standalone on SQLite), %d runs: %s\n", n, line(wall, cpu))
	return nil
}

// runs starts n processes made by mk one after another and returns each
// one's wall time (start to exit) and its own CPU (user + system).
func runs(n int, mk func() *exec.Cmd) (wall, cpu []time.Duration, err error) {
	for range n {
		cmd := mk()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, nil, fmt.Errorf("%v: %v: %s", cmd.Args, err, out.String())
		}
		wall = append(wall, time.Since(t0))
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	return wall, cpu, nil
}

func line(wall, cpu []time.Duration) string {
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("wall p50 %v p90 %v, CPU p50 %v p90 %v",
		r(benchkit.Pct(wall, 50)), r(benchkit.Pct(wall, 90)), r(benchkit.Pct(cpu, 50)), r(benchkit.Pct(cpu, 90)))
}
