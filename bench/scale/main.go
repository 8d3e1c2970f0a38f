// Command scale measures definitions at scale on a real `beluga
// standalone` (SQLite) and prints figures: the cost of one operation over
// the REST API (apply a workflow; create, change, pause and delete a
// schedule; one page of the workflow and schedule lists) with 100, 10,000
// and 100,000 workflow definitions (a tenth of them on a schedule), and
// the start-up of a standalone on those definitions (process start to
// leading and serving) with its RSS per schedule. Run by `make bench`; it
// prints, it does not judge.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/bench/benchkit"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
)

func main() {
	builtin.Register() // seed parses the specs it writes
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	sizes := flag.String("defs", "100,10000,100000", "numbers of workflow definitions to measure at, ascending")
	ops := flag.Int("ops", 40, "operations of each kind per size")
	every := flag.Int("schedule-every", 10, "one defined workflow in this many is on a schedule")
	flag.Parse()
	if err := run(*bin, splitInts(*sizes), *ops, *every); err != nil {
		fmt.Fprintln(os.Stderr, "bench scale:", err)
		os.Exit(1)
	}
}

const project = "scale"

func run(bin string, sizes []int, ops, every int) error {
	dir, err := os.MkdirTemp("", "beluga-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbURL := "sqlite://" + filepath.Join(dir, "beluga.db")
	ctx := context.Background()
	empty, rss0, err := startup(bin, dir, dbURL)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, dbURL, zap.NewNop())
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.ProjectCreate(ctx, project, "definitions at scale"); err != nil {
		return err
	}
	fmt.Printf("== definitions at scale (SQLite; %d ops of each kind per size, one workflow in %d scheduled)\n", ops, every)
	fmt.Printf("start-up, no definitions: process start -> leading and serving %v, RSS %.1f MB\n", empty.Round(time.Millisecond), rss0)
	seeded, schedules := 0, 0
	for _, n := range sizes {
		t0 := time.Now()
		added, err := benchkit.SeedDefinitions(ctx, st, project, seeded, n, every)
		if err != nil {
			return err
		}
		schedules += added
		if n > seeded {
			fmt.Printf("seeded %d definitions (%d scheduled) in the store directly: %v\n", n-seeded, added, time.Since(t0).Round(time.Millisecond))
		}
		seeded = max(seeded, n)
		if err := measure(bin, dir, dbURL, st, n, schedules, ops); err != nil {
			return err
		}
	}
	took, rss, err := startup(bin, dir, dbURL)
	if err != nil {
		return err
	}
	fmt.Printf("start-up with %d definitions, %d schedules: process start -> leading and serving %v (%+v over none), RSS %.1f MB (%.0f bytes per schedule over none)\n",
		seeded, schedules, took.Round(time.Millisecond), (took - empty).Round(time.Millisecond), rss,
		(rss-rss0)*1024*1024/float64(max(schedules, 1)))
	return nil
}

// startup starts a standalone on the database, measures process start to
// healthy (the master leads before the API answers) and its RSS, and stops it.
func startup(bin, dir, dbURL string) (time.Duration, float64, error) {
	t0 := time.Now()
	p, err := benchkit.StartStandalone(bin, dir, dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer p.Stop()
	t := benchkit.NewTarget(p.Base, nil, project)
	if err := t.WaitHealthy(2 * time.Minute); err != nil {
		return 0, 0, err
	}
	took := time.Since(t0)
	time.Sleep(time.Second) // let start-up garbage settle before reading RSS
	return took, benchkit.RSSMB(p.Cmd.Process.Pid), nil
}

// measure starts a standalone on the n definitions and prints the cost of
// each operation: client wall time (median, 90th percentile) and the
// server's CPU per operation.
func measure(bin, dir, dbURL string, st *store.Store, n, schedules, ops int) error {
	p, err := benchkit.StartStandalone(bin, dir, dbURL)
	if err != nil {
		return err
	}
	defer p.Stop()
	t := benchkit.NewTarget(p.Base, st, project)
	if err := t.WaitHealthy(2 * time.Minute); err != nil {
		return err
	}
	ctx := context.Background()
	pid := p.Cmd.Process.Pid
	name := func(i int) string { return fmt.Sprintf("op%d-%d", n, i) }
	on, off := true, false
	put := func(i int, cron string, enabled *bool) error {
		_, _, err := t.API.PutSchedule(ctx, project, name(i), api.ScheduleRequest{Cron: cron, Timezone: "UTC", Enabled: enabled})
		return err
	}
	kinds := []struct {
		what string
		op   func(i int) error
	}{
		{"apply a new workflow", func(i int) error {
			_, err := t.API.ApplyWorkflow(ctx, project, []byte(benchkit.OneTaskSpec(name(i))))
			return err
		}},
		{"create a schedule", func(i int) error { return put(i, "0 3 * * *", &on) }},
		{"change a schedule", func(i int) error { return put(i, "0 4 * * *", &on) }},
		{"pause a schedule", func(i int) error { return put(i, "0 4 * * *", &off) }},
		{"delete a schedule", func(i int) error { return t.API.DeleteSchedule(ctx, project, name(i)) }},
		{"page of 50 workflows", func(i int) error {
			_, err := t.API.WorkflowsPage(ctx, project, client.Page{Limit: 50, Prefix: fmt.Sprintf("d%d", i%10)})
			return err
		}},
		{"page of 50 schedules", func(i int) error {
			_, err := t.API.SchedulesPage(ctx, project, client.Page{Limit: 50, Prefix: fmt.Sprintf("d%d", i%10)})
			return err
		}},
	}
	fmt.Printf("-- %d definitions, %d schedules: wall per operation (median, 90 %%) and the server's CPU per operation\n", n, schedules)
	for _, k := range kinds {
		walls := make([]time.Duration, 0, ops)
		cpu0 := benchkit.CPUTime(pid)
		for i := range ops {
			t0 := time.Now()
			if err := k.op(i); err != nil {
				return fmt.Errorf("%s at %d definitions: %w", k.what, n, err)
			}
			walls = append(walls, time.Since(t0))
		}
		cpu := (benchkit.CPUTime(pid) - cpu0) / time.Duration(ops)
		slices.Sort(walls)
		fmt.Printf("%-22s %8v %8v   CPU %v\n", k.what, benchkit.Pct(walls, 50).Round(10*time.Microsecond),
			benchkit.Pct(walls, 90).Round(10*time.Microsecond), cpu.Round(10*time.Microsecond))
	}
	return nil
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
