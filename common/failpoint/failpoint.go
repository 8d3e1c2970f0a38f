// Package failpoint lets crash tests stop a process at a named point in the
// middle of dispatch, to prove recovery from each one. BELUGA_FAILPOINT
// names the point ("name" or "name@N" to fire on the N-th hit); when it is
// reached the process kills itself with SIGKILL, exactly as kill -9 would.
// Unset (production), Hit is one load of a nil pointer.
package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// The crash points of docs/architecture.md "Crash points", in dispatch order, and of the cron
// scheduler.
const (
	// BeforeRecordDispatch: a worker is chosen, nothing written yet.
	BeforeRecordDispatch = "before-record-dispatch"
	// BeforeSendDispatch: the choice is written, nothing sent.
	BeforeSendDispatch = "before-send-dispatch"
	// BeforePersistAck: the worker's ack arrived, not yet persisted.
	BeforePersistAck = "before-persist-ack"
	// BeforeDBAckResult: a result is persisted, not yet DB-acked.
	BeforeDBAckResult = "before-dback-result"

	// BeforeFireSchedule: a schedule's fire is planned, nothing written.
	BeforeFireSchedule = "before-fire-schedule"
	// AfterFireSchedule: its runs and next fire time are written, the
	// command consumer not yet woken.
	AfterFireSchedule = "after-fire-schedule"
)

type point struct {
	name string
	at   int64
	hits atomic.Int64
}

var armed = parse(os.Getenv("BELUGA_FAILPOINT"))

func parse(v string) *point {
	if v == "" {
		return nil
	}
	name, n, found := strings.Cut(v, "@")
	p := &point{name: name, at: 1}
	if found {
		at, err := strconv.ParseInt(n, 10, 64)
		if err != nil || at < 1 {
			fmt.Fprintf(os.Stderr, "BELUGA_FAILPOINT=%q: want name or name@N with N >= 1; ignored\n", v)
			return nil
		}
		p.at = at
	}
	return p
}

// Hit kills the process when name is the armed point and this is the
// armed hit.
func Hit(name string) {
	p := armed
	if p == nil || p.name != name {
		return
	}
	if p.hits.Add(1) == p.at {
		fmt.Fprintf(os.Stderr, "failpoint %s: killing the process\n", name)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns
	}
}
