package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/zktest"
)

// ledgerLine is one line a ledger task wrote: what (start, tick, end),
// when, the shell's pid and the attempt.
type ledgerLine struct {
	What    string
	At      time.Time
	PID     int
	Attempt int
}

// ledgerLineCmd appends one ledger line: what, the time in nanoseconds,
// the shell's pid and the attempt.
func ledgerLineCmd(ledger, what string) string {
	return fmt.Sprintf(`echo "%s $(date +%%s%%N) $$ $BELUGA_ATTEMPT" >> %s`, what, ledger)
}

// ledgerTask runs for about ticks x 0.2 s and writes to a ledger file
// outside Beluga: "start", a "tick" every 0.2 s, "end". A killed run has
// no end, and its last tick says when it was last alive.
func ledgerTask(ledger, name string, ticks int) spec.Task {
	cmd := fmt.Sprintf(`%s; i=0; while [ $i -lt %d ]; do sleep 0.2; %s; i=$((i+1)); done; %s`,
		ledgerLineCmd(ledger, "start"), ticks, ledgerLineCmd(ledger, "tick"), ledgerLineCmd(ledger, "end"))
	return spec.Task{Name: name, Command: cmd}
}

// sleepLedgerTask writes "start", sleeps for d, writes "end".
func sleepLedgerTask(ledger, name string, d time.Duration) spec.Task {
	return spec.Task{Name: name, Command: ledgerLineCmd(ledger, "start") + "; " + sleep(d) + "; " + ledgerLineCmd(ledger, "end")}
}

func readLedger(t *testing.T, path string) []ledgerLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ledgerLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			t.Fatalf("ledger line %q: want 4 fields", sc.Text())
		}
		ns, err1 := strconv.ParseInt(fs[1], 10, 64)
		pid, err2 := strconv.Atoi(fs[2])
		at, err3 := strconv.Atoi(fs[3])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("ledger line %q: bad number", sc.Text())
		}
		out = append(out, ledgerLine{What: fs[0], At: time.Unix(0, ns), PID: pid, Attempt: at})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func waitLedger(t *testing.T, c *clustertest.Cluster, path, what string, attempt int) ledgerLine {
	t.Helper()
	var got ledgerLine
	c.Eventually(t, finishWithin, fmt.Sprintf("ledger %s of attempt %d", what, attempt), func() bool {
		if _, err := os.Stat(path); err != nil {
			return false
		}
		for _, l := range readLedger(t, path) {
			if l.What == what && l.Attempt == attempt {
				got = l
				return true
			}
		}
		return false
	})
	return got
}

