package standalone_test

import (
	"bufio"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLogReadsAreBounded (docs/security.md, item 8): 40 reads at once of
// 8 MiB pages of a 100 MB log all return, and the server's peak memory
// grows by a bounded amount (the pages in flight are budgeted: before,
// 40 such reads took the server from 178 to 832 MB and did not return).
// The per-user quota is raised for the test: the budget is what is shown.
func TestLogReadsAreBounded(t *testing.T) {
	e := start(t, "")
	e.do("PUT", "/api/v1/settings/quota.log_reads_per_user", `{"value":100}`, http.StatusOK, nil)
	const size = 100_000_000
	e.apply(fmt.Sprintf("name: big\ntasks:\n  - name: a\n    command: head -c %d /dev/zero | tr '\\\\0' x\n", size))
	iv := e.wait(e.run("big", nil), 3*time.Minute)
	if iv.State != "succeeded" {
		t.Fatalf("big: %+v", iv)
	}
	id := iv.task("a").ID
	hc := e.client()

	const reads, page = 40, 8 << 20
	base := rssKiB(t, "VmRSS")
	resetPeakRSS(t)
	var wg sync.WaitGroup
	var refused atomic.Int32
	errs := make(chan error, reads)
	for i := 0; i < reads; i++ {
		wg.Add(1)
		go func(off int) {
			defer wg.Done()
			url := fmt.Sprintf("%s/api/v1/task-instances/%d/log?offset=%d&limit=%d", e.base, id, off, page)
			res, err := hc.Get(url)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			if res.StatusCode == http.StatusTooManyRequests {
				// A read that waited its turn past the wait (a slow
				// machine) is refused naming the budget: an answer too.
				body, _ := io.ReadAll(res.Body)
				if res.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "MiB budget for pages") {
					errs <- fmt.Errorf("read at %d: 429 without Retry-After or the budget named: %s", off, body)
				}
				refused.Add(1)
				return
			}
			n, err := io.Copy(io.Discard, res.Body)
			if err != nil || res.StatusCode != http.StatusOK || n != int64(min(page, size-off)) {
				errs <- fmt.Errorf("read at %d: %d, %d bytes, %v", off, res.StatusCode, n, err)
			}
		}(i * (size / reads))
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	wait.Signal(t, 3*time.Minute, "40 log reads to return", done)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := refused.Load(); n > reads-4 {
		t.Errorf("%d of %d reads refused: fewer than the budget's 4 at a time were served", n, reads)
	}
	grew := (rssKiB(t, "VmHWM") - base) >> 10
	t.Logf("40 reads of 8 MiB pages of a 100 MB log (%d refused after the wait): peak RSS %d MiB above the %d MiB before",
		refused.Load(), grew, base>>10)
	// 40 pages is 320 MiB before any copy, and each read holds its page a
	// few times over (file, frame, reply), so unbounded the reads took 862
	// MiB; the budget holds 4 pages at a time: with their copies and the
	// garbage collector's headroom (GOGC) up to ~300 MiB.
	if grew > 400 {
		t.Fatalf("peak RSS grew by %d MiB during the reads", grew)
	}
}

// rssKiB is field (VmRSS, VmHWM) of this process's status, in KiB.
func rssKiB(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc: ", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeakRSS makes VmHWM start again from the current RSS.
func resetPeakRSS(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skip("cannot reset the peak RSS: ", err)
	}
}
