package standalone_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// runLogBytes is what the files of run id's log directory take.
func runLogBytes(t *testing.T, logs string, id int64) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(filepath.Join(logs, strconv.FormatInt(id, 10)), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("logs of run %d: %v", id, err)
	}
	return n
}

// TestRetentionPurgeRemovesLogFiles: on a real standalone whose worker
// sweeps its logs every 300ms, a plan counts the log bytes of the runs it
// lists (asked of the worker: the files' real sizes); after the purge the
// worker deletes the log (and work) directories of the purged runs, and keeps those of
// the kept run, of a running run, and of a run of another workflow.
func TestRetentionPurgeRemovesLogFiles(t *testing.T) {
	e := startWith(t, func(c *config.Config) { c.Worker.LogSweep = 300 * time.Millisecond })
	logs := filepath.Join(e.dir, "worker", "logs")
	e.apply(`name: etl
tasks:
  - {name: extract, command: "seq 1 2000 | tee out.txt"}
  - {name: load, command: "seq 1 500 >&2", depends_on: [extract]}
`)
	e.apply(`name: slow
params: {secs: "0"}
tasks:
  - {name: nap, command: "echo napping; sleep ${secs}"}
`)
	var etl []int64
	for range 3 {
		id := e.run("etl", nil)
		if iv := e.wait(id, 60*time.Second); iv.State != "succeeded" {
			t.Fatalf("etl run %d: %+v", id, iv)
		}
		etl = append(etl, id)
	}
	running := e.run("slow", map[string]string{"secs": "120"})
	e.waitTask(running, "nap", "running")
	var want int64
	for _, id := range etl[:2] {
		want += runLogBytes(t, logs, id)
	}
	if want < 2*(9000+1000) {
		t.Fatalf("the purged runs' logs take %d bytes: the tasks wrote more", want)
	}

	for _, id := range etl[:2] { // extract left its output in its work dir
		if _, err := os.Stat(filepath.Join(e.dir, "worker", "work", strconv.FormatInt(id, 10))); err != nil {
			t.Fatalf("run %d's work dir: %v", id, err)
		}
	}
	e.do("PUT", "/api/v1/projects/demo/retention", `{"keep_runs":1}`, http.StatusOK, nil)
	type planView struct {
		Roots     []int64 `json:"roots"`
		Instances []int64 `json:"instances"`
		LogFiles  int64   `json:"log_files"`
		LogBytes  int64   `json:"log_bytes"`
		Unreached int     `json:"log_workers_unreached"`
		Bytes     int64   `json:"bytes"`
		Skipped   []int64 `json:"skipped"`
	}
	var plan planView
	wait.UntilErr(t, 90*time.Second, "a plan listing the two older etl runs", func() error {
		e.do("POST", "/api/v1/projects/demo/retention/plan", "", http.StatusOK, &plan)
		if !slices.Equal(plan.Roots, etl[:2]) {
			return fmt.Errorf("plan roots %v", plan.Roots)
		}
		return nil
	})
	if plan.LogFiles != 4 || plan.LogBytes != want || plan.Unreached != 0 || plan.Bytes <= plan.LogBytes {
		t.Fatalf("plan %+v: want 4 log files of %d bytes, every worker answering, bytes beyond them", plan, want)
	}

	var purged planView
	e.do("POST", "/api/v1/projects/demo/retention/purge", "", http.StatusOK, &purged)
	if !slices.Equal(purged.Instances, etl[:2]) {
		t.Fatalf("purge %+v, want runs %v", purged, etl[:2])
	}
	dir := func(id int64) string { return filepath.Join(logs, strconv.FormatInt(id, 10)) }
	wait.UntilErr(t, 60*time.Second, "the worker removes the purged runs' logs", func() error {
		for _, id := range etl[:2] {
			if _, err := os.Stat(dir(id)); err == nil {
				return fmt.Errorf("run %d's logs are still there", id)
			}
			if _, err := os.Stat(filepath.Join(e.dir, "worker", "work", strconv.FormatInt(id, 10))); err == nil {
				return fmt.Errorf("run %d's work dirs are still there", id)
			}
		}
		return nil
	})
	// That sweep asked about every run directory at once: the kept ones
	// were answered "still there" in it.
	for _, id := range []int64{etl[2], running} {
		if _, err := os.Stat(dir(id)); err != nil {
			t.Fatalf("the logs of run %d, kept, went: %v", id, err)
		}
	}
	// The kept run's log is still served.
	var kept instanceView
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", etl[2]), "", http.StatusOK, &kept)
	var log string
	e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", kept.task("extract").ID), "", http.StatusOK, &log)
	if !strings.Contains(log, "\n2000\n") {
		t.Fatalf("kept run's extract log: %.200q", log)
	}
}
