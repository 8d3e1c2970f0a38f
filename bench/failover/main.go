// Command failover measures a real Beluga cluster (ZooKeeper, MariaDB,
// masters, workers and an api as separate processes, started the way the
// cluster tests start them: testkit/clustertest) and prints:
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
// timeout (default 5 s, the product default). Throughput runs -rounds times
// on each binary of -bins, interleaved (a cluster each, with a MariaDB of its
// own whose CPU and statement counters are printed per task); -profile saves
// CPU profiles of the master and workers over the last fan-out, -queries the
// last fan-out's statements by shape (MariaDB's general log). It is run by
// `make bench-failover`; it prints, it does not judge.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql" // the server's status counters

	"github.com/beluga-scheduler/beluga/bench/benchkit"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
)

const project = "bench"

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	bins := flag.String("bins", "", "comma-separated beluga binaries whose throughput figures are compared, interleaved (overrides -bin)")
	rounds := flag.Int("rounds", 1, "throughput runs per binary")
	profile := flag.String("profile", "", "directory for CPU profiles of the master and workers over the last fan-out")
	queries := flag.String("queries", "", "file for the MariaDB statements of the last fan-out, counted by shape (general log: it slows the server)")
	runs := flag.Int("runs", 5, "kills per failover figure")
	session := flag.Duration("session-timeout", 5*time.Second, "ZooKeeper session timeout of every process")
	slots := flag.Int("slots", 0, "worker slots for the throughput figures (0: the worker default, 2 x CPUs)")
	only := flag.String("only", "leader,worker,throughput", "figures to measure, comma-separated")
	defs := flag.Int("defs", 0, "workflow definitions (one in 10 on a far yearly schedule) seeded before the leader kills: the time to lead with them")
	flag.Parse()
	builtin.Register() // -defs parses the specs it seeds
	b := bench{bins: splitList(*bins), runs: *runs, session: *session, slots: *slots, rounds: max(1, *rounds), profile: *profile, queries: *queries, defs: *defs}
	if len(b.bins) == 0 {
		b.bins = []string{*bin}
	}
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
	bins    []string // the failover figures use the first
	rounds  int
	profile string
	queries string
	runs    int
	session time.Duration
	slots   int
	defs    int
}

