// Command bench measures a real `beluga standalone` process, on SQLite and on
// MariaDB, and prints figures: chain-100 wall and per-hop latency, the
// overhead of each task type (a chain of no-ops of each), fanout-1000
// throughput, run-to-first-task trigger latency, and RSS. It is run by
// `make bench`; it prints, it does not judge. bench/failover measures a
// cluster (`make bench-failover`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/bench/benchkit"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
)

// serverDBs make a fresh database of each server backend (sqlite: a file
// in the run's directory).
var serverDBs = map[string]func() (url string, drop func(), err error){
	"mysql":    mariadbtest.NewDatabase,
	"postgres": pgtest.NewDatabase,
}

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	backends := flag.String("db", "sqlite,mysql,postgres", "comma-separated backends: sqlite, mysql, postgres")
	triggers := flag.Int("trigger-runs", 50, "runs for the trigger latency")
	slots := flag.Int("slots", 0, "worker slots (0: the worker default, 2 x CPUs)")
	shell := flag.String("shell", "bash", "shell for tasks: bash or sh")
	python := flag.String("python", "", "interpreter of python tasks (default: the worker's, python3 on PATH)")
	typesChain := flag.Int("types-chain", 50, "length of the per-type no-op chains (0: skip them)")
	typesOnly := flag.Bool("types-only", false, "print only the per-type overhead (after the warm-up run)")
	flag.IntVar(&opts.burst, "burst", 1000, "schedules due at the same second for the fire burst (0: skip it)")
	flag.BoolVar(&opts.scale, "scale", false, "also run the fan-out of 100,000 tasks (several minutes)")
	flag.BoolVar(&opts.skipScale, "no-scale", false, "skip the fan-out of 10,000 and the 1,000 concurrent chains")
	flag.StringVar(&opts.only, "only", "", "run only this part, after fanout-1000 (the reference figure): scale (fan-out of 10,000, the concurrent chains and, with -scale, of 100,000), chains (the concurrent chains alone), get (the instance API's CPU per call) or burst")
	flag.StringVar(&opts.profile, "profile", "", "with -only chains or get: save a CPU profile of the chains or of 2,000 GETs to this file")
	alsoSh := flag.Bool("also-sh", true, "on SQLite, also measure fanout-1000 with --shell sh")
	flag.Parse()
	code := 0
	for _, b := range strings.Split(*backends, ",") {
		b = strings.TrimSpace(b)
		opts.full = true
		if err := benchBackend(b, *bin, *shell, *python, *slots, *triggers, *typesChain, *typesOnly); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", b, err)
			code = 1
			break
		}
		if b == "sqlite" && *alsoSh && *shell != "sh" && !*typesOnly {
			opts.full = false
			if err := benchBackend(b, *bin, "sh", *python, *slots, *triggers, *typesChain, *typesOnly); err != nil {
				fmt.Fprintf(os.Stderr, "bench %s (sh): %v\n", b, err)
				code = 1
				break
			}
		}
	}
	mariadbtest.Cleanup()
	pgtest.Cleanup()
	os.Exit(code)
}

// opts are the figures beyond the basic ones; full is false for the second,
// --shell sh pass (fanout-1000 only).
var opts struct {
	burst            int
	scale, skipScale bool
	only             string
	profile          string
	full             bool
}

