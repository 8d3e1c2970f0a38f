package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/bench/benchkit"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// idleCPU is the process's CPU share over d with nothing to do.
func idleCPU(pid int, d time.Duration) float64 {
	c0 := benchkit.CPUTime(pid)
	time.Sleep(d) // measuring an idle process over a span
	return float64(benchkit.CPUTime(pid)-c0) / float64(d) * 100
}

// components splits a CPU profile by what the samples were doing: each
// sample goes to the first of store (gorm, the SQLite, MySQL and PostgreSQL drivers),
// worker, master or api found on its stack, else to "runtime" (GC, the
// scheduler, syscalls of no component's).
func components(raw []byte) (map[string]time.Duration, error) {
	p, err := profile.Parse(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	ci := len(p.SampleType) - 1 // cpu nanoseconds
	out := map[string]time.Duration{}
	for _, s := range p.Sample {
		out[component(s)] += time.Duration(s.Value[ci])
	}
	return out, nil
}

var componentOrder = []string{"store", "worker", "master", "api", "runtime"}

func component(s *profile.Sample) string {
	has := map[string]bool{}
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			fn := l.Function.Name
			switch {
			case strings.Contains(fn, "/common/store.") || strings.HasPrefix(fn, "gorm.io/") ||
				strings.Contains(fn, "sqlite") || strings.Contains(fn, "go-sql-driver") || strings.Contains(fn, "jackc/pgx") || strings.HasPrefix(fn, "database/sql."):
				has["store"] = true
			case strings.Contains(fn, "beluga/worker"):
				has["worker"] = true
			case strings.Contains(fn, "beluga/master."):
				has["master"] = true
			case strings.Contains(fn, "beluga/api.") || strings.HasPrefix(fn, "net/http."):
				has["api"] = true
			}
		}
	}
	for _, c := range componentOrder[:4] {
		if has[c] {
			return c
		}
	}
	return "runtime"
}

// profiled runs f while a CPU profile of the process is taken (pprof on
// pprofAddr) and returns the profile's split by component; the profile
// spans f (it is stopped by its own duration, so f's time is estimated).
func profiled(pprofAddr string, secs int, f func() error) (map[string]time.Duration, error) {
	var raw []byte
	var perr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, secs))
		if err != nil {
			perr = err
			return
		}
		defer res.Body.Close()
		raw, perr = io.ReadAll(res.Body)
	}()
	time.Sleep(100 * time.Millisecond) // the profile starts before the run
	if err := f(); err != nil {
		return nil, err
	}
	wg.Wait()
	if perr != nil {
		return nil, perr
	}
	return components(raw)
}

// componentLine prints own CPU per task by component, scaling the
// profile's split to the process's measured CPU.
func componentLine(parts map[string]time.Duration, cpu time.Duration, tasks int) string {
	var total time.Duration
	for _, d := range parts {
		total += d
	}
	if total == 0 {
		return "own CPU per task by component: no samples"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "own CPU per task by component (CPU profile split, scaled to %.0f µs/task):", float64(cpu.Microseconds())/float64(tasks))
	for _, c := range componentOrder {
		share := float64(parts[c]) / float64(total)
		fmt.Fprintf(&b, " %s %.0f µs", c, share*float64(cpu.Microseconds())/float64(tasks))
	}
	return b.String()
}

// getCost is the server's CPU per GET of instance id with query q.
func getCost(p *benchkit.Target, base string, pid int, id int64, q string, n int) (time.Duration, error) {
	url := fmt.Sprintf("%s/api/v1/instances/%d%s", base, id, q)
	c0 := benchkit.CPUTime(pid)
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+p.API.Token())
	for range n {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %s", url, res.Status)
		}
	}
	return (benchkit.CPUTime(pid) - c0) / time.Duration(n), nil
}

// waitLag runs `beluga workflow run --wait` of wf n times and returns, for
// each, the time from the instance's end (DB time) to the CLI's exit.
func waitLag(p *benchkit.Target, bin, base, wf string, n int) ([]time.Duration, error) {
	var lags []time.Duration
	for range n {
		cmd := exec.Command(bin, "workflow", "run", "-p", p.Project, wf, "--wait", "-o", "json", "--server", base)
		cmd.Env = append(os.Environ(), "BELUGA_TOKEN="+p.API.Token())
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("run --wait: %v: %s", err, out.String())
		}
		exited := time.Now()
		list, _, err := p.Store.InstanceList(context.Background(), store.InstanceFilter{Project: p.Project, Workflow: wf, Limit: 1})
		if err != nil || len(list) == 0 || list[0].EndTime == nil {
			return nil, fmt.Errorf("run --wait: newest run %v %v", list, err)
		}
		lags = append(lags, exited.Sub(*list[0].EndTime))
	}
	return lags, nil
}