// TestZooKeeperBlipDisturbsNothing kills ZooKeeper 2 s into a 30 s task,
// keeps it down 3 s, and starts it again on the same port and data: the
// sessions (15 s) survive. A second task (5 s) started with it ends while
// ZooKeeper is down. The workers keep the tasks running (before, they
// killed them 2.2 s after the loss and they ran again); the leader steps
// down while it cannot prove its term and a master leads again; the short
// task's result, held by its worker, reaches it. The ledger the tasks write
// shows one start and one end each, from one process; the DB one attempt
// each, succeeded.
func TestZooKeeperBlipDisturbsNothing(t *testing.T) {
	const session = 15 * time.Second
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: session})
	ledger := filepath.Join(t.TempDir(), "ledger")
	c.Apply(t, spec.Workflow{Name: "nightly", Tasks: []spec.Task{
		sleepLedgerTask(ledger, "long", 30*time.Second),
		sleepLedgerTask(ledger, "short", 5*time.Second),
	}})
	id := c.Run(t, "nightly")
	start := waitLedger(t, c, ledger, "start", 1)
	c.Eventually(t, finishWithin, "2 s of the task", func() bool { return time.Since(start.At) > 2*time.Second })

	down := time.Now()
	c.ZK.Servers[0].Stop()
	<-time.After(3 * time.Second) // the outage itself
	if err := c.ZK.Servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("ZooKeeper down for %v (kill, 3 s, start until serving)", time.Since(down).Round(time.Millisecond))

	inst := c.WaitFinished(t, id, finishWithin)
	if inst.State != model.WorkflowSucceeded {
		t.Fatalf("instance %s, want succeeded", inst.State)
	}
	runs := map[int][]ledgerLine{} // by pid
	for _, l := range readLedger(t, ledger) {
		runs[l.PID] = append(runs[l.PID], l)
	}
	if len(runs) != 2 {
		t.Fatalf("ledger: %d runs, want 2 (one per task): %+v", len(runs), runs)
	}
	for pid, ls := range runs {
		if len(ls) != 2 || ls[0].What != "start" || ls[1].What != "end" || ls[0].Attempt != 1 {
			t.Fatalf("ledger of pid %d: %+v, want one start and one end of attempt 1", pid, ls)
		}
		t.Logf("a run of %v", ls[1].At.Sub(ls[0].At).Round(time.Millisecond))
	}
	for _, name := range []string{"long", "short"} {
		rows := c.Tasks(t, id)[name]
		if len(rows) != 1 || rows[0].State != model.TaskSucceeded {
			t.Fatalf("attempts of %s: %+v, want one, succeeded", name, rows)
		}
	}
	assertAllRunning(t, c)
	if err := c.WaitReady(failoverWithin); err != nil {
		t.Fatal(err)
	}
	c.AssertNoStuckRows(t)
}

// TestZooKeeperPartitionPastSessionFailsOver cuts the worker running a task
// off from ZooKeeper (a black hole: no resets) for longer than its 2 s
// session, while masters and the other worker keep theirs. The server
// expires the worker's session, the leader fails the task over to the
// other worker; the cut-off worker took its session as expired first and
// killed the task: in the ledger, the old run's last line comes before the
// new run's start, and the old run has no end.
func TestZooKeeperPartitionPastSessionFailsOver(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 2, SessionTimeout: sessionTimeout})
	proxies := map[string]*zktest.Proxy{}
	for _, w := range c.Workers {
		p := zktest.NewProxy(t, c.ZK.Addr())
		proxies[w.Addr] = p
		w.AddArgs("--zk", p.Addr())
		if err := w.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitReady(failoverWithin); err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(t.TempDir(), "ledger")
	c.Apply(t, spec.Workflow{Name: "cut", Tasks: []spec.Task{ledgerTask(ledger, "long", 40)}})
	id := c.Run(t, "cut")
	waitLedger(t, c, ledger, "tick", 1)
	first := taskRow(t, c, id, "long", 1)
	proxy := proxies[first.Host]
	if proxy == nil {
		t.Fatalf("long runs on %q, not one of the workers", first.Host)
	}
	cut := time.Now()
	proxy.Partition()
	again := waitLedger(t, c, ledger, "start", 2)
	t.Logf("the new attempt started %v after the cut", again.At.Sub(cut).Round(time.Millisecond))
	proxy.Heal()

	c.WaitFinished(t, id, finishWithin)
	var last ledgerLine
	for _, l := range readLedger(t, ledger) {
		if l.Attempt != 1 {
			continue
		}
		if l.What == "end" {
			t.Fatal("the old run ended: it was not killed")
		}
		last = l
	}
	if !last.At.Before(again.At) {
		t.Fatalf("the old run was alive at %v, after the new one started at %v", last.At, again.At)
	}
	t.Logf("the old run's last sign of life came %v before the new run started",
		again.At.Sub(last.At).Round(time.Millisecond))
	rows := c.Tasks(t, id)["long"]
	if len(rows) != 2 || rows[0].State != model.TaskNeedFaultTolerance || rows[1].State != model.TaskSucceeded {
		t.Fatalf("attempts of long: %+v, want need_fault_tolerance then succeeded", rows)
	}
	c.AssertNoStuckRows(t)
}