// launch starts a cluster in a temp dir; stop tears it down.
func (b bench) launch(bin string, o clustertest.Options) (c *clustertest.Cluster, t *benchkit.Target, stop func(), err error) {
	dir, err := os.MkdirTemp("", "beluga-bench-failover-")
	if err != nil {
		return nil, nil, nil, err
	}
	o.Dir, o.Bin, o.Project, o.SessionTimeout = dir, bin, project, b.session
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
	c, t, stop, err := b.launch(b.bins[0], clustertest.Options{Masters: 2, Workers: 2})
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
	schedules := 0
	if b.defs > 0 {
		t0 := time.Now()
		if schedules, err = benchkit.SeedDefinitions(context.Background(), c.Store, project, 0, b.defs, 10); err != nil {
			return err
		}
		fmt.Printf("seeded %d definitions (%d scheduled) in the store directly: %v\n", b.defs, schedules, time.Since(t0).Round(time.Millisecond))
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
	fmt.Printf("leader failover (kill -9 of the active master -> first dispatch by the new leader), session timeout %v, %d definitions, %d schedules, %d runs: %s\n",
		b.session, b.defs, schedules, len(took), spread(took))
	if lead := c.Leader(); lead != nil {
		fmt.Printf("leader RSS after the last failover: %.1f MB\n", benchkit.RSSMB(lead.Pid()))
	}
	return nil
}

// worker kills the worker running a 2 s task and times the start of the
// task's next attempt on the other worker; the killed worker comes back
// before the next run.
func (b bench) worker() error {
	c, t, stop, err := b.launch(b.bins[0], clustertest.Options{Masters: 1, Workers: 2})
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

// throughput runs chain-100 and fanout-1000 on 1 master and 2 workers, for
// each binary of -bins (a cluster each, with a MariaDB server of its own so
// that its CPU and statement counters are the cluster's alone), -rounds
// times, interleaved: the machine's load hits every build alike. It prints
// every round and the medians per build.
func (b bench) throughput() error {
	var sides []*side
	defer func() {
		for _, s := range sides {
			s.stop()
		}
	}()
	for _, bin := range b.bins {
		s, err := b.startSide(bin)
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		sides = append(sides, s)
	}
	fmt.Printf("== cluster: 1 master, 2 workers (slots %d each; 0 is 2 x CPUs), MariaDB of its own; %d rounds\n", b.slots, b.rounds)
	for r := range b.rounds {
		for i, s := range sides {
			prof, qlog := "", ""
			if b.profile != "" && r == b.rounds-1 {
				prof = filepath.Join(b.profile, fmt.Sprintf("bin%d", i))
			}
			if b.queries != "" && r == b.rounds-1 {
				qlog = fmt.Sprintf("%s.bin%d", b.queries, i)
			}
			f, err := s.round(prof, qlog)
			if err != nil {
				return fmt.Errorf("%s: %w", s.bin, err)
			}
			s.figs = append(s.figs, f)
			fmt.Printf("round %d %s:\n  %s\n  %s\n", r+1, s.bin, f.chainLine, f.fanLine())
		}
	}
	if b.rounds > 1 || len(sides) > 1 {
		for _, s := range sides {
			fmt.Printf("%s: median of %d: %s\n", s.bin, len(s.figs), medianLine(s.figs))
		}
	}
	return nil
}

// side is one build's cluster in the throughput figures.
type side struct {
	bin   string
	c     *clustertest.Cluster
	t     *benchkit.Target
	db    *sql.DB // the cluster's own server, for its status counters
	pprof map[string]string
	stop  func()
	figs  []figures
}

type figures struct {
	chainLine            string
	hopP50, hopP99       time.Duration
	wall                 time.Duration
	master, workers, dbd time.Duration // CPU over the fan-out
	tasks                time.Duration // the workers' reaped children
	status               map[string]int64
}

const fanoutTasks = 1001

func (f figures) tasksPerSec() float64 { return fanoutTasks / f.wall.Seconds() }

func perTask(d time.Duration) float64 { return float64(d.Microseconds()) / fanoutTasks }

func (f figures) fanLine() string {
	return fmt.Sprintf("%s; CPU per task: master %.0f µs, workers %.0f µs, mariadbd %.0f µs, tasks %.0f µs (the workers' reaped children); "+
		"per task: %.1f statements, %.2f commits, %.2f prepares, %.2f selects, %.2f updates, %.2f inserts, %.2f deletes",
		benchkit.FanoutLine("fanout-1000", f.wall, fanoutTasks), perTask(f.master), perTask(f.workers), perTask(f.dbd), perTask(f.tasks),
		f.per("Questions"), f.per("Com_commit"), f.per("Com_stmt_prepare"), f.per("Com_select"),
		f.per("Com_update"), f.per("Com_insert"), f.per("Com_delete"))
}

func (f figures) per(name string) float64 { return float64(f.status[name]) / fanoutTasks }

// medianLine renders the median of each figure over the rounds.
func medianLine(fs []figures) string {
	med := func(get func(figures) float64) float64 {
		vs := make([]float64, len(fs))
		for i, f := range fs {
			vs[i] = get(f)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	return fmt.Sprintf("chain-100 hop p50 %.2f ms p99 %.2f ms; fanout-1000 %.0f tasks/s; CPU per task master %.0f µs, workers %.0f µs, mariadbd %.0f µs; %.1f statements/task",
		med(func(f figures) float64 { return float64(f.hopP50.Microseconds()) / 1000 }),
		med(func(f figures) float64 { return float64(f.hopP99.Microseconds()) / 1000 }),
		med(figures.tasksPerSec),
		med(func(f figures) float64 { return perTask(f.master) }),
		med(func(f figures) float64 { return perTask(f.workers) }),
		med(func(f figures) float64 { return perTask(f.dbd) }),
		med(func(f figures) float64 { return f.per("Questions") }))
}

func (b bench) startSide(bin string) (*side, error) {
	o := clustertest.Options{Masters: 1, Workers: 2, WorkerSlots: b.slots, LogLevel: "warn", PrivateDB: true}
	pp := map[string]string{}
	if b.profile != "" {
		if err := os.MkdirAll(b.profile, 0o755); err != nil {
			return nil, err
		}
		o.Env = map[string][]string{}
		for _, name := range []string{"master-1", "worker-1", "worker-2"} {
			port, err := benchkit.FreePort()
			if err != nil {
				return nil, err
			}
			pp[name] = fmt.Sprintf("127.0.0.1:%d", port)
			o.Env[name] = []string{"BELUGA_PPROF=" + pp[name]}
		}
	}
	c, t, stop, err := b.launch(bin, o)
	if err != nil {
		return nil, err
	}
	t.PollEvery = 50 * time.Millisecond
	s := &side{bin: bin, c: c, t: t, pprof: pp, stop: stop}
	if s.db, err = sql.Open("mysql", "root@tcp("+c.MariaDB.Addr()+")/"); err != nil {
		stop()
		return nil, err
	}
	s.stop = func() { s.db.Close(); stop() }
	for _, spec := range []string{benchkit.ChainSpec("chain100", 100), benchkit.FanoutSpec("fanout1000", 1000), benchkit.OneTaskSpec("one")} {
		if err := t.Apply(spec); err != nil {
			s.stop()
			return nil, err
		}
	}
	if _, err := t.RunAndWait("one"); err != nil { // warm-up
		s.stop()
		return nil, err
	}
	return s, nil
}

// round runs chain-100 then fanout-1000; with prof set it saves a CPU
// profile of the master and of each worker over the fan-out as
// prof-NAME.pprof.
func (s *side) round(prof, qlog string) (figures, error) {
	var f figures
	wall, hops, err := s.t.Chain("chain100")
	if err != nil {
		return f, err
	}
	f.chainLine = benchkit.ChainLine("chain-100", wall, hops)
	f.hopP50, f.hopP99 = benchkit.Pct(hops, 50), benchkit.Pct(hops, 99)
	cpu := func() (m, w, d, k time.Duration) {
		for _, p := range s.c.Workers {
			w += benchkit.CPUTime(p.Pid())
			k += benchkit.ChildCPUTime(p.Pid())
		}
		return benchkit.CPUTime(s.c.Masters[0].Pid()), w, benchkit.CPUTime(s.c.MariaDB.Pid()), k
	}
	var wg sync.WaitGroup
	if prof != "" {
		for name, addr := range s.pprof {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := http.Get("http://" + addr + "/debug/pprof/profile?seconds=5")
				if err != nil {
					fmt.Fprintf(os.Stderr, "profile of %s: %v\n", name, err)
					return
				}
				defer res.Body.Close()
				raw, _ := io.ReadAll(res.Body)
				_ = os.WriteFile(prof+"-"+name+".pprof", raw, 0o644)
			}()
		}
		time.Sleep(100 * time.Millisecond) // the profiles start before the run
	}
	if qlog != "" {
		if _, err := s.db.Exec("TRUNCATE mysql.general_log"); err != nil {
			return f, err
		}
		if _, err := s.db.Exec("SET GLOBAL log_output = 'TABLE', general_log = 1"); err != nil {
			return f, err
		}
	}
	st0, err := status(s.db)
	if err != nil {
		return f, err
	}
	m0, w0, d0, k0 := cpu()
	inst, err := s.t.RunAndWait("fanout1000")
	if err != nil {
		return f, err
	}
	m1, w1, d1, k1 := cpu()
	st1, err := status(s.db)
	if err != nil {
		return f, err
	}
	wg.Wait()
	if qlog != "" {
		if err := s.writeQueries(qlog); err != nil {
			return f, err
		}
	}
	f.wall, f.master, f.workers, f.dbd, f.tasks = benchkit.Wall(inst), m1-m0, w1-w0, d1-d0, k1-k0
	f.status = map[string]int64{}
	for k, v := range st1 {
		f.status[k] = v - st0[k]
	}
	return f, nil
}

// writeQueries turns the general log off and writes its statements to
// file, counted by shape (literals replaced by ?), most frequent first.
func (s *side) writeQueries(file string) error {
	if _, err := s.db.Exec("SET GLOBAL general_log = 0"); err != nil {
		return err
	}
	rows, err := s.db.Query("SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log ORDER BY event_time")
	if err != nil {
		return err
	}
	defer rows.Close()
	counts := map[string]int{}
	var raw strings.Builder // thread, command, shape: for following transactions
	for rows.Next() {
		var thread int64
		var cmd, arg string
		if err := rows.Scan(&thread, &cmd, &arg); err != nil {
			return err
		}
		counts[cmd+" "+shape(arg)]++
		fmt.Fprintf(&raw, "%d\t%s\t%s\n", thread, cmd, shape(arg))
	}
	if err := os.WriteFile(file+".log", []byte(raw.String()), 0o644); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
	var out strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&out, "%7d %s\n", counts[k], k)
	}
	return os.WriteFile(file, []byte(out.String()), 0o644)
}

var literal = regexp.MustCompile(`'(?:[^'\\]|\\.)*'|\b\d+(?:\.\d+)?\b`)
var lists = regexp.MustCompile(`\?(?:\s*,\s*\?)+`)

// shape replaces a statement's literals by ? and lists of them by ?,...
func shape(q string) string {
	q = literal.ReplaceAllString(q, "?")
	q = lists.ReplaceAllString(q, "?,...")
	if len(q) > 300 {
		q = q[:300] + "..."
	}
	return strings.Join(strings.Fields(q), " ")
}

// status reads the server's global statement counters.
func status(db *sql.DB) (map[string]int64, error) {
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions','Com_commit','Com_stmt_prepare','Com_select','Com_update','Com_insert','Com_delete','Com_savepoint','Com_begin')")
	if err != nil {
		return nil, fmt.Errorf("server status: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
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
