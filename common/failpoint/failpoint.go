// Package failpoint lets crash tests stop a process at a named point in the
// middle of dispatch or of a leader change, to prove recovery from each
// one. BELUGA_FAILPOINT names the point and what happens there:
//
//	name[@N][:action]
//
// @N fires on the N-th hit (default the first). The action is kill (the
// default: the process kills itself with SIGKILL, exactly as kill -9
// would), stop (it freezes itself with SIGSTOP, as a long GC pause would,
// until the test sends SIGCONT) or sleep=D (only the goroutine at the point
// waits for the duration D; the rest of the process goes on). Unset
// (production), Hit is one load of a nil pointer.
package failpoint

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The crash points of docs/architecture.md "Crash points", in dispatch order,
// of the cron scheduler, and of a leader change.
const (
	// BeforeRecordDispatch: a worker is chosen, nothing written yet.
	BeforeRecordDispatch = "before-record-dispatch"
	// BeforeSendDispatch: the choice is written, nothing sent.
	BeforeSendDispatch = "before-send-dispatch"
	// BeforePersistAck: the worker's ack arrived, not yet persisted.
	BeforePersistAck = "before-persist-ack"
	// BeforeDBAckResult: a result is persisted, not yet DB-acked.
	BeforeDBAckResult = "before-dback-result"

	// The points between a task's failure and its next attempt (retries),
	// besides BeforeDBAckResult and the dispatch points of the retry.
	//
	// BeforePersistResult: a result arrived, not yet persisted.
	BeforePersistResult = "before-persist-result"
	// BeforeWriteRetry: a failure is persisted and its runner decided the
	// next attempt, which is not yet written.
	BeforeWriteRetry = "before-write-retry"
	// BeforeSubmitRetry: the next attempt waited out its retry interval as
	// delayed; it is not yet submitted.
	BeforeSubmitRetry = "before-submit-retry"

	// BeforeFireSchedule: a schedule's fire is planned, nothing written.
	BeforeFireSchedule = "before-fire-schedule"
	// AfterFireSchedule: its runs and next fire time are written, the
	// command consumer not yet woken.
	AfterFireSchedule = "after-fire-schedule"

	// BeforeEndUnstarted: a stop or pause of a run that never started
	// (no runner holds it) is claimed; the run is not yet ended.
	BeforeEndUnstarted = "before-end-unstarted"

	// BeforeBeginTerm: the election is won, the term not yet recorded in
	// the DB (the fence write).
	BeforeBeginTerm = "before-begin-term"
	// BeforeWorkerWatch: recovery has started the runners of the adopted
	// instances; the worker watch has not started yet.
	BeforeWorkerWatch = "before-worker-watch"

	// BeforeStartChild: a sub_workflow attempt is ready, no child written.
	BeforeStartChild = "before-start-child"
	// AfterStartChild: the child run and both links are written, its start
	// command not yet claimed.
	AfterStartChild = "after-start-child"
	// BeforeEndParentTask: a child run ended; its parent's attempt is not
	// yet ended.
	BeforeEndParentTask = "before-end-parent-task"

	// AfterTriggerDeliver (in an API server): a webhook delivery and its
	// run are committed, the sender not yet answered.
	AfterTriggerDeliver = "after-trigger-deliver"

	// BeforeDatasetFire: a produced partition is read for evaluation,
	// nothing written.
	BeforeDatasetFire = "before-dataset-fire"
	// AfterDatasetFire: its consumers' runs and ledger rows are committed
	// and the event marked evaluated; the command consumer not yet woken.
	AfterDatasetFire = "after-dataset-fire"
)

type action int

const (
	kill action = iota
	stop
	sleep
)

type point struct {
	name  string
	at    int64
	act   action
	sleep time.Duration
	hits  atomic.Int64
}

var armed = parse(os.Getenv("BELUGA_FAILPOINT"))

func parse(v string) *point {
	p, err := parsePoint(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "BELUGA_FAILPOINT=%q: %v; ignored\n", v, err)
		return nil
	}
	return p
}

func parsePoint(v string) (*point, error) {
	if v == "" {
		return nil, nil
	}
	spec, act, hasAct := strings.Cut(v, ":")
	name, n, found := strings.Cut(spec, "@")
	if name == "" {
		return nil, fmt.Errorf("no point name")
	}
	p := &point{name: name, at: 1}
	if found {
		at, err := strconv.ParseInt(n, 10, 64)
		if err != nil || at < 1 {
			return nil, fmt.Errorf("want name@N with N >= 1, got @%q", n)
		}
		p.at = at
	}
	switch {
	case !hasAct || act == "kill":
	case act == "stop":
		p.act = stop
	case strings.HasPrefix(act, "sleep="):
		d, err := time.ParseDuration(strings.TrimPrefix(act, "sleep="))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("want sleep=D with a positive duration D, got %q", act)
		}
		p.act, p.sleep = sleep, d
	default:
		return nil, fmt.Errorf("unknown action %q (want kill, stop or sleep=D)", act)
	}
	return p, nil
}

// Hit acts when name is the armed point and this is the armed hit: it
// kills or freezes the process, or makes the caller wait.
func Hit(name string) {
	p := armed
	if p == nil || p.name != name {
		return
	}
	if p.hits.Add(1) != p.at {
		return
	}
	switch p.act {
	case stop:
		// The stop reaches the threads one by one: this goroutine waits for
		// the SIGCONT so that it cannot go on before the whole process froze.
		cont := make(chan os.Signal, 1)
		signal.Notify(cont, syscall.SIGCONT)
		fmt.Fprintf(os.Stderr, "failpoint %s: stopping the process\n", name)
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		<-cont
		signal.Stop(cont)
		fmt.Fprintf(os.Stderr, "failpoint %s: continued\n", name)
	case sleep:
		fmt.Fprintf(os.Stderr, "failpoint %s: sleeping %v\n", name, p.sleep)
		time.Sleep(p.sleep)
		fmt.Fprintf(os.Stderr, "failpoint %s: woke\n", name)
	default:
		fmt.Fprintf(os.Stderr, "failpoint %s: killing the process\n", name)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns
	}
}