func benchBackend(backend, bin, shell, python string, slots, triggers, typesChain int, typesOnly bool) error {
	dir, err := os.MkdirTemp("", "beluga-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbURL := "sqlite://" + filepath.Join(dir, "beluga.db")
	if newDB := serverDBs[backend]; newDB != nil {
		u, drop, err := newDB()
		if err != nil {
			return err
		}
		defer drop()
		dbURL = u
	}
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	pprofPort, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", pprofPort)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, "standalone", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dir,
		"--db", dbURL, "--slots", strconv.Itoa(slots), "--shell", shell, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "BELUGA_PPROF="+pprofAddr)
	if python != "" {
		cmd.Env = append(cmd.Env, "BELUGA_WORKER_PYTHON="+python)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	st, err := store.Open(context.Background(), dbURL, zap.NewNop())
	if err != nil {
		return err
	}
	defer st.Close()
	p := benchkit.NewTarget(fmt.Sprintf("http://127.0.0.1:%d", port), st, "bench")
	if err := p.WaitHealthy(30 * time.Second); err != nil {
		return err
	}
	fmt.Printf("== %s (worker slots %d, shell %s)\n", backend, slots, shell)
	time.Sleep(time.Second) // let start-up garbage settle before the idle reading
	if opts.full {
		anon, file := benchkit.RSSSplit(pid)
		fmt.Printf("idle: RSS %.1f MB (private %.1f MB, mapped from the binary and libraries %.1f MB), CPU %.2f %% (over 5 s)\n",
			benchkit.RSSMB(pid), anon, file, idleCPU(pid, 5*time.Second))
	}
	if err := p.CreateProject(); err != nil {
		return err
	}
	for _, spec := range []string{benchkit.ChainSpec("chain100", 100), benchkit.FanoutSpec("fanout1000", 1000), benchkit.OneTaskSpec("one")} {
		if err := p.Apply(spec); err != nil {
			return err
		}
	}
	// Warm-up run: first exec of the shell, prepared statements.
	if _, err := p.RunAndWait("one"); err != nil {
		return err
	}
	if typesOnly {
		return benchTypes(p, typesChain, python, dir)
	}

	if !opts.full {
		return benchFanout(p, pid, pprofAddr, backend, shell)
	}
	if opts.only != "" {
		return benchOnly(p, pid, pprofAddr, base, backend, shell)
	}
	wall, hops, err := p.Chain("chain100")
	if err != nil {
		return err
	}
	fmt.Println(benchkit.ChainLine("chain-100", wall, hops))
	if typesChain > 0 {
		if err := benchTypes(p, typesChain, python, dir); err != nil {
			return err
		}
	}

	if err := benchFanout(p, pid, pprofAddr, backend, shell); err != nil {
		return err
	}
	fan, _, err := p.Store.InstanceList(context.Background(), store.InstanceFilter{Project: p.Project, Workflow: "fanout1000", Limit: 1})
	if err != nil || len(fan) == 0 {
		return fmt.Errorf("fanout instance: %v", err)
	}
	for _, q := range []string{"", "?tasks_limit=50", "?tasks_limit=0"} {
		c, err := getCost(p, base, pid, fan[0].ID, q, 100)
		if err != nil {
			return err
		}
		fmt.Printf("GET /api/v1/instances/{id}%s of a 1,001-task instance: server CPU %v per call\n", q, c.Round(10*time.Microsecond))
	}

	var trig []time.Duration
	for range triggers {
		t0 := time.Now()
		inst, err := p.RunAndWait("one")
		if err != nil {
			return err
		}
		ts, err := p.Tasks(inst.ID)
		if err != nil || len(ts) != 1 || ts[0].StartTime == nil {
			return fmt.Errorf("trigger run %d: %v %+v", inst.ID, err, ts)
		}
		trig = append(trig, ts[0].StartTime.Sub(t0))
	}
	fmt.Printf("trigger (run request -> first task running) over %d runs: p50 %v p99 %v\n", triggers, benchkit.Pct(trig, 50), benchkit.Pct(trig, 99))
	lags, err := waitLag(p, bin, base, "one", 10)
	if err != nil {
		return err
	}
	fmt.Printf("workflow run --wait, one task, 10 runs: instance end -> CLI exit %s\n", pctLine(lags))
	if err := benchCron(p, 10); err != nil {
		return err
	}
	if opts.burst > 0 && backend != "mysql" {
		if err := burstLine(p, pid); err != nil {
			return err
		}
	}
	return scaleParts(p, pid)
}

// benchOnly is -only: fanout-1000 (the figure the scale ones compare
// with), then the part asked for.
func benchOnly(p *benchkit.Target, pid int, pprofAddr, base, backend, shell string) error {
	switch opts.only {
	case "scale":
		if err := benchFanout(p, pid, pprofAddr, backend, shell); err != nil {
			return err
		}
		return scaleParts(p, pid)
	case "burst":
		return burstLine(p, pid)
	case "chains":
		// The concurrent chains alone (with -profile, under a CPU profile),
		// for A/B rounds of that figure.
		if err := benchFanout(p, pid, pprofAddr, backend, shell); err != nil {
			return err
		}
		return profileTo(pprofAddr, opts.profile, 40, func() error { return concurrentChains(p, pid, 1000) })
	case "get":
		// The instance API's cost alone: a 1,001-task instance's pages.
		if _, err := p.RunAndWait("fanout1000"); err != nil {
			return err
		}
		fan, _, err := p.Store.InstanceList(context.Background(), store.InstanceFilter{Project: p.Project, Workflow: "fanout1000", Limit: 1})
		if err != nil || len(fan) == 0 {
			return fmt.Errorf("fanout instance: %v", err)
		}
		for _, q := range []string{"?tasks_limit=50", "?tasks_limit=0", "?tasks_limit=50", "?tasks_limit=0"} {
			c, err := getCost(p, base, pid, fan[0].ID, q, 300)
			if err != nil {
				return err
			}
			fmt.Printf("GET /api/v1/instances/{id}%s of a 1,001-task instance: server CPU %v per call\n", q, c.Round(10*time.Microsecond))
		}
		// With -profile, a profile of 2,000 more pages of 50.
		return profileTo(pprofAddr, opts.profile, 8, func() error {
			if opts.profile == "" {
				return nil
			}
			_, err := getCost(p, base, pid, fan[0].ID, "?tasks_limit=50", 2000)
			return err
		})
	}
	return fmt.Errorf("-only %q: want scale, chains, get or burst", opts.only)
}

func burstLine(p *benchkit.Target, pid int) error {
	_, err := burst(p, pid, opts.burst) // it prints its figures
	return err
}

// scaleParts are the fan-out of 10,000, the concurrent chains and, with
// -scale, the fan-out of 100,000.
func scaleParts(p *benchkit.Target, pid int) error {
	if !opts.skipScale {
		if err := scaleFanout(p, pid, 10000); err != nil {
			return err
		}
		if err := concurrentChains(p, pid, 1000); err != nil {
			return err
		}
	}
	if opts.scale {
		if err := scaleFanout(p, pid, 100000); err != nil {
			return err
		}
	}
	return nil
}

// benchFanout runs fanout-1000 under a CPU profile and prints throughput,
// own CPU per task and its split by component.
func benchFanout(p *benchkit.Target, pid int, pprofAddr, backend, shell string) error {
	cpu0 := benchkit.CPUTime(pid)
	var inst model.WorkflowInstance
	secs := 6
	parts, err := profiled(pprofAddr, secs, func() error {
		var err error
		inst, err = p.RunAndWait("fanout1000")
		return err
	})
	if err != nil {
		return err
	}
	cpu := benchkit.CPUTime(pid) - cpu0
	fmt.Printf("%s, shell %s; beluga process CPU %v (%.0f µs/task), tasks' CPU not included\n",
		benchkit.FanoutLine("fanout-1000", benchkit.Wall(inst), 1001), shell, cpu.Round(time.Millisecond), float64(cpu.Microseconds())/1001)
	if benchkit.Wall(inst) < time.Duration(secs)*time.Second {
		fmt.Println(componentLine(parts, cpu, 1001))
	}
	fmt.Printf("memory after fanout-1000: RSS %.1f MB\n", benchkit.RSSMB(pid))
	_ = backend
	return nil
}

// benchCron puts a per-second schedule on the one-task workflow for n fires
// and prints how late each run is: from its schedule time to the instance
// being written, and to its task running.
func benchCron(p *benchkit.Target, n int) error {
	ctx := context.Background()
	on, off := true, false
	if _, _, err := p.API.PutSchedule(ctx, p.Project, "one", api.ScheduleRequest{Cron: "* * * * * *", Enabled: &on}); err != nil {
		return err
	}
	var insts []model.WorkflowInstance
	for deadline := time.Now().Add(time.Minute); len(insts) < n; time.Sleep(100 * time.Millisecond) { // polling the DB
		if time.Now().After(deadline) {
			return fmt.Errorf("cron: %d of %d runs within a minute", len(insts), n)
		}
		all, _, err := p.Store.InstanceList(ctx, store.InstanceFilter{Project: p.Project, Workflow: "one",
			State: model.WorkflowSucceeded})
		if err != nil {
			return err
		}
		insts = slices.DeleteFunc(all, func(in model.WorkflowInstance) bool { return in.ScheduleID == 0 })
	}
	if _, _, err := p.API.PutSchedule(ctx, p.Project, "one", api.ScheduleRequest{Cron: "* * * * * *", Enabled: &off}); err != nil {
		return err
	}
	var written, running []time.Duration
	for _, in := range insts[:n] {
		ts, err := p.Tasks(in.ID)
		if err != nil || len(ts) != 1 || ts[0].StartTime == nil {
			return fmt.Errorf("cron run %d: %v %+v", in.ID, err, ts)
		}
		written = append(written, in.CreatedAt.Sub(*in.ScheduleTime))
		running = append(running, ts[0].StartTime.Sub(*in.ScheduleTime))
	}
	fmt.Printf("cron fire over %d runs of a per-second schedule: schedule time -> run written p50 %v p99 %v, -> task running p50 %v p99 %v\n",
		n, benchkit.Pct(written, 50), benchkit.Pct(written, 99), benchkit.Pct(running, 50), benchkit.Pct(running, 99))
	return nil
}
