package worker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

func TestRunID(t *testing.T) {
	for _, c := range []struct {
		name string
		id   int64
		ok   bool
	}{
		{"12", 12, true}, {"1", 1, true}, {"0", 0, false}, {"-4", 0, false}, {"007", 0, false}, {"+7", 0, false},
		{"notes", 0, false}, {"12.log", 0, false}, {"99999999999999999999", 0, false}, {"", 0, false},
	} {
		if id, ok := runID(c.name); id != c.id || ok != c.ok {
			t.Errorf("runID(%q) = %d, %v; want %d, %v", c.name, id, ok, c.id, c.ok)
		}
	}
}

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

// TestLogSweepRemovesOnlyGoneRuns: one sweep deletes the log directories of
// the runs the master says are gone, and nothing else: not a run it holds a
// task of (even when the master says gone), not a run the master did not
// name, not entries that are not run directories (a link named like a run
// is not followed), and never an id it did not ask about.
func TestLogSweepRemovesOnlyGoneRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{LogSweep: -1}) // swept by hand here
	b.w.SetMaster(b.master.addr())
	logs := filepath.Join(b.dir, "logs")
	outside := filepath.Join(t.TempDir(), "keep.log")
	writeFile(t, outside, 10)
	writeFile(t, filepath.Join(logs, "5", "1.log"), 100)
	writeFile(t, filepath.Join(logs, "5", "1.stderr"), 16)
	writeFile(t, filepath.Join(logs, "6", "2.log"), 100)
	work := filepath.Join(b.dir, "work")
	writeFile(t, filepath.Join(work, "5", "1", "out.csv"), 10)
	writeFile(t, filepath.Join(work, "6", "2", "out.csv"), 10)
	writeFile(t, filepath.Join(logs, "notes", "x.log"), 1)
	writeFile(t, filepath.Join(logs, "007", "x.log"), 1)
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(logs, "8")); err != nil {
		t.Fatal(err)
	}
	// A task of run 3 the worker holds (running).
	b.mustDispatch(t, b.dispatchMsg(1, "sleep 30"))
	waitReport[message.Running](t, b.master, 1)
	b.master.mu.Lock()
	b.master.gone = []int64{3, 5, 8, 7, 1000}
	b.master.mu.Unlock()

	n, err := b.w.sweepLogsOnce(ctxT(t))
	if err != nil || n != 1 {
		t.Fatalf("sweep: removed %d, %v; want 1", n, err)
	}
	b.master.mu.Lock()
	asked := b.master.asked
	b.master.mu.Unlock()
	if len(asked) != 1 || !slices.Equal(asked[0], []int64{5, 6}) {
		t.Fatalf("asked %v, want [[5 6]] (not the held run 3, not the link 8)", asked)
	}
	if exists(filepath.Join(logs, "5")) || exists(filepath.Join(work, "5")) {
		t.Fatal("run 5's logs or work dirs stay")
	}
	if !exists(filepath.Join(work, "6", "2", "out.csv")) || !exists(filepath.Join(work, "3", "1")) {
		t.Fatal("a kept or held run's work dir went")
	}
	for _, keep := range []string{"6/2.log", "notes/x.log", "007/x.log", "8", "3/1.log"} {
		if !exists(filepath.Join(logs, keep)) {
			t.Errorf("%s went", keep)
		}
	}
	if !exists(outside) {
		t.Fatal("the sweep followed a link out of the log dir")
	}
}

// TestLogSize: a LogSize answer sums the runs' files here; a malformed one
// is refused as bad_request.
func TestLogSize(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{LogSweep: -1})
	logs := filepath.Join(b.dir, "logs")
	writeFile(t, filepath.Join(logs, "5", "1.log"), 100)
	writeFile(t, filepath.Join(logs, "5", "1.stderr"), 16)
	writeFile(t, filepath.Join(logs, "6", "2.log"), 1000)
	writeFile(t, filepath.Join(logs, "7", "3.log"), 7)
	r, ok := b.request(t, message.LogSize{InstanceIDs: []int64{5, 6, 9}}).(message.LogSizeReply)
	if !ok || r.Files != 3 || r.Bytes != 1116 {
		t.Fatalf("LogSize: %+v, want 3 files of 1116 bytes", r)
	}
	many := make([]int64, message.MaxLogRuns+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	for _, bad := range [][]int64{{5, -1}, {0}, many} {
		_, err := b.rpc.Request(ctxT(t), b.w.Addr(), message.LogSize{InstanceIDs: bad})
		var re *remote.RemoteError
		if !errors.As(err, &re) || re.Code != codeBadRequest {
			t.Errorf("LogSize of %d ids (first %d): %v, want a bad_request error", len(bad), bad[0], err)
		}
	}
}

// TestLogSweepInBatches: a log dir of 2,500 runs is asked about in
// questions of at most logSweepAsk runs, every run once, and the runs
// the master says are gone go, the others stay.
func TestLogSweepInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{LogSweep: -1})
	b.w.SetMaster(b.master.addr())
	logs := filepath.Join(b.dir, "logs")
	const runs = 2500
	var gone []int64
	for id := int64(100); id < 100+runs; id++ {
		if err := os.MkdirAll(filepath.Join(logs, strconv.FormatInt(id, 10)), 0o755); err != nil {
			t.Fatal(err)
		}
		if id%2 == 0 {
			gone = append(gone, id)
		}
	}
	b.master.mu.Lock()
	b.master.gone = gone
	b.master.mu.Unlock()
	n, err := b.w.sweepLogsOnce(ctxT(t))
	if err != nil || n != len(gone) {
		t.Fatalf("sweep: removed %d, %v; want %d", n, err, len(gone))
	}
	b.master.mu.Lock()
	asked := b.master.asked
	b.master.mu.Unlock()
	seen := map[int64]int{}
	for _, q := range asked {
		if len(q) > logSweepAsk {
			t.Fatalf("a question of %d runs, at most %d", len(q), logSweepAsk)
		}
		for _, id := range q {
			seen[id]++
		}
	}
	if len(asked) < 3 || len(seen) != runs {
		t.Fatalf("%d questions about %d runs, want at least 3 about %d", len(asked), len(seen), runs)
	}
	for id := int64(100); id < 100+runs; id++ {
		if seen[id] != 1 {
			t.Fatalf("run %d asked about %d times", id, seen[id])
		}
		if exists(filepath.Join(logs, strconv.FormatInt(id, 10))) != (id%2 == 1) {
			t.Fatalf("run %d: gone %v, its dir exists %v", id, id%2 == 0, !(id%2 == 0))
		}
	}
}
