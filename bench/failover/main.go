// Command failover measures a real Beluga cluster (ZooKeeper, MariaDB,
// masters, workers and an api as separate processes, started the way the
// cluster tests start them: internal/clustertest) and prints:
//
//   - leader failover: kill -9 of the active master mid-workflow, to the
//     first task dispatched by the new leader (DB dispatch_time minus the
//     kill time);
//   - worker failover: kill -9 of the worker running a task, to the start
//     of the task's new attempt on the other worker (DB start_time minus the
//     kill time);
//   - chain-100 hops and fanout-1000 throughput in cluster mode (1 master,
//     2 workers, MariaDB).
//
// Failover figures are min/median/max over -runs runs at the given session
// timeout (default 5 s, the product default). It is run by `make
// bench-failover`; it prints, it does not judge.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/bench/benchkit"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/internal/clustertest"
	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
)

const project = "bench"

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	runs := flag.Int("runs", 5, "kills per failover figure")
	session := flag.Duration("session-timeout", 5*time.Second, "ZooKeeper session timeout of every process")
	slots := flag.Int("slots", 0, "worker slots for the throughput figures (0: the worker default, 2 x CPUs)")
	only := flag.String("only", "leader,worker,throughput", "figures to measure, comma-separated")
	flag.Parse()
	b := bench{bin: *bin, runs: *runs, session: *session, slots: *slots}
	for _, f := range []struct {
		name string
		run  func() error
	}{{"leader", b.leader}, {"worker", b.worker}, {"throughput", b.throughput}} {
		if !slices.Contains(splitList(*only), f.name) {
			continue
		}
		if err := f.run(); err != nil {
			fmt.Fprintf(os.Stderr, "bench-failover %s: %v\n", f.name, err)
			mariadbtest.Cleanup()
			os.Exit(1)
		}
	}
	mariadbtest.Cleanup()
}

type bench struct {
	bin     string
	runs    int
	session time.Duration
	slots   int
}

// launch starts a cluster in a temp dir; stop tears it down.
func (b bench) launch(o clustertest.Options) (c *clustertest.Cluster, t *benchkit.Target, stop func(), err error) {
	dir, err := os.MkdirTemp("", "beluga-bench-failover-")
	if err != nil {
		return nil, nil, nil, err
	}
	o.Dir, o.Bin, o.Project, o.SessionTimeout = dir, b.bin, project, b.session
	if c, err = clustertest.Launch(o); err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	return c, benchkit.NewTarget("http://"+c.API.Addr, c.Store, project), func() { c.Close(); os.RemoveAll(dir) }, nil
}

// leader kills the active master while a chain of short tasks runs and
// times the first dispatch of the new leader; the killed master comes back
// as the standby before the next run.
func (b bench) leader() error {
	c, t, stop, err := b.launch(clustertest.Options{Masters: 2, Workers: 2})
	if err != nil {
		return err
	}
	defer stop()
	spec := "name: ha\ntasks:\n"
	for i := range 20 {
		dep := ""
		if i > 0 {
			dep = fmt.Sprintf(", depends_on: [t%d]", i-1)
		}
		spec += fmt.Sprintf("  - {name: t%d, command: \"sleep 0.2\"%s}\n", i, dep)
	}
	if err := t.Apply(spec); err != nil {
		return err
	}
	var took []time.Duration
	for range b.runs {
		lead := c.Leader()
		if lead == nil {
			return errors.New("no leader")
		}
		id, err := t.Run("ha")
		if err != nil {
			return err
		}
		if _, err := waitTask(t, id, "t2", 1, func(r model.TaskInstance) bool { return r.State == model.TaskRunning }); err != nil {
			return err
		}
		killed := time.Now()
		lead.Kill9()
		first, err := waitFor(func() (time.Time, bool) {
			tasks, err := t.Tasks(id)
			if err != nil {
				return time.Time{}, false
			}
			var first time.Time
			for _, r := range tasks {
				if r.DispatchTime != nil && r.DispatchTime.After(killed) && (first.IsZero() || r.DispatchTime.Before(first)) {
					first = *r.DispatchTime
				}
			}
			return first, !first.IsZero()
		})
		if err != nil {
			return fmt.Errorf("no dispatch after the kill of %s: %w", lead.Name, err)
		}
		took = append(took, first.Sub(killed))
		if _, err := t.Wait(id, 2*time.Minute); err != nil {
			return err
		}
		if err := lead.Restart(); err != nil {
			return err
		}
		if err := c.WaitReady(time.Minute); err != nil {
			return err
		}
	}
	fmt.Printf("leader failover (kill -9 of the active master -> first dispatch by the new leader), session timeout %v, %d runs: %s\n",
		b.session, len(took), spread(took))
	return nil
}

