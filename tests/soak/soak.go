package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/zktest"
)

// Config says how long and with which seed to soak.
type Config struct {
	Duration time.Duration // of the faults phase; the drain comes after
	Seed     int64
	Dir      string // everything: the cluster, the ledger, the logs
	Bin      string // the beluga binary; "": clustertest.Build
	// SessionTimeout is the ZooKeeper session timeout of every process
	// (default 4 s): it bounds failover.
	SessionTimeout time.Duration
	Logf           func(format string, args ...any)
}

// Bounds the run is judged by.
const (
	// readyWithin bounds a fault's recovery: from undoing it to the
	// cluster whole, with a leader.
	readyWithin = 2 * time.Minute
	// drainWithin bounds the drain: every instance final.
	drainWithin = 5 * time.Minute
	// minAvailability is the share of API probes, outside the database's
	// outages, that must be answered without a 5xx.
	minAvailability = 0.99
)

// gapBound is the longest leaderless time a fault may cause: its hold,
// the session timeout twice (the old session to expire, the new leader's
// start) and 20 s for a loaded machine.
func gapBound(f Fault, session time.Duration) time.Duration {
	return f.Hold + 2*session + 20*time.Second
}

// Result is what a soak did and found.
type Result struct {
	Seed       int64
	Duration   time.Duration
	Faults     []Fault
	Instances  int
	ByState    map[model.WorkflowState]int
	Tasks      int // attempt rows
	Executions int // ledger starts
	Started    int // manual runs started by the driver
	Refused    int // manual starts the API refused
	ProbesOK   int
	Probes     int
	InWindows  map[int]int // probe statuses during database outages
	BadProbes  []string    // the probes outside them answered 5xx or not at all: time and status
	Violations []Violation
}

// Replay is the command that runs the same soak again.
func (r Result) Replay() string {
	return fmt.Sprintf("make soak MINUTES=%s SEED=%d", minutesArg(r.Duration), r.Seed)
}

func minutesArg(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", d.Minutes()), "0"), ".")
}

