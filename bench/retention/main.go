// Command retention measures a retention purge on a `beluga standalone`
// (SQLite): it seeds 1,000,000 task rows of finished runs by SQL, then
// times the dry run and the purge (POST .../retention/plan and /purge,
// the server's default batches) and the wall and hops of a chain run
// before, during and after the purge. Run by `make bench`; it prints,
// it does not judge.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/bench/benchkit"
)

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	runs := flag.Int("runs", 10000, "finished runs to seed")
	tasks := flag.Int("tasks", 100, "task rows per seeded run")
	chain := flag.Int("chain", 20, "length of the measured chain")
	base := flag.Int("baseline", 30, "chain runs without a purge, before it and after it")
	flag.Parse()
	if err := bench(*bin, *runs, *tasks, *chain, *base); err != nil {
		fmt.Fprintln(os.Stderr, "bench retention:", err)
		os.Exit(1)
	}
}

func bench(bin string, runs, tasks, chainLen, baseline int) error {
	sa, err := benchkit.LaunchStandalone(bin, "beluga-bench-retention-")
	if err != nil {
		return err
	}
	defer sa.Close()
	t := sa.Target
	ctx := context.Background()
	if err := t.Apply(benchkit.ChainSpec("chain", chainLen)); err != nil {
		return err
	}
	if _, err := t.RunAndWait("chain"); err != nil { // warm-up
		return err
	}
	start := time.Now()
	if err := seed(ctx, sa, runs, tasks); err != nil {
		return err
	}
	fmt.Printf("retention: seeded %d finished runs with %d task rows by SQL in %v\n",
		runs, runs*tasks, time.Since(start).Round(time.Millisecond))
	if _, err := t.API.SetProjectRetention(ctx, t.Project, api.ProjectRetentionRequest{KeepDays: ptr(7)}); err != nil {
		return err
	}

	var walls []time.Duration
	var hops []time.Duration
	for range baseline {
		w, h, err := t.Chain("chain")
		if err != nil {
			return err
		}
		walls, hops = append(walls, w), append(hops, h...)
	}
	fmt.Println(line(fmt.Sprintf("chain-%d without a purge", chainLen), walls, hops))

	start = time.Now()
	var plan api.RetentionPlan
	if err := post(sa.Proc.Base, t.API.Token(), "/api/v1/projects/"+t.Project+"/retention/plan", &plan); err != nil {
		return err
	}
	fmt.Printf("retention: dry run in %v: %d runs, %d task rows, %d history rows, ~%d MB\n",
		time.Since(start).Round(time.Millisecond), len(plan.Instances), plan.TaskRows, plan.HistoryRows, plan.Bytes>>20)

	done := make(chan error, 1)
	var purged api.RetentionPlan
	start = time.Now()
	go func() {
		done <- post(sa.Proc.Base, t.API.Token(), "/api/v1/projects/"+t.Project+"/retention/purge", &purged)
	}()
	walls, hops = nil, nil
	var took time.Duration
	for took == 0 {
		w, h, err := t.Chain("chain")
		if err != nil {
			return err
		}
		walls, hops = append(walls, w), append(hops, h...)
		select {
		case err := <-done:
			if err != nil {
				return err
			}
			took = time.Since(start)
		default:
		}
	}
	fmt.Println(line(fmt.Sprintf("chain-%d during the purge", chainLen), walls, hops))
	fmt.Printf("retention: purge in %v: %d runs, %d task rows, %d history rows (%.0f task rows/s); equal to the dry run: %v\n",
		took.Round(time.Millisecond), len(purged.Instances), purged.TaskRows, purged.HistoryRows,
		float64(purged.TaskRows)/took.Seconds(), slices.Equal(purged.Instances, plan.Instances) && purged.TaskRows == plan.TaskRows)
	// Again without a purge: the machine's load drifts, so the figure
	// during the purge is read between the two.
	walls, hops = nil, nil
	for range baseline {
		w, h, err := t.Chain("chain")
		if err != nil {
			return err
		}
		walls, hops = append(walls, w), append(hops, h...)
	}
	fmt.Println(line(fmt.Sprintf("chain-%d after the purge", chainLen), walls, hops))
	return nil
}

func line(label string, walls, hops []time.Duration) string {
	slices.Sort(walls)
	return fmt.Sprintf("retention: %s: wall p50 %v max %v (%d runs); hop p50 %v p99 %v max %v",
		label, benchkit.Pct(walls, 50), walls[len(walls)-1].Round(time.Millisecond), len(walls),
		benchkit.Pct(hops, 50), benchkit.Pct(hops, 99), benchkit.Pct(hops, 100))
}

func ptr(n int) *int { return &n }

// post calls a retention route with no client timeout (a purge of a
// million rows takes longer than the client's default).
func post(base, token, path string, out any) error {
	req, err := http.NewRequest("POST", base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// seed writes runs finished 30 days ago in 100 workflows of the target's
// project, each with tasks task rows and one history row, by SQL on the
// standalone's file beside the running server (1,000 runs a transaction).
func seed(ctx context.Context, sa *benchkit.Standalone, runs, tasks int) error {
	p, err := sa.Store.ProjectGet(ctx, sa.Project)
	if err != nil {
		return err
	}
	// Times as the store writes them (common/store/sqlite.go), so that it
	// reads them back as times.
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_timefmt", "2006-01-02 15:04:05.999999999-07:00")
	q.Set("_pragma", "busy_timeout(60000)")
	dsn := (&url.URL{Scheme: "file", Path: filepath.Join(sa.Dir, "beluga.db"), RawQuery: q.Encode()}).String()
	db, err := gorm.Open(gormlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	end := time.Now().UTC().AddDate(0, 0, -30).Truncate(time.Microsecond)
	for from := 0; from < runs; from += 1000 {
		n := min(1000, runs-from)
		err := db.Transaction(func(tx *gorm.DB) error {
			var first int64
			if err := tx.Raw(`SELECT COALESCE(MAX(id), 0) + 1 FROM workflow_instance`).Scan(&first).Error; err != nil {
				return err
			}
			if err := tx.Exec(`WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
				INSERT INTO workflow_instance (project_id, project_name, workflow_name, workflow_definition_id, version, state,
					command_type, priority, params_json, created_at, start_time, end_time)
				SELECT ?, ?, 'old' || ((? + x) % 100), 1, 1, 'succeeded', 'start', 2, '{}', ?, ?, ? FROM c`,
				n-1, p.ID, p.Name, from, end, end, end).Error; err != nil {
				return err
			}
			if err := tx.Exec(`WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
				INSERT INTO task_instance (workflow_instance_id, name, type, state, priority, log_path, start_time, end_time)
				SELECT w.id, 't' || c.x, 'shell', 'succeeded', 2, '/logs/' || w.id || '/' || c.x || '.log', ?, ?
				FROM workflow_instance w, c WHERE w.id >= ?`, tasks-1, end, end, first).Error; err != nil {
				return err
			}
			return tx.Exec(`INSERT INTO instance_history (workflow_instance_id, action, requested_by, at, detail)
				SELECT id, 'start', 'bench', ?, '' FROM workflow_instance WHERE id >= ?`, end, first).Error
		})
		if err != nil {
			return fmt.Errorf("seed runs %d..%d: %w", from, from+n, err)
		}
	}
	return nil
}