// burst puts n workflows on a cron that is due at the same second and
// returns each run's fire lag, checking that each schedule fired exactly
// once. The fire lag is from the schedule time to the run committed and
// claimable: the later of its write (DB time, stamped before the commit;
// the polled counts bound the commit) and its schedule time, since a run
// written ahead is not claimed before it. It also prints the lag to the
// run started (its start time, stamped when the consumer claims it), when
// the runs were committed (polled) and the server's (pid's) CPU until
// then: on a loaded machine the wall is mostly the CPU share the server
// gets.
func burst(p *benchkit.Target, pid, n int) ([]time.Duration, error) {
	ctx := context.Background()
	proj := "burst"
	if _, err := p.API.CreateProject(ctx, proj, "fire burst"); err != nil {
		return nil, err
	}
	for i := range n {
		if _, err := p.API.ApplyWorkflow(ctx, proj, []byte(benchkit.OneTaskSpec(fmt.Sprintf("b%d", i)))); err != nil {
			return nil, err
		}
	}
	// Due at one second far enough ahead for every schedule to be written:
	// a first pass (due in an hour) times the writes, the second sets the
	// second of the burst.
	on := true
	put := func(at time.Time) error {
		for i := range n {
			if _, _, err := p.API.PutSchedule(ctx, proj, fmt.Sprintf("b%d", i), api.ScheduleRequest{
				Cron: fmt.Sprintf("%d %d %d * * *", at.Second(), at.Minute(), at.Hour()), Timezone: "UTC", Enabled: &on}); err != nil {
				return err
			}
		}
		return nil
	}
	t0 := time.Now()
	if err := put(time.Now().UTC().Add(time.Hour)); err != nil {
		return nil, err
	}
	took := time.Since(t0)
	at := time.Now().UTC().Add(3*time.Second + took*3).Truncate(time.Second).Add(time.Second)
	if err := put(at); err != nil {
		return nil, err
	}
	if time.Now().UTC().After(at.Add(-200 * time.Millisecond)) {
		return nil, fmt.Errorf("fire burst: writing %d schedules took past their fire time %v", n, at)
	}
	// An operator's run asked for 1 s into the burst's claims: how soon
	// it starts (the claim's fair share).
	if _, err := p.API.ApplyWorkflow(ctx, p.Project, []byte(benchkit.OneTaskSpec("burstop"))); err != nil {
		return nil, err
	}
	type opRun struct {
		id  int64
		err error
	}
	op := make(chan opRun, 1)
	go func() {
		time.Sleep(time.Until(at.Add(time.Second))) // a time in the burst, not a wait for a condition
		id, err := p.Run("burstop")
		op <- opRun{id, err}
	}()
	cpu0 := benchkit.CPUTime(pid)
	// When the runs become visible (committed), by counting them every
	// 10 ms: the runs' own times are stamped before their commit.
	var seen50, seen99 time.Duration
	for deadline := at.Add(time.Minute); ; time.Sleep(10 * time.Millisecond) { // polling the DB (a count of the runs: more often, the poll itself loads the 2 cores)
		_, total, err := p.Store.InstanceList(ctx, store.InstanceFilter{Project: proj, Limit: 1})
		if err != nil {
			return nil, err
		}
		if seen50 == 0 && total*2 >= int64(n) {
			seen50 = time.Since(at)
		}
		if seen99 == 0 && total*100 >= int64(n)*99 {
			seen99 = time.Since(at)
		}
		if total >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("fire burst: %d of %d runs within a minute", total, n)
		}
	}
	fmt.Printf("fire burst: schedule time -> half of the runs committed %v, 99 %% %v, all %v (polled every 10 ms; negative: before their second); server CPU from the last schedule written to the last run committed %v\n",
		seen50.Round(time.Millisecond), seen99.Round(time.Millisecond), time.Since(at).Round(time.Millisecond), (benchkit.CPUTime(pid) - cpu0).Round(time.Millisecond))
	runs, err := burstRuns(p, proj)
	if err != nil {
		return nil, err
	}
	per := map[string]int{}
	var lags []time.Duration
	for _, r := range runs {
		per[r.Workflow]++
		if r.ScheduleTime == nil || !r.ScheduleTime.Equal(at) {
			return nil, fmt.Errorf("fire burst: run %d has schedule time %v, want %v", r.ID, r.ScheduleTime, at)
		}
		lags = append(lags, max(r.CreatedAt.Sub(at), 0))
	}
	if len(per) != n {
		return nil, fmt.Errorf("fire burst: %d runs of %d workflows, want one of each of %d", len(runs), len(per), n)
	}
	fmt.Printf("fire burst: %d schedules due at one second, each fired once: schedule time -> run committed and claimable %s\n", n, pctLine(lags))
	// Let the runs end before the next figure: 10,000 runs take minutes
	// on a loaded machine.
	for deadline := time.Now().Add(5*time.Minute + time.Duration(n)*100*time.Millisecond); ; time.Sleep(100 * time.Millisecond) { // polling the DB
		_, done, err := p.Store.InstanceList(ctx, store.InstanceFilter{Project: proj, State: model.WorkflowSucceeded, Limit: 1})
		if err != nil {
			return nil, err
		}
		if done >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("fire burst: %d of %d runs succeeded in time", done, n)
		}
	}
	if runs, err = burstRuns(p, proj); err != nil {
		return nil, err
	}
	var started []time.Duration
	for _, r := range runs {
		if r.StartTime == nil {
			return nil, fmt.Errorf("fire burst: run %d succeeded with no start time", r.ID)
		}
		if r.StartTime.Before(at) {
			return nil, fmt.Errorf("fire burst: run %d started at %v, before its schedule time %v", r.ID, r.StartTime, at)
		}
		started = append(started, r.StartTime.Sub(at))
	}
	fmt.Printf("fire burst: schedule time -> run started (claimed by the consumer) %s\n", pctLine(started))
	o := <-op
	if o.err != nil {
		return nil, fmt.Errorf("fire burst: the operator's run: %w", o.err)
	}
	inst, err := p.Wait(o.id, 5*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("fire burst: the operator's run: %w", err)
	}
	if inst.StartTime == nil {
		return nil, fmt.Errorf("fire burst: the operator's run %d has no start time", o.id)
	}
	fmt.Printf("fire burst: an operator's run asked for 1 s after the second started %v after its request (%d of the burst's runs started after it)\n",
		inst.StartTime.Sub(inst.CreatedAt).Round(time.Millisecond), countAfter(runs, *inst.StartTime))
	return lags, nil
}