// Run starts the cluster, runs the workload under seeded faults for
// cfg.Duration, drains it and checks the invariants. An error means the
// soak could not run (the cluster did not start); what it found is in
// Result.Violations.
func Run(cfg Config) (Result, error) {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 4 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	res := Result{Seed: cfg.Seed, Duration: cfg.Duration}
	rng := rand.New(rand.NewSource(cfg.Seed))
	proxies := map[string]*zktest.Proxy{}
	defer func() {
		for _, p := range proxies {
			p.Close()
		}
	}()
	via := func(process string, link clustertest.Link, addr string) (string, error) {
		p, err := zktest.StartProxy(addr)
		if err != nil {
			return "", err
		}
		proxies[proxyKey(process, link)] = p
		return p.Addr(), nil
	}
	// Each master's scheduler and state wheel read their time through a
	// clock file the step-leader-clock fault writes.
	clocks, env := map[string]string{}, map[string][]string{}
	for i := range 2 {
		name := fmt.Sprintf("master-%d", i+1)
		clocks[name] = filepath.Join(cfg.Dir, "clock-"+name)
		env[name] = []string{master.ClockOffsetFileEnv + "=" + clocks[name]}
	}
	c, err := clustertest.Launch(clustertest.Options{Masters: 2, Workers: 2, PrivateDB: true, WorkerSlots: 8,
		SessionTimeout: cfg.SessionTimeout, Dir: filepath.Join(cfg.Dir, "cluster"), Bin: cfg.Bin, Via: via,
		StartTimeout: 2 * time.Minute, Env: env})
	if err != nil {
		return res, err
	}
	defer c.Close()
	ledger := LedgerPath(cfg.Dir)
	if err := setUp(c, ledger); err != nil {
		return res, err
	}
	w := startWatcher(c, 200*time.Millisecond)
	d := startDriver(c.Client, c.Project, rng.Int63(), 1500*time.Millisecond)
	in := &injector{c: c, proxies: proxies, watch: w, ready: readyWithin, clocks: clocks}

	kinds := &deck{rng: rng}
	end := time.Now().Add(cfg.Duration)
	time.Sleep(min(10*time.Second, cfg.Duration)) // the workload settles before the first fault
	for time.Now().Before(end) {
		p := nextPlan(rng, kinds, cfg.SessionTimeout)
		quiet := 3*time.Second + time.Duration(rng.Int63n(int64(4*time.Second)))
		f := in.apply(p)
		cfg.Logf("soak: %s of %s held %v, ready %v after healing %s", f.Kind, f.Target, f.Hold.Round(time.Millisecond),
			sinceOrNever(f.Ready, f.Healed), f.Err)
		res.Faults = append(res.Faults, f)
		if f.Err != "" {
			break // a cluster that did not come back: check what it left
		}
		time.Sleep(min(quiet, max(0, time.Until(end)))) // the cluster runs unharmed a while between faults
	}
	res.Started, res.Refused = d.Stop()
	cfg.Logf("soak: %d faults; draining", len(res.Faults))
	drainErr := drain(c, cfg.Logf)
	samples, probes := w.Stop()

	facts, err := readFacts(c, ledger)
	if err != nil {
		return res, err
	}
	res.Violations = Check(facts)
	if drainErr != nil {
		res.Violations = append(res.Violations, Violation{"final", drainErr.Error()})
	}
	attribute(Interrupted(facts), res.Faults)
	var windows [][2]time.Time
	for i := range res.Faults {
		f := &res.Faults[i]
		to := f.Ready
		if to.IsZero() {
			to = time.Now()
		}
		f.Gap = leaderGap(samples, f.Start, to)
		f.Change, f.Changed = termChange(samples, f.Start, to)
		if f.Err != "" {
			res.Violations = append(res.Violations, Violation{"recovery", fmt.Sprintf("%s of %s: %s", f.Kind, f.Target, f.Err)})
		} else if b := gapBound(*f, cfg.SessionTimeout); f.Gap > b {
			res.Violations = append(res.Violations, Violation{"pause", fmt.Sprintf("%s of %s at %s: no leader for %v, bound %v",
				f.Kind, f.Target, f.Start.Format("15:04:05"), f.Gap.Round(time.Millisecond), b)})
		}
		if f.Kind == CutWorkerZK && f.Cut > 0 {
			res.Violations = append(res.Violations, Violation{"blip", fmt.Sprintf("%s of %s at %s for %v (the session is %v): %d running tasks were cut short and failed over",
				f.Kind, f.Target, f.Start.Format("15:04:05"), f.Hold, cfg.SessionTimeout, f.Cut)})
		}
		if f.Kind == KillDB {
			// The API answers from the database: its outage, and the
			// pool's reconnection after, are expected unavailability.
			windows = append(windows, [2]time.Time{f.Start, to.Add(5 * time.Second)})
		}
	}
	var bad []probe
	res.ProbesOK, res.Probes, res.InWindows, bad = availability(probes, windows)
	for _, p := range bad {
		res.BadProbes = append(res.BadProbes, fmt.Sprintf("%s %d", p.at.Format("15:04:05.000"), p.status))
	}
	if res.Probes > 0 && float64(res.ProbesOK) < minAvailability*float64(res.Probes) {
		res.Violations = append(res.Violations, Violation{"availability", fmt.Sprintf("%d of %d API probes outside database outages answered without a 5xx (%.2f%%, want %.0f%%)",
			res.ProbesOK, res.Probes, 100*float64(res.ProbesOK)/float64(res.Probes), 100*minAvailability)})
	}
	res.Instances, res.ByState = len(facts.Instances), map[model.WorkflowState]int{}
	for _, in := range facts.Instances {
		res.ByState[in.State]++
	}
	for _, ts := range facts.Tasks {
		res.Tasks += len(ts)
	}
	for _, e := range facts.Ledger {
		if !e.End {
			res.Executions++
		}
	}
	if len(res.Violations) > 0 {
		cfg.Logf("%s", c.Report())
	}
	return res, nil
}

// attribute counts each interrupted execution against the first fault
// that had not ended (Ready) when it started: faults come one at a time,
// so that is the one that cut it.
func attribute(es []Entry, faults []Fault) {
	for _, e := range es {
		for i := range faults {
			if faults[i].Ready.IsZero() || !faults[i].Ready.Before(e.At) {
				faults[i].Cut++
				break
			}
		}
	}
}

// quantiles are the median and the maximum, rounded to 100 ms ("-" for
// none).
func quantiles(ds []time.Duration) (p50, maxd string) {
	if len(ds) == 0 {
		return "-", "-"
	}
	ds = append([]time.Duration(nil), ds...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)-1)/2].Round(100 * time.Millisecond).String(), ds[len(ds)-1].Round(100 * time.Millisecond).String()
}

func sinceOrNever(t, from time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(from).Round(time.Millisecond).String()
}

// setUp applies the workflows and turns the schedules on.
func setUp(c *clustertest.Cluster, ledger string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, wf := range workflows(ledger) {
		b, err := json.Marshal(wf)
		if err != nil {
			return err
		}
		if _, err := c.Client.ApplyWorkflow(ctx, c.Project, b); err != nil {
			return fmt.Errorf("apply workflow %s: %w", wf.Name, err)
		}
	}
	for _, j := range cronJobs {
		if _, _, err := c.Client.PutSchedule(ctx, c.Project, j.name, scheduleRequest(j, true)); err != nil {
			return fmt.Errorf("schedule %s: %w", j.name, err)
		}
	}
	return nil
}

