// Command ab compares beluga builds on a fan-out: one `beluga standalone` per
// build (SQLite), runs interleaved round by round so background load falls
// on all alike, and prints per build the median wall, tasks/s and the
// process's own CPU per task (the tasks' processes not included). With
// -profile DIR it saves a CPU profile of each build's last run there.
// It prints, it does not judge.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/bench/benchkit"
)

type side struct {
	bin        string
	sa         *benchkit.Standalone
	t          *benchkit.Target
	pprof      string
	walls, cpu []time.Duration
}

func main() {
	bins := flag.String("bins", "", "comma-separated beluga binaries to compare")
	rounds := flag.Int("rounds", 5, "runs per build, interleaved")
	n := flag.Int("n", 1000, "fan-out width")
	profile := flag.String("profile", "", "directory for a CPU profile of each build's last run (made if missing)")
	flag.Parse()
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "ab:", err)
			os.Exit(2)
		}
	}
	var sides []*side
	defer func() {
		for _, s := range sides {
			s.sa.Close()
		}
	}()
	for _, bin := range strings.Split(*bins, ",") {
		s, err := start(bin, *n)
		if s != nil {
			sides = append(sides, s)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "ab: %s: %v\n", bin, err)
			return
		}
	}
	for r := range *rounds {
		for i, s := range sides {
			var raw []byte
			done := make(chan struct{})
			if *profile != "" && r == *rounds-1 {
				go func() {
					defer close(done)
					res, err := http.Get("http://" + s.pprof + "/debug/pprof/profile?seconds=4")
					if err == nil {
						raw, _ = io.ReadAll(res.Body)
						res.Body.Close()
					}
				}()
				time.Sleep(100 * time.Millisecond) // the profile starts before the run
			} else {
				close(done)
			}
			cpu0 := benchkit.CPUTime(s.sa.Proc.Cmd.Process.Pid)
			inst, err := s.t.RunAndWait("fan")
			if err != nil {
				fmt.Fprintf(os.Stderr, "ab: %s: %v\n", s.bin, err)
				return
			}
			s.cpu = append(s.cpu, benchkit.CPUTime(s.sa.Proc.Cmd.Process.Pid)-cpu0)
			s.walls = append(s.walls, benchkit.Wall(inst))
			<-done
			if raw != nil {
				_ = os.WriteFile(filepath.Join(*profile, fmt.Sprintf("cpu%d.pprof", i)), raw, 0o644)
			}
		}
	}
	for _, s := range sides {
		slices.Sort(s.walls)
		slices.Sort(s.cpu)
		w := s.walls[len(s.walls)/2]
		c := s.cpu[len(s.cpu)/2]
		fmt.Printf("%s: wall p50 %v (min %v max %v), %.0f tasks/s, own CPU %.0f µs/task (median of %d)\n", s.bin,
			w.Round(time.Millisecond), s.walls[0].Round(time.Millisecond), s.walls[len(s.walls)-1].Round(time.Millisecond),
			float64(*n+1)/w.Seconds(), float64(c.Microseconds())/float64(*n+1), len(s.walls))
	}
}

func start(bin string, n int) (*side, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return nil, err
	}
	pprof := fmt.Sprintf("127.0.0.1:%d", port)
	os.Setenv("BELUGA_PPROF", pprof)
	sa, err := benchkit.LaunchStandalone(bin, "beluga-ab-")
	if err != nil {
		return nil, err
	}
	s := &side{bin: bin, sa: sa, pprof: pprof}
	t := sa.Target
	if err := t.Apply(benchkit.FanoutSpec("fan", n)); err != nil {
		return s, err
	}
	if _, err := t.RunAndWait("fan"); err != nil { // warm-up
		return s, err
	}
	s.t = t
	return s, nil
}