// countAfter is how many of runs started after t.
func countAfter(runs []model.WorkflowInstance, t time.Time) int {
	n := 0
	for _, r := range runs {
		if r.StartTime != nil && r.StartTime.After(t) {
			n++
		}
	}
	return n
}

// burstRuns reads every run of project, a keyset page of 1,000 at a time
// (a page holds no more).
func burstRuns(p *benchkit.Target, proj string) ([]model.WorkflowInstance, error) {
	var runs []model.WorkflowInstance
	for f := (store.InstanceFilter{Project: proj, Limit: 1000, Keyset: true}); ; {
		page, _, err := p.Store.InstanceList(context.Background(), f)
		if err != nil {
			return nil, err
		}
		page, more := f.More(page)
		runs = append(runs, page...)
		if !more {
			return runs, nil
		}
		f.Before = page[len(page)-1].ID
	}
}

// scaleFanout runs a fan-out of n tasks, the join included (one instance),
// and prints throughput and RSS growth per 1,000 tasks.
func scaleFanout(p *benchkit.Target, pid, n int) error {
	if n > spec.MaxTasks {
		fmt.Printf("fanout-%d: skipped, a workflow holds at most %d tasks and %d bytes of spec (common/spec)\n", n, spec.MaxTasks, spec.MaxSpecBytes)
		return nil
	}
	n-- // the join is one of the n
	name := fmt.Sprintf("fanout%d", n)
	t0 := time.Now()
	if err := p.ApplyWithin(benchkit.FanoutSpec(name, n), 10*time.Minute); err != nil {
		return err
	}
	fmt.Printf("fanout-%d: apply of the spec %v\n", n, time.Since(t0).Round(time.Millisecond))
	rss0 := benchkit.RSSMB(pid)
	cpu0 := benchkit.CPUTime(pid)
	id, err := p.Run(name)
	if err != nil {
		return err
	}
	// The instance API while it runs (its waits derived) and once it ended.
	running := ""
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) { // polling the API
		d, err := p.API.GetInstancePage(context.Background(), id, client.InstanceQuery{NoTasks: true})
		if err != nil {
			return err
		}
		if model.WorkflowState(d.State).Finished() {
			break
		}
		if d.TaskCounts[string(model.TaskSucceeded)] >= n/10 {
			if running, err = getWalls(p, id); err != nil {
				return err
			}
			break
		}
	}
	// At a loaded machine's 100 tasks/s, with room.
	inst, err := p.Wait(id, max(5*time.Minute, time.Duration(n)*20*time.Millisecond))
	if err != nil {
		return err
	}
	ended, err := getWalls(p, id)
	if err != nil {
		return err
	}
	fmt.Printf("GET /api/v1/instances/{id} of the %d-task instance, wall (median of 3): running %s; ended %s\n", n+1, running, ended)
	cpu := benchkit.CPUTime(pid) - cpu0
	rss := benchkit.RSSMB(pid)
	fmt.Printf("%s; own CPU %.0f µs/task; RSS %.1f -> %.1f MB (%+.2f MB per 1,000 tasks)\n",
		benchkit.FanoutLine(fmt.Sprintf("fanout-%d", n), benchkit.Wall(inst), n+1), float64(cpu.Microseconds())/float64(n+1),
		rss0, rss, (rss-rss0)/float64(n+1)*1000)
	return nil
}

