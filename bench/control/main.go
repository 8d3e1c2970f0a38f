// Command control measures Beluga's flow control and operator actions on a
// real `beluga standalone` (SQLite) and prints figures: the time to
// dispatch the next task as the queue grows (100, 1,000, 10,000 queued
// behind a saturated platform cap), and the time to stop an instance with
// 100 running tasks. Run by `make bench`; it prints, it does not judge.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/bench/benchkit"
	"github.com/beluga-scheduler/beluga/common/model"
)

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	sizes := flag.String("queued", "100,1000,9999", "queue sizes (a fan-out of N plus its join: at most 9,999)")
	flag.Parse()
	if err := queue(*bin, *sizes); err != nil {
		fmt.Fprintln(os.Stderr, "bench control:", err)
		os.Exit(1)
	}
	if err := stop(*bin); err != nil {
		fmt.Fprintln(os.Stderr, "bench control:", err)
		os.Exit(1)
	}
}

// target starts a standalone on a fresh SQLite file.
func target(bin string, extra ...string) (*benchkit.Target, *benchkit.Process, func(), error) {
	sa, err := benchkit.LaunchStandalone(bin, "beluga-bench-control-", extra...)
	if err != nil {
		return nil, nil, nil, err
	}
	return sa.Target, sa.Proc, sa.Close, nil
}

// queue: with a platform cap of 1 every task waits in the master's queue
// behind the one running; the time from one task's end to the next one's
// dispatch is the cost of taking the next task off a queue of that size.
func queue(bin, sizes string) error {
	t, _, done, err := target(bin, "--max-running", "1")
	if err != nil {
		return err
	}
	defer done()
	fmt.Println("== queue and dispatch (SQLite, --max-running 1: the rest of the fan-out waits queued)")
	for _, f := range splitInts(sizes) {
		name := "q" + strconv.Itoa(f)
		if err := t.Apply(benchkit.FanoutSpec(name, f)); err != nil {
			return err
		}
		inst, err := t.RunAndWait(name)
		if err != nil {
			return err
		}
		tasks, err := t.Tasks(inst.ID)
		if err != nil {
			return err
		}
		sort.Slice(tasks, func(i, j int) bool { return tasks[i].DispatchTime.Before(*tasks[j].DispatchTime) })
		// The first 10% and the join ran with a shorter queue: measure the
		// gaps while at least 90% of the fan-out was still queued.
		var gaps []time.Duration
		for i := 1; i < len(tasks) && i <= f/10+1; i++ {
			gaps = append(gaps, tasks[i].DispatchTime.Sub(*tasks[i-1].EndTime))
		}
		fmt.Printf("queued %6d: previous end -> next dispatch p50 %v p99 %v (over %d dispatches); wall %v\n",
			f, benchkit.Pct(gaps, 50), benchkit.Pct(gaps, 99), len(gaps), benchkit.Wall(inst).Round(time.Millisecond))
	}
	return nil
}

// stop: 100 tasks running, then stop; until the instance is stopped with
// every task killed and recorded.
func stop(bin string) error {
	t, _, done, err := target(bin, "--slots", "100")
	if err != nil {
		return err
	}
	defer done()
	spec := "name: hundred\ntasks:\n"
	for i := 0; i < 100; i++ {
		spec += fmt.Sprintf("  - {name: s%d, command: \"sleep 600\"}\n", i)
	}
	if err := t.Apply(spec); err != nil {
		return err
	}
	id, err := t.Run("hundred")
	if err != nil {
		return err
	}
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); ; {
		tasks, err := t.Tasks(id)
		if err != nil {
			return err
		}
		running := 0
		for _, tk := range tasks {
			if tk.State == model.TaskRunning {
				running++
			}
		}
		if running == 100 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of 100 tasks running", running)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t0 := time.Now()
	if _, err := t.API.InstanceAction(ctx, id, "stop", "bench"); err != nil {
		return err
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		inst, err := t.Store.InstanceGet(ctx, id)
		if err != nil {
			return err
		}
		if inst.State == model.WorkflowStopped {
			tasks, _ := t.Tasks(id)
			killed := 0
			for _, tk := range tasks {
				if tk.State == model.TaskKilled {
					killed++
				}
			}
			fmt.Printf("== stop of an instance with 100 running tasks: %v until stopped with %d tasks killed and recorded\n",
				time.Since(t0).Round(time.Millisecond), killed)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instance still %s a minute after stop", inst.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func splitInts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}