// drain turns every schedule off and waits until every instance is final.
// The API may still be coming back from the last fault: each step is
// retried until the deadline.
func drain(c *clustertest.Cluster, logf func(string, ...any)) error {
	deadline := time.Now().Add(drainWithin)
	for _, j := range cronJobs {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _, err := c.Client.PutSchedule(ctx, c.Project, j.name, scheduleRequest(j, false))
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("turn schedule %s off: %w", j.name, err)
			}
			time.Sleep(time.Second) // the API is still recovering
		}
	}
	var open []string
	for {
		open = open[:0]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		insts, err := allInstances(ctx, c.Store)
		cancel()
		if err == nil {
			for _, in := range insts {
				if !in.State.Finished() {
					open = append(open, fmt.Sprintf("%d (%s) %s", in.ID, in.Workflow, in.State))
				}
			}
			if len(open) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after the drain's %v: %d instances not final (%v): %s", drainWithin, len(open), err, strings.Join(open, ", "))
		}
		time.Sleep(time.Second) // instances end on the cluster's clock
	}
}

func allInstances(ctx context.Context, st *store.Store) ([]model.WorkflowInstance, error) {
	var out []model.WorkflowInstance
	for {
		page, total, err := st.InstanceList(ctx, store.InstanceFilter{Limit: 1000, Offset: len(out)})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) == 0 || int64(len(out)) >= total {
			return out, nil
		}
	}
}

// readFacts reads the ledger and the database.
func readFacts(c *clustertest.Cluster, ledger string) (Facts, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := Facts{Tasks: map[int64][]model.TaskInstance{}, MayStop: map[string]bool{}}
	lf, err := os.Open(ledger)
	if err != nil {
		return f, fmt.Errorf("ledger: %w", err)
	}
	defer lf.Close()
	if f.Ledger, err = ParseLedger(lf); err != nil {
		return f, err
	}
	if f.Instances, err = allInstances(ctx, c.Store); err != nil {
		return f, fmt.Errorf("instances: %w", err)
	}
	for _, in := range f.Instances {
		ts, err := c.Store.TaskList(ctx, in.ID)
		if err != nil {
			return f, fmt.Errorf("tasks of instance %d: %w", in.ID, err)
		}
		f.Tasks[in.ID] = ts
	}
	for _, j := range cronJobs {
		sc, err := c.Store.ScheduleGet(ctx, c.Project, j.name)
		if err != nil {
			return f, fmt.Errorf("schedule %s: %w", j.name, err)
		}
		f.Schedules = append(f.Schedules, sc)
		if j.overlap == model.OverlapReplace {
			f.MayStop[j.name] = true
		}
	}
	return f, nil
}

// Summary renders the result: faults by kind with the leaderless time
// each caused and the time to a new term where there was one (p50, max),
// instances, tasks, probes and violations.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak seed %d, %s of faults: %d faults, %d instances %v, %d attempt rows, %d executions (%d runs started by hand, %d refused)\n",
		r.Seed, r.Duration, len(r.Faults), r.Instances, r.ByState, r.Tasks, r.Executions, r.Started, r.Refused)
	gaps, changes := map[Kind][]time.Duration{}, map[Kind][]time.Duration{}
	for _, f := range r.Faults {
		gaps[f.Kind] = append(gaps[f.Kind], f.Gap)
		if f.Changed {
			changes[f.Kind] = append(changes[f.Kind], f.Change)
		}
	}
	cut := map[Kind]int{}
	for _, f := range r.Faults {
		cut[f.Kind] += f.Cut
	}
	fmt.Fprintf(&b, "%-20s %5s %10s %10s %8s %12s %12s %10s\n", "fault", "count", "gap p50", "gap max", "changes", "change p50", "change max", "tasks cut")
	for _, k := range Kinds {
		if len(gaps[k]) == 0 {
			continue
		}
		g50, gmax := quantiles(gaps[k])
		c50, cmax := quantiles(changes[k])
		fmt.Fprintf(&b, "%-20s %5d %10s %10s %8d %12s %12s %10d\n", k, len(gaps[k]), g50, gmax, len(changes[k]), c50, cmax, cut[k])
	}
	for _, f := range r.Faults {
		change := "-"
		if f.Changed {
			change = f.Change.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %s %-20s %-12s hold %-6v gap %-6v new term after %-6s cut %-3d ready %s %s %s\n", f.Start.Format("15:04:05"), f.Kind, f.Target,
			f.Hold.Round(100*time.Millisecond), f.Gap.Round(100*time.Millisecond), change, f.Cut, sinceOrNever(f.Ready, f.Healed), f.Detail, f.Err)
	}
	if r.Probes > 0 {
		fmt.Fprintf(&b, "API: %d of %d probes answered without a 5xx outside database outages (%.2f%%); during them: %v\n",
			r.ProbesOK, r.Probes, 100*float64(r.ProbesOK)/float64(r.Probes), r.InWindows)
		if len(r.BadProbes) > 0 {
			fmt.Fprintf(&b, "  outside them, not answered or 5xx (status 0: no answer within 5 s): %s\n", strings.Join(r.BadProbes[:min(len(r.BadProbes), 10)], ", "))
		}
	}
	if len(r.Violations) == 0 {
		b.WriteString("every invariant held\n")
		return b.String()
	}
	fmt.Fprintf(&b, "%d violations:\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	fmt.Fprintf(&b, "replay: %s\n", r.Replay())
	return b.String()
}