// getWalls times GET /instances/{id} with a page of 50 tasks and with the
// default page.
func getWalls(p *benchkit.Target, id int64) (string, error) {
	var out []string
	for _, limit := range []int{50, 0} {
		var ws []time.Duration
		for range 3 {
			t0 := time.Now()
			if _, err := p.API.GetInstancePage(context.Background(), id, client.InstanceQuery{TasksLimit: limit}); err != nil {
				return "", err
			}
			ws = append(ws, time.Since(t0))
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
		label := "tasks_limit=50"
		if limit == 0 {
			label = "default page (10,000 tasks)"
		}
		out = append(out, fmt.Sprintf("%s %v", label, ws[1].Round(time.Millisecond)))
	}
	return strings.Join(out, ", "), nil
}

// concurrentChains starts n runs of a 10-task chain at once and prints the
// throughput from the first run's creation to the last one's end.
func concurrentChains(p *benchkit.Target, pid, n int) error {
	if err := p.Apply(benchkit.ChainSpec("chain10", 10)); err != nil {
		return err
	}
	rss0 := benchkit.RSSMB(pid)
	cpu0 := benchkit.CPUTime(pid)
	ids := make([]int64, n)
	for i := range ids {
		id, err := p.Run("chain10")
		if err != nil {
			return err
		}
		ids[i] = id
	}
	var first, last time.Time
	for _, id := range ids {
		inst, err := p.Wait(id, 10*time.Minute)
		if err != nil {
			return err
		}
		if first.IsZero() || inst.CreatedAt.Before(first) {
			first = inst.CreatedAt
		}
		if inst.EndTime.After(last) {
			last = *inst.EndTime
		}
	}
	cpu := benchkit.CPUTime(pid) - cpu0
	rss := benchkit.RSSMB(pid)
	tasks := n * 10
	fmt.Printf("%d concurrent chain-10 runs: wall %v, %.0f tasks/s (%d tasks); own CPU %.0f µs/task; RSS %.1f -> %.1f MB (%+.2f MB per 1,000 tasks)\n",
		n, last.Sub(first).Round(time.Millisecond), float64(tasks)/last.Sub(first).Seconds(), tasks,
		float64(cpu.Microseconds())/float64(tasks), rss0, rss, (rss-rss0)/float64(tasks)*1000)
	return nil
}

// pctLine renders p50/p99 of ds.
func pctLine(ds []time.Duration) string {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return fmt.Sprintf("p50 %v p99 %v max %v", benchkit.Pct(ds, 50), benchkit.Pct(ds, 99), benchkit.Pct(ds, 100))
}

// profileTo runs f, saving a CPU profile of the process (pprof on
// pprofAddr, up to secs seconds) to file when file is set.
func profileTo(pprofAddr, file string, secs int, f func() error) error {
	if file == "" {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, secs))
		if err != nil {
			errc <- err
			return
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err == nil {
			err = os.WriteFile(file, raw, 0o644)
		}
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond) // the profile starts before the run
	if err := f(); err != nil {
		return err
	}
	return <-errc
}