// worker kills the worker running a 2 s task and times the start of the
// task's next attempt on the other worker; the killed worker comes back
// before the next run.
func (b bench) worker() error {
	c, t, stop, err := b.launch(clustertest.Options{Masters: 1, Workers: 2})
	if err != nil {
		return err
	}
	defer stop()
	if err := t.Apply("name: lost\ntasks:\n  - {name: a, command: \"true\"}\n" +
		"  - {name: b, command: \"sleep 2\", depends_on: [a]}\n  - {name: c, command: \"true\", depends_on: [b]}\n"); err != nil {
		return err
	}
	var took []time.Duration
	for range b.runs {
		id, err := t.Run("lost")
		if err != nil {
			return err
		}
		running, err := waitTask(t, id, "b", 1, func(r model.TaskInstance) bool { return r.State == model.TaskRunning })
		if err != nil {
			return err
		}
		var victim *clustertest.Process
		for _, w := range c.Workers {
			if w.Addr == running.Host {
				victim = w
			}
		}
		if victim == nil {
			return fmt.Errorf("b runs on %q, not one of the workers", running.Host)
		}
		killed := time.Now()
		victim.Kill9()
		again, err := waitTask(t, id, "b", 2, func(r model.TaskInstance) bool { return r.StartTime != nil })
		if err != nil {
			return fmt.Errorf("b did not run again after the kill of %s: %w", victim.Name, err)
		}
		took = append(took, again.StartTime.Sub(killed))
		if _, err := t.Wait(id, 2*time.Minute); err != nil {
			return err
		}
		if err := victim.Restart(); err != nil {
			return err
		}
		if err := c.WaitReady(time.Minute); err != nil {
			return err
		}
	}
	fmt.Printf("worker failover (kill -9 of a worker mid-task -> the task starts on another worker), session timeout %v, %d runs: %s\n",
		b.session, len(took), spread(took))
	return nil
}

// throughput runs chain-100 and fanout-1000 on 1 master and 2 workers.
func (b bench) throughput() error {
	c, t, stop, err := b.launch(clustertest.Options{Masters: 1, Workers: 2, WorkerSlots: b.slots, LogLevel: "warn"})
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("== cluster: 1 master, 2 workers (slots %d each; 0 is 2 x CPUs), MariaDB\n", b.slots)
	for _, spec := range []string{benchkit.ChainSpec("chain100", 100), benchkit.FanoutSpec("fanout1000", 1000), benchkit.OneTaskSpec("one")} {
		if err := t.Apply(spec); err != nil {
			return err
		}
	}
	if _, err := t.RunAndWait("one"); err != nil { // warm-up
		return err
	}
	wall, hops, err := t.Chain("chain100")
	if err != nil {
		return err
	}
	fmt.Println(benchkit.ChainLine("chain-100", wall, hops))
	master := c.Masters[0].Pid()
	cpu := func() (m, w time.Duration) {
		for _, p := range c.Workers {
			w += benchkit.CPUTime(p.Pid())
		}
		return benchkit.CPUTime(master), w
	}
	m0, w0 := cpu()
	inst, err := t.RunAndWait("fanout1000")
	if err != nil {
		return err
	}
	m1, w1 := cpu()
	fmt.Printf("%s; CPU per task: master %.0f µs, workers %.0f µs (tasks' own CPU not included)\n",
		benchkit.FanoutLine("fanout-1000", benchkit.Wall(inst), 1001),
		float64((m1-m0).Microseconds())/1001, float64((w1-w0).Microseconds())/1001)
	return nil
}

// waitTask polls the DB until attempt of task name in instance id matches
// ok, for up to 2 minutes.
func waitTask(t *benchkit.Target, id int64, name string, attempt int, ok func(model.TaskInstance) bool) (model.TaskInstance, error) {
	return waitFor(func() (model.TaskInstance, bool) {
		tasks, err := t.Tasks(id)
		if err != nil {
			return model.TaskInstance{}, false
		}
		for _, r := range tasks {
			if r.Name == name && r.Attempt == attempt && ok(r) {
				return r, true
			}
		}
		return model.TaskInstance{}, false
	})
}

// waitFor polls f every 5 ms (the resolution of the figures) for up to 2
// minutes.
func waitFor[T any](f func() (T, bool)) (T, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v, ok := f()
		if ok {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, errors.New("timed out after 2m")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func spread(ds []time.Duration) string {
	return fmt.Sprintf("min %v, median %v, max %v", benchkit.Pct(ds, 0).Round(time.Millisecond),
		benchkit.Pct(ds, 50).Round(time.Millisecond), benchkit.Pct(ds, 100).Round(time.Millisecond))
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
