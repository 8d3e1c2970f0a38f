package executor

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/remote/message"
)

func TestDropAllKillsAndForgetsEverything(t *testing.T) {
	t.Parallel()
	// KillGrace is far beyond the test: only an immediate SIGKILL ends the
	// SIGTERM-proof child in time.
	b := setup(t, Config{Slots: 2, KillGrace: time.Hour, ResendInterval: 20 * time.Millisecond})
	b.master.holdIf(func(_ string, id int64, k message.AckKind) bool {
		return (id == 4 && k == message.KindResult) || (id == 3 && k == message.KindAck)
	})
	b.mustDispatch(t, dispatch(4, "true")) // ends; its result is never DB-acked
	b.waitResult(t, 4)
	pgid, pids := startGroup(t, b, dispatch(1, "(trap '' TERM; sleep 100) & sleep 100; wait"))
	b.mustDispatch(t, dispatch(5, "sleep 100"))
	b.waitRunning(t, 5)
	b.mustDispatch(t, dispatch(2, "touch started"))
	wait.Until(t, 5*time.Second, "task 2 queued for a slot", func() bool { return b.queuedForSlot(2) })
	b.mustDispatch(t, dispatch(3, "touch started")) // its ack is never DB-acked

	if n := b.e.DropAll("test"); n != 4 {
		t.Fatalf("DropAll = %d, want 4 (running, running, queued, awaiting admission)", n)
	}
	wait.Until(t, 3*time.Second, "the dropped group to be gone", func() bool { return procfs.Gone(pgid, pids) })
	wait.Until(t, 3*time.Second, "slots freed", func() bool {
		s := b.e.Stats()
		return s.Running == 0 && s.Queued == 0
	})
	for _, id := range []int64{1, 2, 3, 5} {
		if _, ok := b.master.result(id); ok {
			t.Fatalf("dropped task %d reported a result", id)
		}
	}
	b.notStarted(t, 2)
	b.notStarted(t, 3)
	// The ended task's true result keeps going out until DB-acked.
	before := b.master.count(masterAddr, 4, message.TypeResult)
	wait.Until(t, 5*time.Second, "task 4's result re-sent", func() bool {
		return b.master.count(masterAddr, 4, message.TypeResult) > before+1
	})
	if n := b.e.DropAll("again"); n != 0 {
		t.Fatalf("second DropAll = %d, want 0", n)
	}
	// The master failed the dropped tasks over; one comes back here: a new
	// assignment, run once its ack is persisted.
	b.mustDispatch(t, dispatch(2, "true"))
	b.waitResult(t, 2)
}

// fakeGuard records Add and Remove calls.
type fakeGuard struct {
	mu  sync.Mutex
	ops []int // +pgid, -pgid
}

func (g *fakeGuard) Add(pgid int)    { g.mu.Lock(); g.ops = append(g.ops, pgid); g.mu.Unlock() }
func (g *fakeGuard) Remove(pgid int) { g.mu.Lock(); g.ops = append(g.ops, -pgid); g.mu.Unlock() }

func (g *fakeGuard) seen() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.ops)
}

func TestGuardToldOfEveryGroup(t *testing.T) {
	t.Parallel()
	g := &fakeGuard{}
	b := setup(t, Config{Guard: g, KillGrace: 100 * time.Millisecond})
	b.mustDispatch(t, dispatch(1, "true"))
	b.waitResult(t, 1)
	run := b.waitRunning(t, 1)
	// Remove comes before the result is produced: no wait needed.
	if ops := g.seen(); !slices.Equal(ops, []int{run.PID, -run.PID}) {
		t.Fatalf("guard ops = %v, want [%d %d]", ops, run.PID, -run.PID)
	}
	pgid, pids := startGroup(t, b, dispatch(2, "(trap '' TERM; sleep 100) & sleep 100; wait"))
	b.e.Kill(2)
	b.waitResult(t, 2)
	// Removed only once the survivor got its SIGKILL: dead or dying now.
	if ops := g.seen(); !slices.Equal(ops[2:], []int{pgid, -pgid}) {
		t.Fatalf("guard ops = %v, want [... %d %d]", ops, pgid, -pgid)
	}
	wait.Until(t, 3*time.Second, "the killed group to be gone", func() bool { return procfs.Gone(pgid, pids) })
}
