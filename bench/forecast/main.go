// Command forecast measures how far a running run's projected end is from
// its actual end on a real `beluga standalone` (SQLite): a chain and a
// fan-out of known sleeps run three times for history, then once more while
// the projection is read as the instance page reads it; the projection seen
// nearest 25, 50 and 75 % of the run is compared with the run's end. Run by
// `make bench`; it prints, it does not judge.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/bench/benchkit"
)

// The workloads: each task's run time is known, so the error is the
// forecast's and the machine's, not the workload's.
var workloads = []struct{ name, spec string }{
	{"chain", benchkit.ForecastChainSpec},
	{"fan", benchkit.ForecastFanSpec},
}

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	history := flag.Int("history", 3, "runs of each workload before the one measured")
	flag.Parse()
	if err := run(*bin, *history); err != nil {
		fmt.Fprintln(os.Stderr, "bench forecast:", err)
		os.Exit(1)
	}
}

// sample is one projection read during the measured run.
type sample struct{ at, end time.Time }

func run(bin string, history int) error {
	sa, err := benchkit.LaunchStandalone(bin, "beluga-bench-forecast-")
	if err != nil {
		return err
	}
	defer sa.Close()
	t := sa.Target
	fmt.Println("== forecast error (SQLite; projected end read every 50 ms, as the instance page does, against the actual end)")
	for _, w := range workloads {
		if err := t.Apply(w.spec); err != nil {
			return err
		}
		for range history {
			if _, err := t.RunAndWait(w.name); err != nil {
				return err
			}
		}
		id, err := t.Run(w.name)
		if err != nil {
			return err
		}
		var samples []sample
		for {
			d, err := t.API.GetInstancePage(context.Background(), id, client.InstanceQuery{Forecast: true, NoTasks: true})
			if err != nil {
				return err
			}
			if f := d.Forecast; f != nil {
				samples = append(samples, sample{f.At.Time, f.End.Time})
			}
			if d.State != "submitted" && d.State != "running" {
				break
			}
			time.Sleep(50 * time.Millisecond) // the page's own pace of reading
		}
		inst, err := t.Wait(id, time.Minute)
		if err != nil {
			return err
		}
		if inst.StartTime == nil || inst.EndTime == nil || len(samples) == 0 {
			return fmt.Errorf("%s: run %d has no start, end or projection", w.name, id)
		}
		start, end := *inst.StartTime, *inst.EndTime
		total := end.Sub(start)
		var parts []string
		for _, pct := range []int{25, 50, 75} {
			at := start.Add(total * time.Duration(pct) / 100)
			best := samples[0]
			for _, s := range samples[1:] {
				if abs(s.at.Sub(at)) < abs(best.at.Sub(at)) {
					best = s
				}
			}
			miss := best.end.Sub(end)
			parts = append(parts, fmt.Sprintf("at %d %%: %+.2f s (%+.1f %% of the run)", pct, miss.Seconds(), 100*miss.Seconds()/total.Seconds()))
		}
		fmt.Printf("%s, run %.2f s, %d projections read: %s\n", w.name, total.Seconds(), len(samples), strings.Join(parts, ", "))
	}
	return nil
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
